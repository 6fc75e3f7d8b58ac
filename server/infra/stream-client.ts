// The relay's streamed upstream calls go through this keep-alive HTTP/1.1 client over `Bun.connect` instead of
// `fetch()` (hot-path rule 9). Why: Bun's reader of a fetch() body allocates and zeroes a 256 KB chunk buffer for
// every stream before the first read, which under many concurrent streams is most of what the gateway allocates
// and brings full collections. Here the socket's own chunks become the body's chunks (each a fresh buffer), so a
// stream allocates what it carries. `streamFetch()` answers a real `Response` (status, headers, a body stream
// with backpressure), so everything downstream reads it as it read fetch()'s.
//
// It takes only what it does exactly like fetch(): http/https URLs with `redirect: "manual"`, a string or byte
// body, no proxy (a channel's proxy, or HTTP(S)_PROXY in the environment), no custom TLS; anything else, or
// UPSTREAM_STREAM_CLIENT=fetch, goes to fetch(). TLS verifies the certificate and host name as fetch() does
// (system CAs plus NODE_EXTRA_CA_CERTS; NODE_TLS_REJECT_UNAUTHORIZED=0 turns it off for both).
import { isIP } from "node:net";
import type { Socket } from "bun";

export interface StreamClientSettings {
  /** false: every call goes to fetch() (UPSTREAM_STREAM_CLIENT=fetch). */
  enabled: boolean;
  /** Protocols ("http:", "https:") that fetch() sends through a proxy from the environment. */
  proxiedProtocols: string[];
}

let settings: StreamClientSettings = { enabled: true, proxiedProtocols: [] };

/** Set once at start-up from the configuration. */
export function configureStreamClient(s: StreamClientSettings): void {
  settings = s;
}

/** An idle connection is closed after this long (or sooner when the server's Keep-Alive says so): servers close
 * theirs after 5 s (Node's default) to 60 s and more; reusing one they are closing costs a retry. */
const IDLE_MS = 4000;
/** At most this many idle connections are kept per origin; more are closed when they come back. */
const MAX_IDLE_PER_ORIGIN = 256;
/** A response head larger than this is refused. */
const MAX_HEAD_BYTES = 64 * 1024;
/** A kept connection closed within this long of a request sent on it, before any answer, is taken for one the
 * server was closing as it was reused, and the request is resent once on a new connection. */
const STALE_CLOSE_MS = 1000;
/** The body stream asks for more (resumes the socket) when fewer than this many chunks wait unread. */
const BODY_HIGH_WATER_CHUNKS = 16;
/** A request longer than this (in characters) is encoded into `scratch` and written from there (hot-path rule 7).
 * As one string it would be joined to its head, measured and encoded into a fresh buffer on every write, and
 * fresh megabytes cost their page faults on the event loop; encoding into kept memory is cheap. A shorter one
 * goes as one string, one write. */
const SCRATCH_FROM_CHARS = 16 * 1024;
/** Requests up to this many bytes reuse `scratch`; a larger one gets a buffer of its own. */
const SCRATCH_MAX_BYTES = 8 * 1024 * 1024;
let scratch = Buffer.allocUnsafe(0);

/**
 * A request body sent as its pieces, in order, never joined in memory: the relay writes the stream usage request
 * into a client's long JSON text this way. Joined, the text had to be flattened into a fresh string of its whole
 * length on the event loop (with a 200 KB conversation streamed at c=16, ~30 % of the gateway's main thread:
 * the copy and the collections it brought on); the pieces are slices of the client's text, which share its
 * memory. fetch() and anything else that takes a string gets toString().
 */
export class JoinedText {
  constructor(readonly parts: readonly string[]) {}
  get length(): number {
    let n = 0;
    for (const p of this.parts) n += p.length;
    return n;
  }
  byteLength(): number {
    let n = 0;
    for (const p of this.parts) n += Buffer.byteLength(p);
    return n;
  }
  toString(): string {
    return this.parts.join("");
  }
}

/** A request body as fetch() takes it: a JoinedText as the string it stands for. */
export function fetchBody<T>(body: T | JoinedText): T | string {
  return body instanceof JoinedText ? body.toString() : body;
}

