// What every mock upstream records about the calls it received, for assertions.
export interface Recorded {
  method: string;
  path: string;
  search: string;
  headers: Record<string, string>;
  body: any;
  raw: string;
}

export interface MockUpstream {
  url: string;
  requests: Recorded[];
  last(): Recorded;
  stop(): void;
}

export async function record(req: Request): Promise<Recorded> {
  const url = new URL(req.url);
  const raw = await req.text();
  let body: any = raw;
  try {
    body = raw ? JSON.parse(raw) : null;
  } catch {}
  const headers: Record<string, string> = {};
  req.headers.forEach((v, k) => (headers[k] = v));
  return { method: req.method, path: url.pathname, search: url.search, headers, body, raw };
}

export function serve(handler: (req: Request, rec: Recorded) => Response | Promise<Response>): MockUpstream {
  const requests: Recorded[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const rec = await record(req);
      requests.push(rec);
      return handler(req, rec);
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    last: () => requests[requests.length - 1]!,
    stop: () => server.stop(true),
  };
}

export function sseResponse(frames: string[], delayMs = 0): Response {
  const enc = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async start(c) {
      for (const f of frames) {
        c.enqueue(enc.encode(f));
        if (delayMs) await Bun.sleep(delayMs);
      }
      c.close();
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream" } });
}
