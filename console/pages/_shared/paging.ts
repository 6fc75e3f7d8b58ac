// Page sizes offered by every table (spec 001 §9), remembered per table under page-size:<table>.
import { PAGE_SIZE_OPTIONS, DEFAULT_PAGE_SIZE } from "../../../server/catalogue/index.ts";
import { getPageSize, setPageSize } from "../../lib/storage.ts";
import { useState } from "react";

export function usePageSize(table: string): [number, (n: number) => void] {
  const [size, setSize] = useState(() => getPageSize(table, DEFAULT_PAGE_SIZE));
  return [
    size,
    (n: number) => {
      setPageSize(n, table);
      setSize(n);
    },
  ];
}

export const sizeOptions = [...PAGE_SIZE_OPTIONS];

/** List replies are {items,total} (new-api) or a bare array (one-api); both become {items,total}. */
export function asPage<T>(data: unknown): { items: T[]; total: number } {
  if (Array.isArray(data)) return { items: data as T[], total: data.length };
  const d = (data ?? {}) as { items?: T[]; total?: number };
  return { items: Array.isArray(d.items) ? d.items : [], total: Number(d.total ?? 0) };
}