/** `head` (latin1, as header bytes are) and the body's pieces (UTF-8) in one buffer, valid until the next call. */
function encodeRequest(head: string, parts: readonly string[], bodyBytes: number): Buffer {
  const size = head.length + bodyBytes;
  let out = scratch;
  if (size > out.length) {
    out = Buffer.allocUnsafe(
      size <= SCRATCH_MAX_BYTES ? Math.min(SCRATCH_MAX_BYTES, Math.max(size, 2 * out.length)) : size,
    );
    if (out.length <= SCRATCH_MAX_BYTES) scratch = out;
  }
  let at = out.write(head, 0, "latin1");
  for (const p of parts) at += out.write(p, at, "utf8");
  return out.subarray(0, at);
}

/** fetch() for a streamed upstream call: through the socket client when it can take the request, else fetch(). */
export function streamFetch(url: string, init: RequestInit): Promise<Response> {
  if (!streamsItself(init)) return fetch(url, textBody(init));
  const body: unknown = init.body;
  if (
    body != null
    && typeof body !== "string"
    && !(body instanceof JoinedText)
    && !(body instanceof Uint8Array)
    && !(body instanceof ArrayBuffer)
  )
    return fetch(url, init);
  const target = targetOf(url);
  if (!target || settings.proxiedProtocols.includes(target.protocol)) return fetch(url, textBody(init));
  let head: string;
  try {
    head = requestHead(target, init, body);
  } catch (e) {
    return Promise.reject(e);
  }
  return new Promise<Response>((resolve, reject) =>
    new Exchange(target.pool, head, body as RequestBody, init.signal ?? null, resolve, reject).start(),
  );
}

/** Whether the client takes this request itself rather than handing it to fetch(). */
function streamsItself(init: RequestInit): boolean {
  return (
    settings.enabled
    && init.redirect === "manual"
    && init.method?.toUpperCase() !== "HEAD"
    && !(init as any).proxy
    && !(init as any).tls
    && !(init as any).unix
  );
}

/** `init` for fetch(), which takes a JoinedText as the string it stands for. */
function textBody(init: RequestInit): RequestInit {
  return (init.body as unknown) instanceof JoinedText ? { ...init, body: fetchBody(init.body) } : init;
}

type RequestBody = string | JoinedText | Uint8Array | ArrayBuffer | null | undefined;

/** Where a URL's requests go: its origin's connections, the request line's target and the Host header. */
interface Target {
  pool: Pool;
  protocol: string;
  path: string;
  host: string;
}
/** Targets by URL: a channel's few upstream URLs repeat on every call, and parsing a URL is not free (hot-path rule 5). */
const targets = new Map<string, Target | null>();
const MAX_TARGETS = 1024;

function targetOf(url: string): Target | null {
  let t = targets.get(url);
  if (t !== undefined) return t;
  t = null;
  try {
    const u = new URL(url);
    if ((u.protocol === "http:" || u.protocol === "https:") && !u.username && !u.password)
      t = { pool: poolFor(u), protocol: u.protocol, path: u.pathname + u.search, host: u.host };
  } catch {}
  if (targets.size >= MAX_TARGETS) targets.clear();
  targets.set(url, t);
  return t;
}

/** A header name (an HTTP token) and a value without CR, LF or NUL: nothing can be smuggled into the head. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\r\n\0]/;

function requestHead(target: Target, init: RequestInit, body: unknown): string {
  const method = (init.method ?? "GET").toUpperCase();
  if (!TOKEN.test(method)) throw new TypeError(`invalid method ${method}`);
  let head = `${method} ${target.path} HTTP/1.1\r\n`;
  let host = false,
    accept = false,
    agent = false,
    encoding = false;
  const add = (name: string, value: string) => {
    if (!TOKEN.test(name) || BAD_VALUE.test(value)) throw new TypeError(`invalid header ${JSON.stringify(name)}`);
    const lower = name.toLowerCase();
    if (lower === "content-length" || lower === "transfer-encoding" || lower === "connection") return;
    if (lower === "host") host = true;
    else if (lower === "accept") accept = true;
    else if (lower === "user-agent") agent = true;
    else if (lower === "accept-encoding") encoding = true;
    head += `${name}: ${value.trim()}\r\n`;
  };
  const h = init.headers;
  if (h instanceof Headers || Array.isArray(h))
    for (const [name, value] of h as Iterable<[string, string]>) add(name, String(value));
  else if (h) for (const name in h) add(name, String((h as Record<string, string>)[name]));
  if (!host) head += `host: ${target.host}\r\n`;
  if (!accept) head += "accept: */*\r\n";
  if (!agent) head += USER_AGENT;
  // An uncompressed stream: chunks reach the client as they come; a server that compresses anyway is decoded.
  if (!encoding) head += "accept-encoding: identity\r\n";
  const length =
    body == null
      ? 0
      : typeof body === "string"
        ? Buffer.byteLength(body)
        : body instanceof JoinedText
          ? body.byteLength()
          : (body as Uint8Array | ArrayBuffer).byteLength;
  if (body != null || !(method === "GET" || method === "HEAD")) head += `content-length: ${length}\r\n`;
  return head + "connection: keep-alive\r\n\r\n";
}

