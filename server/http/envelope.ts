/** The management reply shape: {success, message, data}. */
export interface Envelope<T> {
  success: boolean;
  message: string;
  data?: T;
}

export function ok<T>(data?: T, message = ""): Envelope<T> {
  return data === undefined ? { success: true, message } : { success: true, message, data };
}

/** Paging from ?p= (0- or 1-based as the console sends it) and ?page_size=/size=. */
export function paging(q: Record<string, string | undefined>, defaultSize = 10, max = 100) {
  const rawPage = Number(q.p ?? 1);
  const page = Number.isFinite(rawPage) && rawPage >= 1 ? Math.floor(rawPage) : 1;
  const rawSize = Number(q.page_size ?? q.size ?? defaultSize);
  const size = Number.isFinite(rawSize) && rawSize >= 1 ? Math.min(Math.floor(rawSize), max) : defaultSize;
  return { page, size, offset: (page - 1) * size };
}
