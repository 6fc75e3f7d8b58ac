// Per-channel outbound proxies (a channel's `setting.proxy`, as new-api stores it): http://, https://,
// socks5:// or socks5h://, with optional user:password. Bun's fetch and WebSocket take an HTTP proxy
// (`proxy` in their options) but no SOCKS, so a SOCKS proxy is reached through a small bridge on
// 127.0.0.1: an HTTP proxy (CONNECT and absolute-form requests) that opens each connection through the
// SOCKS server. One bridge per SOCKS address, started on first use; it answers only requests carrying its
// own random credentials, so other local processes cannot use it as an open relay.
import net from "node:net";
import { lookup } from "node:dns/promises";
import { randomBytes } from "node:crypto";

const SOCKS_SCHEMES = new Set(["socks5:", "socks5h:", "socks:"]);
/** A request head larger than this is refused (the bridge reads it whole before tunnelling). */
const MAX_HEAD_BYTES = 64 * 1024;
const CONNECT_TIMEOUT_MS = 15_000;

export class ProxyError extends Error {}

/**
 * The HTTP proxy URL to hand to fetch/WebSocket for a channel's proxy setting: the setting itself for an
 * HTTP(S) proxy, a local bridge for a SOCKS proxy, undefined when there is none. Throws ProxyError on an
 * address it cannot use.
 */
export async function proxyUrl(setting: unknown): Promise<string | undefined> {
  const raw = typeof setting === "string" ? setting.trim() : "";
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ProxyError("the channel's proxy is not a valid URL");
  }
  if (url.protocol === "http:" || url.protocol === "https:") return raw;
  if (!SOCKS_SCHEMES.has(url.protocol))
    throw new ProxyError(`the channel's proxy scheme ${url.protocol} is not supported (http, https, socks5, socks5h)`);
  return (await bridgeFor(url)).url;
}

interface Bridge {
  url: string;
  server: net.Server;
}
const bridges = new Map<string, Promise<Bridge>>();

function bridgeFor(socks: URL): Promise<Bridge> {
  const id = socks.href;
  let b = bridges.get(id);
  if (!b) {
    b = startBridge(socks);
    bridges.set(id, b);
    b.catch(() => bridges.delete(id));
  }
  return b;
}

/** Closes every bridge (tests, shutdown). */
export function closeProxyBridges(): void {
  for (const b of bridges.values()) void b.then((x) => x.server.close()).catch(() => {});
  bridges.clear();
}

async function startBridge(socks: URL): Promise<Bridge> {
  const secret = randomBytes(18).toString("base64url");
  const expected = "Basic " + Buffer.from(`sy:${secret}`).toString("base64");
  const server = net.createServer((client) => void serveClient(client, socks, expected));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  server.unref();
  const port = (server.address() as net.AddressInfo).port;
  return { url: `http://sy:${secret}@127.0.0.1:${port}`, server };
}

async function serveClient(client: net.Socket, socks: URL, expected: string) {
  client.on("error", () => {});
  let head: Buffer;
  try {
    head = await readHead(client);
  } catch {
    client.destroy();
    return;
  }
  const end = head.indexOf("\r\n\r\n");
  const lines = head.subarray(0, end).toString("latin1").split("\r\n");
  const rest = head.subarray(end + 4);
  const [method, target] = lines[0]!.split(" ");
  const headers = lines.slice(1);
  const auth = headers.find((h) => /^proxy-authorization:/i.test(h))?.replace(/^[^:]*:\s*/, "");
  if (auth !== expected) {
    client.end("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  let host: string, port: number, forward: Buffer | null;
  if (method === "CONNECT") {
    const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(target ?? "");
    if (!m) return void client.end("HTTP/1.1 400 Bad Request\r\n\r\n");
    host = m[1]!;
    port = Number(m[2]);
    forward = null;
  } else {
    let u: URL;
    try {
      u = new URL(target ?? "");
    } catch {
      return void client.end("HTTP/1.1 400 Bad Request\r\n\r\n");
    }
    host = u.hostname.replace(/^\[|\]$/g, "");
    port = Number(u.port) || (u.protocol === "https:" ? 443 : 80);
    // Origin-form to the server, one request per connection (the bridge does not parse responses).
    const kept = headers.filter((h) => !/^(proxy-authorization|proxy-connection|connection|keep-alive):/i.test(h));
    forward = Buffer.concat([
      Buffer.from(
        [`${method} ${u.pathname}${u.search} HTTP/1.1`, ...kept, "Connection: close", "", ""].join("\r\n"),
        "latin1",
      ),
      rest,
    ]);
  }
  let upstream: net.Socket;
  try {
    upstream = await socksConnect(socks, host, port);
  } catch (e) {
    client.end(
      `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nSOCKS proxy: ${(e as Error).message}`,
    );
    return;
  }
  upstream.on("error", () => client.destroy());
  client.on("close", () => upstream.destroy());
  upstream.on("close", () => client.end());
  if (forward) {
    upstream.write(forward);
    client.pipe(upstream);
    // The answer says "Connection: close" too, so the client does not send its next request down this connection.
    void readHead(upstream).then(
      (answer) => {
        const end = answer.indexOf("\r\n\r\n");
        const [status, ...lines] = answer.subarray(0, end).toString("latin1").split("\r\n");
        const kept = lines.filter((h) => !/^(connection|keep-alive):/i.test(h));
        client.write(
          Buffer.concat([
            Buffer.from([status, ...kept, "Connection: close", "", ""].join("\r\n"), "latin1"),
            answer.subarray(end + 4),
          ]),
        );
        upstream.pipe(client);
      },
      () => client.destroy(),
    );
    return;
  }
  client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  if (rest.length) upstream.write(rest);
  client.pipe(upstream);
  upstream.pipe(client);
}

function readHead(sock: net.Socket): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.indexOf("\r\n\r\n") !== -1) {
        sock.off("data", onData);
        sock.pause();
        resolve(buf);
      } else if (buf.length > MAX_HEAD_BYTES) {
        sock.off("data", onData);
        reject(new Error("request head too large"));
      }
    };
    sock.on("data", onData);
    sock.once("end", () => reject(new Error("closed")));
  });
}