const USER_AGENT = `user-agent: Bun/${Bun.version}\r\n`;

/** The connections to one origin. */
class Pool {
  idle: Conn[] = [];
  constructor(
    readonly host: string,
    readonly port: number,
    readonly tls: boolean,
    readonly serverName: string | undefined,
  ) {}

  /** An idle connection that is still open, if any (the most recently used: the least likely to be closing). */
  take(): Conn | undefined {
    for (;;) {
      const c = this.idle.pop();
      if (!c) return undefined;
      if (c.closed) continue;
      if (c.idleUntil <= Date.now()) {
        c.destroy();
        continue;
      }
      c.sock!.ref();
      return c;
    }
  }

  release(c: Conn, keepAliveMs: number): void {
    if (c.closed) return;
    if (this.idle.length >= MAX_IDLE_PER_ORIGIN) return c.destroy();
    c.idleUntil = Date.now() + keepAliveMs;
    c.sock!.unref();
    this.idle.push(c);
    sweepSoon();
  }

  forget(c: Conn): void {
    const i = this.idle.indexOf(c);
    if (i >= 0) this.idle.splice(i, 1);
  }

  sweep(now: number): void {
    const keep: Conn[] = [];
    for (const c of this.idle) {
      if (c.closed) continue;
      if (c.idleUntil <= now) c.destroy();
      else keep.push(c);
    }
    this.idle = keep;
  }
}

const pools = new Map<string, Pool>();

function poolFor(u: URL): Pool {
  const key = u.protocol + u.host;
  let pool = pools.get(key);
  if (!pool) {
    const tls = u.protocol === "https:";
    const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
    const port = u.port ? Number(u.port) : tls ? 443 : 80;
    pool = new Pool(host, port, tls, tls && !isIP(host) ? host : undefined);
    pools.set(key, pool);
  }
  return pool;
}

let sweeper: ReturnType<typeof setInterval> | null = null;

function sweepSoon(): void {
  if (sweeper) return;
  sweeper = setInterval(() => {
    const now = Date.now();
    let idle = 0;
    for (const pool of pools.values()) {
      pool.sweep(now);
      idle += pool.idle.length;
    }
    if (idle === 0 && sweeper) {
      clearInterval(sweeper);
      sweeper = null;
    }
  }, 1000);
  sweeper.unref?.();
}

/** Closes every idle connection (tests, shutdown). */
export function closeIdleStreamConnections(): void {
  for (const pool of pools.values()) {
    for (const c of pool.idle) c.destroy();
    pool.idle = [];
  }
}

/** How many idle connections the client keeps (tests). */
export function idleStreamConnections(): number {
  let n = 0;
  for (const pool of pools.values()) n += pool.idle.filter((c) => !c.closed).length;
  return n;
}

/** One socket; carries one exchange at a time. */
class Conn {
  sock: Socket<Conn> | null = null;
  exchange: Exchange | null = null;
  closed = false;
  /** Has carried an exchange before: a close before any answer may be the server closing it while idle. */
  used = false;
  idleUntil = 0;
  /** Request bytes the socket did not take yet (written on drain). */
  unsent: Buffer | null = null;
  constructor(readonly pool: Pool) {}

  send(head: string, body: RequestBody): void {
    const sock = this.sock!;
    if (body instanceof JoinedText || (typeof body === "string" && body.length > SCRATCH_FROM_CHARS)) {
      const bytes =
        typeof body === "string"
          ? encodeRequest(head, [body], Buffer.byteLength(body))
          : encodeRequest(head, body.parts, body.byteLength());
      const written = sock.write(bytes);
      // The rest is copied: the scratch buffer is the next request's.
      if (written < bytes.length) this.unsent = Buffer.from(bytes.subarray(Math.max(0, written)));
      return;
    }
    if (body == null || typeof body === "string") {
      const text = body ? head + body : head;
      const written = sock.write(text);
      if (written < Buffer.byteLength(text)) this.unsent = Buffer.from(text).subarray(Math.max(0, written));
      return;
    }
    const bytes = Buffer.concat([
      Buffer.from(head, "latin1"),
      body instanceof ArrayBuffer ? new Uint8Array(body) : body,
    ]);
    const written = sock.write(bytes);
    if (written < bytes.length) this.unsent = bytes.subarray(Math.max(0, written));
  }

