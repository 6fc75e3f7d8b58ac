// Local forward proxies for the channel proxy setting: an HTTP proxy (CONNECT tunnels and absolute-form
// requests) and a SOCKS5 server (no auth, or user/password), each recording where it was asked to connect.
import net from "node:net";

export interface MockProxy {
  url: string;
  /** "host:port" of every connection it opened, in order */
  targets: string[];
  /** Proxy-Authorization headers it saw (HTTP proxy) or user names (SOCKS) */
  auth: string[];
  stop(): void;
}

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port)),
  );
}

function tunnel(a: net.Socket, b: net.Socket) {
  a.on("error", () => b.destroy());
  b.on("error", () => a.destroy());
  a.pipe(b);
  b.pipe(a);
}

/** An HTTP forward proxy. With `credentials` ("user:pass") it answers 407 to requests without them. */
export async function startHttpProxy(credentials?: string): Promise<MockProxy> {
  const targets: string[] = [];
  const auth: string[] = [];
  const server = net.createServer((client) => {
    client.on("error", () => {});
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf("\r\n\r\n");
      if (end === -1) return;
      client.off("data", onData);
      const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
      const [method, target] = lines[0]!.split(" ");
      const given = lines.find((l) => /^proxy-authorization:/i.test(l))?.replace(/^[^:]*:\s*/, "") ?? "";
      auth.push(given);
      if (credentials && given !== "Basic " + Buffer.from(credentials).toString("base64")) {
        client.end("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      if (method === "CONNECT") {
        const [host, port] = target!.split(":");
        targets.push(target!);
        const up = net.connect(Number(port), host, () => {
          client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
          const rest = buf.subarray(end + 4);
          if (rest.length) up.write(rest);
          tunnel(client, up);
        });
        up.on("error", () => client.end("HTTP/1.1 502 Bad Gateway\r\n\r\n"));
        return;
      }
      // An absolute-form request: forwarded with fetch, answered with "Connection: close" so the client opens
      // a new connection for its next request (one request per connection keeps this proxy simple).
      const u = new URL(target!);
      targets.push(`${u.hostname}:${u.port || 80}`);
      const headers = new Headers();
      for (const l of lines.slice(1)) {
        const at = l.indexOf(":");
        const name = l.slice(0, at).trim();
        if (!/^(proxy-|connection$|keep-alive$|host$|content-length$|transfer-encoding$)/i.test(name))
          headers.append(name, l.slice(at + 1).trim());
      }
      const length = Number(lines.find((l) => /^content-length:/i.test(l))?.split(":")[1] ?? 0);
      let body = buf.subarray(end + 4);
      const forward = async () => {
        while (body.length < length)
          body = Buffer.concat([body, await new Promise<Buffer>((r) => client.once("data", r))]);
        const res = await fetch(u, { method, headers, body: length ? body : undefined, redirect: "manual" });
        const out = [`HTTP/1.1 ${res.status} ${res.statusText || "OK"}`];
        res.headers.forEach((v, k) => {
          if (!/^(connection|keep-alive|content-length|transfer-encoding|content-encoding)$/i.test(k))
            out.push(`${k}: ${v}`);
        });
        client.write(out.concat("Connection: close", "", "").join("\r\n"));
        if (res.body) for await (const chunk of res.body as any as AsyncIterable<Uint8Array>) client.write(chunk);
        client.end();
      };
      forward().catch(() => client.end("HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n"));
    };
    client.on("data", onData);
  });
  const port = await listen(server);
  const url = credentials ? `http://${credentials}@127.0.0.1:${port}` : `http://127.0.0.1:${port}`;
  return { url, targets, auth, stop: () => server.close() };
}

/** A SOCKS5 server (CONNECT only). With `credentials` ("user:pass") it requires RFC 1929 authentication. */
export async function startSocksProxy(credentials?: string): Promise<MockProxy> {
  const targets: string[] = [];
  const auth: string[] = [];
  const server = net.createServer((client) => {
    client.on("error", () => {});
    let buf = Buffer.alloc(0);
    let stage: "greet" | "auth" | "request" = "greet";
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        if (stage === "greet") {
          if (buf.length < 2 || buf.length < 2 + buf[1]!) return;
          const methods = [...buf.subarray(2, 2 + buf[1]!)];
          buf = buf.subarray(2 + buf[1]!);
          if (credentials) {
            if (!methods.includes(2)) return void client.end(Buffer.from([5, 0xff]));
            client.write(Buffer.from([5, 2]));
            stage = "auth";
          } else {
            client.write(Buffer.from([5, 0]));
            stage = "request";
          }
        } else if (stage === "auth") {
          if (buf.length < 2) return;
          const ulen = buf[1]!;
          if (buf.length < 3 + ulen || buf.length < 3 + ulen + buf[2 + ulen]!) return;
          const user = buf.subarray(2, 2 + ulen).toString();
          const plen = buf[2 + ulen]!;
          const pass = buf.subarray(3 + ulen, 3 + ulen + plen).toString();
          buf = buf.subarray(3 + ulen + plen);
          auth.push(user);
          if (`${user}:${pass}` !== credentials) return void client.end(Buffer.from([1, 1]));
          client.write(Buffer.from([1, 0]));
          stage = "request";
        } else {
          if (buf.length < 5) return;
          const atyp = buf[3]!;
          const alen = atyp === 1 ? 4 : atyp === 4 ? 16 : 1 + buf[4]!;
          if (buf.length < 4 + alen + 2) return;
          const host =
            atyp === 1
              ? [...buf.subarray(4, 8)].join(".")
              : atyp === 3
                ? buf.subarray(5, 5 + buf[4]!).toString()
                : "::1";
          const port = buf.readUInt16BE(4 + alen);
          const rest = buf.subarray(4 + alen + 2);
          client.off("data", onData);
          targets.push(`${host}:${port}`);
          const up = net.connect(port, host === "localhost" ? "127.0.0.1" : host, () => {
            client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]));
            if (rest.length) up.write(rest);
            tunnel(client, up);
          });
          up.on("error", () => client.end(Buffer.from([5, 5, 0, 1, 0, 0, 0, 0, 0, 0])));
          return;
        }
      }
    };
    client.on("data", onData);
  });
  const port = await listen(server);
  const url = credentials ? `socks5://${credentials}@127.0.0.1:${port}` : `socks5://127.0.0.1:${port}`;
  return { url, targets, auth, stop: () => server.close() };
}