/** A byte reader over a socket for the SOCKS handshake (replies arrive in pieces). */
class Reader {
  private buf = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  private failed: Error | null = null;
  constructor(private sock: net.Socket) {
    sock.on("data", this.onData);
    sock.once("error", (e) => this.fail(e));
    sock.once("close", () => this.fail(new Error("the SOCKS server closed the connection")));
  }
  private onData = (d: Buffer) => {
    this.buf = Buffer.concat([this.buf, d]);
    this.waiting?.();
  };
  private fail(e: Error) {
    this.failed ??= e;
    this.waiting?.();
  }
  async read(n: number): Promise<Buffer> {
    while (this.buf.length < n) {
      if (this.failed) throw this.failed;
      await new Promise<void>((r) => (this.waiting = r));
      this.waiting = null;
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }
  /** Stops reading; what arrived past the handshake (nothing, by the protocol) is dropped. */
  release() {
    this.sock.off("data", this.onData);
  }
}

const SOCKS_REPLIES: Record<number, string> = {
  1: "general failure",
  2: "connection not allowed by ruleset",
  3: "network unreachable",
  4: "host unreachable",
  5: "connection refused",
  6: "TTL expired",
  7: "command not supported",
  8: "address type not supported",
};

/** Opens a TCP connection to host:port through the SOCKS5 server (RFC 1928, user/password RFC 1929). */
export async function socksConnect(socks: URL, host: string, port: number): Promise<net.Socket> {
  const sock = net.connect(Number(socks.port) || 1080, socks.hostname.replace(/^\[|\]$/g, ""));
  const timer = setTimeout(() => sock.destroy(new Error("timed out")), CONNECT_TIMEOUT_MS);
  const reader = new Reader(sock);
  try {
    await new Promise<void>((resolve, reject) => {
      sock.once("connect", resolve);
      sock.once("error", reject);
    });
    const user = decodeURIComponent(socks.username);
    const pass = decodeURIComponent(socks.password);
    sock.write(Buffer.from(user ? [5, 2, 0, 2] : [5, 1, 0]));
    const [ver, method] = await reader.read(2);
    if (ver !== 5) throw new Error("not a SOCKS5 server");
    if (method === 2) {
      const u = Buffer.from(user),
        p = Buffer.from(pass);
      sock.write(Buffer.concat([Buffer.from([1, u.length]), u, Buffer.from([p.length]), p]));
      const [, status] = await reader.read(2);
      if (status !== 0) throw new Error("authentication refused");
    } else if (method !== 0) throw new Error("no acceptable authentication method");
    let addr: Buffer;
    const ipKind = net.isIP(host);
    // socks5h: the proxy resolves names; socks5: they are resolved here.
    const resolveHere = socks.protocol === "socks5:" && !ipKind;
    const ip = resolveHere ? (await lookup(host)).address : host;
    const kind = net.isIP(ip);
    if (kind === 4) addr = Buffer.from([1, ...ip.split(".").map(Number)]);
    else if (kind === 6) addr = Buffer.concat([Buffer.from([4]), ipv6Bytes(ip)]);
    else {
      const name = Buffer.from(host);
      addr = Buffer.concat([Buffer.from([3, name.length]), name]);
    }
    sock.write(Buffer.concat([Buffer.from([5, 1, 0]), addr, Buffer.from([port >> 8, port & 255])]));
    const [, rep, , atyp] = await reader.read(4);
    if (rep !== 0) throw new Error(SOCKS_REPLIES[rep!] ?? `SOCKS error ${rep}`);
    const addrLen = atyp === 1 ? 4 : atyp === 4 ? 16 : (await reader.read(1))[0]!;
    await reader.read(addrLen + 2);
    reader.release();
    return sock;
  } catch (e) {
    sock.destroy();
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

function ipv6Bytes(ip: string): Buffer {
  const [head, tail = ""] = ip.split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = ip.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g || "0", 16), i * 2));
  return out;
}