  drain(): void {
    if (!this.unsent) return;
    const written = this.sock!.write(this.unsent);
    this.unsent = written >= this.unsent.length ? null : this.unsent.subarray(Math.max(0, written));
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.pool.forget(this);
    this.sock?.terminate();
  }
}

const HANDLERS = {
  binaryType: "buffer" as const,
  data(sock: Socket<Conn>, data: Buffer) {
    const ex = sock.data.exchange;
    if (ex) ex.onData(data);
    // Bytes from an idle connection: nothing asked for them; the connection cannot be trusted any more.
    else sock.data.destroy();
  },
  drain(sock: Socket<Conn>) {
    sock.data.drain();
  },
  close(sock: Socket<Conn>, error?: Error) {
    const c = sock.data;
    c.closed = true;
    c.pool.forget(c);
    c.exchange?.onClose(error);
  },
  error(_sock: Socket<Conn>, _error: Error) {
    // The close that follows reports it to the exchange.
  },
  connectError(sock: Socket<Conn>, error: Error) {
    sock.data.closed = true;
    sock.data.exchange?.onClose(error);
  },
};

// biome-ignore lint/suspicious/noConstEnum: used only in this file, so its members inline as numbers.
const enum Read {
  Head,
  SizeLine,
  Chunk,
  ChunkEnd,
  Trailers,
  Length,
  UntilClose,
  Done,
}
const NULL_BODY = new Set([204, 205, 304]);
const CR = 13;
const LF = 10;

// The socket's chunks are read without making views of them or searching them for strings (hot-path rule 9):
// `indexOf("\r\n")` makes a buffer of its needle on every call, and a `subarray()` view of each chunk's payload
// keeps the socket's buffer alive, which together made every young collection several times longer. A byte
// search (`indexOf(13)`) allocates nothing, and a payload is copied into a buffer of its own.

/** Where the next CRLF starts at or after `from`, or -1. */
function lineEnd(b: Buffer, from: number): number {
  for (let at = b.indexOf(CR, from); at >= 0 && at + 1 < b.length; at = b.indexOf(CR, at + 1))
    if (b[at + 1] === LF) return at;
  return -1;
}

/** Where the head's blank line (CRLF CRLF) starts at or after `from`, or -1. */
function headEnd(b: Buffer, from: number): number {
  for (let at = lineEnd(b, from); at >= 0; at = lineEnd(b, at + 2)) if (b[at + 2] === CR && b[at + 3] === LF) return at;
  return -1;
}

/** A chunk-size line's size (hex digits, then optional extensions after ";"), or -1 when it is malformed. */
function chunkSize(b: Buffer, from: number, end: number): number {
  let i = from;
  while (i < end && (b[i] === 32 || b[i] === 9)) i++;
  let size = 0;
  let digits = 0;
  let significant = 0;
  for (; i < end; i++, digits++) {
    const c = b[i];
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
    if (d < 0) break;
    if (size > 0 || d > 0) significant++;
    size = size * 16 + d;
  }
  // 14 significant hex digits pass Number.MAX_SAFE_INTEGER; what follows the digits must be whitespace or extensions.
  if (digits === 0 || significant > 13) return -1;
  while (i < end && (b[i] === 32 || b[i] === 9)) i++;
  return i === end || b[i] === 59 ? size : -1;
}

/** `b[from, from + n)` as a buffer of its own (see above: no view into the socket's chunk). */
function copyOf(b: Buffer, from: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  b.copy(out, 0, from, from + n);
  return out;
}

/** One request and its answer. */
class Exchange {
  private conn: Conn | null = null;
  private retried = false;
  /** When the request went out on a kept connection (for the resend rule). */
  private sentOnKeptAt = -1;
  private answered = false;
  private finished = false;
  private ctl: ReadableStreamDefaultController<Uint8Array> | null = null;
  private read = Read.Head;
  private left = 0;
  private held: Uint8Array | null = null;
  private reusable = false;
  private keepAliveMs = IDLE_MS;
  private paused = false;
  private received = false;

  constructor(
    private pool: Pool,
    private head: string,
    private body: RequestBody,
    private signal: AbortSignal | null,
    private resolve: (r: Response) => void,
    private reject: (e: unknown) => void,
  ) {}

  start(): void {
    if (this.signal?.aborted) return this.reject(this.signal.reason);
    this.signal?.addEventListener("abort", this);
    const idle = this.pool.take();
    if (idle) this.use(idle);
    else this.connect();
  }

  private connect(): void {
    const conn = new Conn(this.pool);
    conn.exchange = this;
    this.conn = conn;
    const p = this.pool;
    Bun.connect<Conn>({
      hostname: p.host,
      port: p.port,
      data: conn,
      socket: HANDLERS as any,
      ...(p.tls ? { tls: p.serverName ? { serverName: p.serverName } : true } : {}),
    }).then(
      (sock) => {
        conn.sock = sock;
        if (this.conn !== conn || this.finished) return sock.terminate();
        // A TLS connection whose certificate did not verify closes before it opens.
        if (conn.closed) return this.onClose(undefined);
        conn.send(this.head, this.body);
      },
      (e) => {
        conn.closed = true;
        if (this.conn === conn) this.onClose(e);
      },
    );
  }

  private use(conn: Conn): void {
    conn.exchange = this;
    this.conn = conn;
    this.sentOnKeptAt = performance.now();
    conn.send(this.head, this.body);
  }

  /** The signal fired (the client went away, or the timeout). */
  handleEvent(): void {
    this.fail(this.signal!.reason, true);
  }

  onData(data: Buffer): void {
    this.received = true;
    const b = this.held ? Buffer.concat([this.held, data]) : data;
    this.held = null;
    let i = 0;
    try {
      while (!this.finished) {
        if (this.read === Read.Head) {
          const end = headEnd(b, i);
          if (end < 0) {
            if (b.length - i > MAX_HEAD_BYTES) throw new Error("the upstream's answer head is too large");
            break;
          }
          i = this.onHead(b.toString("latin1", i, end), end + 4);
          if (i < 0) return;
        } else if (this.read === Read.SizeLine || this.read === Read.ChunkEnd || this.read === Read.Trailers) {
          const end = lineEnd(b, i);
          if (end < 0) {
            if (b.length - i > MAX_HEAD_BYTES) throw new Error("the upstream's chunk framing is malformed");
            break;
          }
          const empty = end === i;
          const at = i;
          i = end + 2;
          if (this.read === Read.SizeLine) {
            const size = chunkSize(b, at, end);
            if (size < 0) throw new Error("the upstream's chunk framing is malformed");
            this.left = size;
            this.read = size === 0 ? Read.Trailers : Read.Chunk;
          } else if (this.read === Read.ChunkEnd) {
            if (!empty) throw new Error("the upstream's chunk framing is malformed");
            this.read = Read.SizeLine;
          } else if (empty) {
            this.endBody();
            break;
          }
        } else if (this.read === Read.Chunk || this.read === Read.Length || this.read === Read.UntilClose) {
          if (i >= b.length) break;
          const n = this.read === Read.UntilClose ? b.length - i : Math.min(this.left, b.length - i);
          this.deliver(i === 0 && n === b.length ? b : copyOf(b, i, n));
          i += n;
          if (this.read === Read.UntilClose) break;
          this.left -= n;
          if (this.left > 0) break;
          if (this.read === Read.Length) {
            this.endBody();
            break;
          }
          this.read = Read.ChunkEnd;
        } else break;
      }
    } catch (e) {
      return this.fail(e, false);
    }
    if (this.finished) {
      // Bytes past the end of the answer: the connection is out of step; it is not reused.
      if (i < b.length && this.conn) this.conn.destroy();
      return;
    }
    if (i < b.length) this.held = i === 0 ? b : copyOf(b, i, b.length - i);
  }

  /** Reads a response head; returns where the body starts, or -1 when the exchange ended. */
  private onHead(text: string, bodyAt: number): number {
    const lines = text.split("\r\n");
    const status = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(lines[0]);
    if (!status) throw new Error("the upstream did not answer in HTTP/1.1");
    const code = Number(status[2]);
    // Interim answers (100 Continue, 103 Early Hints) come before the real one.
    if (code >= 100 && code < 200 && code !== 101) return bodyAt;
    if (code < 200 || code > 599) throw new Error(`the upstream answered with status ${code}`);
    const headers = new Headers();
    for (let k = 1; k < lines.length; k++) {
      const line = lines[k];
      const colon = line.indexOf(":");
      if (colon <= 0) continue;
      headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    const connection = (headers.get("connection") ?? "").toLowerCase();
    this.reusable = status[1] === "1" && !connection.includes("close");
    const keepAlive = /timeout=(\d+)/i.exec(headers.get("keep-alive") ?? "");
    if (keepAlive) this.keepAliveMs = Math.min(IDLE_MS, Math.max(0, Number(keepAlive[1]) * 1000 - 1000));
    const chunked = (headers.get("transfer-encoding") ?? "").toLowerCase().includes("chunked");
    const length = headers.get("content-length");
    if (chunked) this.read = Read.SizeLine;
    else if (length !== null) {
      if (!/^\d+$/.test(length.trim())) throw new Error("the upstream's content-length is malformed");
      this.left = Number(length);
      this.read = Read.Length;
    } else {
      this.read = Read.UntilClose;
      this.reusable = false;
    }
    const init = { status: code, statusText: status[3] ?? "", headers };
    if (NULL_BODY.has(code) || (this.read === Read.Length && this.left === 0)) {
      this.answered = true;
      this.resolve(new Response(NULL_BODY.has(code) ? null : "", init));
      this.endBody();
      return -1;
    }
    const stream = new ReadableStream<Uint8Array>(
      { start: (c) => void (this.ctl = c), pull: () => this.resume(), cancel: () => this.cancel() },
      { highWaterMark: BODY_HIGH_WATER_CHUNKS },
    );
    const encoding = (headers.get("content-encoding") ?? "identity").trim().toLowerCase();
    const format =
      encoding === "gzip" || encoding === "x-gzip"
        ? "gzip"
        : encoding === "deflate"
          ? "deflate"
          : encoding === "br"
            ? "brotli"
            : encoding === "zstd"
              ? "zstd"
              : encoding === "identity"
                ? null
                : undefined;
    if (format === undefined) throw new Error(`the upstream's content-encoding ${encoding} is not supported`);
    this.answered = true;
    this.resolve(
      new Response(format ? stream.pipeThrough(new DecompressionStream(format as any) as any) : stream, init),
    );
    return bodyAt;
  }

  private deliver(chunk: Uint8Array): void {
    const ctl = this.ctl!;
    ctl.enqueue(chunk);
    // A reader slower than the upstream: stop reading the socket (TCP holds the rest at the upstream).
    if (!this.paused && (ctl.desiredSize ?? 1) <= 0 && this.conn?.sock) {
      this.paused = true;
      this.conn.sock.pause();
    }
  }

  private resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.conn?.sock?.resume();
  }

  private endBody(): void {
    this.read = Read.Done;
    this.finished = true;
    this.signal?.removeEventListener("abort", this);
    const conn = this.conn!;
    conn.exchange = null;
    conn.used = true;
    if (this.paused) conn.sock?.resume();
    if (this.reusable && !conn.closed && !conn.unsent) this.pool.release(conn, this.keepAliveMs);
    else conn.destroy();
    try {
      this.ctl?.close();
    } catch {}
  }

  /** The body's reader cancelled it: the rest of the answer is not wanted. */
  private cancel(): void {
    if (this.finished) return;
    this.finished = true;
    this.signal?.removeEventListener("abort", this);
    this.conn?.destroy();
  }

  onClose(error: Error | undefined): void {
    if (this.finished) return;
    const conn = this.conn;
    // A kept connection the server closed just as it was reused (its keep-alive ran out as the request went
    // out): the request was not served; send it again once on a new connection. Only right after sending: a
    // server that took the request and died later without a byte of answer may have started on it (an
    // upstream that bills what it generates), and a second request would cost twice.
    if (conn?.used && !this.received && !this.retried && performance.now() - this.sentOnKeptAt < STALE_CLOSE_MS) {
      this.retried = true;
      this.conn = null;
      return this.connect();
    }
    if (this.read === Read.UntilClose) {
      this.reusable = false;
      return this.endBody();
    }
    this.fail(
      error
        ?? new Error(
          this.answered ? "the upstream closed the connection mid-answer" : "the upstream closed the connection",
        ),
      false,
    );
  }

  private fail(reason: unknown, aborted: boolean): void {
    if (this.finished) return;
    this.finished = true;
    this.signal?.removeEventListener("abort", this);
    if (this.conn) {
      this.conn.exchange = null;
      this.conn.destroy();
    }
    if (!this.answered) {
      this.answered = true;
      return this.reject(
        aborted ? reason : new TypeError(String((reason as Error)?.message ?? reason), { cause: reason }),
      );
    }
    try {
      this.ctl?.error(reason);
    } catch {}
  }
}
