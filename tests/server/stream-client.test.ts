// The socket client for streamed upstream calls (server/infra/stream-client.ts) answers like fetch(): the same
// status, headers and bytes; it reuses connections, resends once on a kept connection the server closed, stops
// on abort and on cancel, holds a slow reader's stream at the socket, verifies TLS, and leaves proxies to fetch().
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import {
  closeIdleStreamConnections,
  configureStreamClient,
  idleStreamConnections,
  streamFetch,
} from "../../server/infra/stream-client.ts";

const POST = (body = '{"stream":true}', extra: RequestInit = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", authorization: "Bearer sk-up" },
  body,
  redirect: "manual",
  ...extra,
});

/** Servers a test started, stopped after it. */
const started: { stop(closeActive?: boolean): unknown }[] = [];
function stopAfterTest<T extends { stop(closeActive?: boolean): unknown }>(server: T): T {
  started.push(server);
  return server;
}

/** A raw HTTP server: `answer` gets each request's head and body text and the socket to write to. */
function rawServer(answer: (req: { head: string; body: string; conn: number; n: number }, sock: any) => void) {
  let conns = 0;
  const heads: string[] = [];
  const server = stopAfterTest(
    Bun.listen<{ id: number; buf: Buffer; n: number }>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open(s) {
          s.data = { id: ++conns, buf: Buffer.alloc(0), n: 0 };
        },
        data(s, d) {
          s.data.buf = Buffer.concat([s.data.buf, d]);
          for (;;) {
            const end = s.data.buf.indexOf("\r\n\r\n");
            if (end < 0) return;
            const head = s.data.buf.toString("latin1", 0, end);
            const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
            if (s.data.buf.length < end + 4 + length) return;
            const body = s.data.buf.toString("utf8", end + 4, end + 4 + length);
            s.data.buf = s.data.buf.subarray(end + 4 + length);
            heads.push(head);
            answer({ head, body, conn: s.data.id, n: ++s.data.n }, s);
          }
        },
      },
    }),
  );
  return { url: `http://127.0.0.1:${server.port}`, server, heads, connections: () => conns };
}

const chunked = (parts: string[]) =>
  parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join("") + "0\r\n\r\n";

afterEach(() => {
  for (const server of started.splice(0)) server.stop(true);
  closeIdleStreamConnections();
});
afterAll(() => configureStreamClient({ enabled: true, proxiedProtocols: [] }));

describe("answers like fetch()", () => {
  const sse = Bun.serve({
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/echo")
        return Response.json({ method: req.method, headers: Object.fromEntries(req.headers), body: await req.text() });
      if (url.pathname === "/error")
        return Response.json({ error: { message: "slow down" } }, { status: 429, headers: { "retry-after": "3" } });
      if (url.pathname === "/empty") return new Response(null, { status: 204 });
      let i = 0;
      return new Response(
        new ReadableStream({
          async pull(c) {
            if (i === 5) return c.close();
            c.enqueue(`data: {"i":${i++},"text":"héllo ✓"}\n\n`);
            await Bun.sleep(2);
          },
        }),
        { headers: { "content-type": "text/event-stream", "x-upstream": "yes" } },
      );
    },
  });
  afterAll(() => sse.stop(true));
  const base = `http://127.0.0.1:${sse.port}`;

  test("a chunked SSE stream: same status, headers and bytes as fetch(), read chunk by chunk", async () => {
    const [a, b] = await Promise.all([streamFetch(base + "/sse", POST()), fetch(base + "/sse", POST())]);
    expect(a.status).toBe(200);
    expect(a.headers.get("content-type")).toBe(b.headers.get("content-type"));
    expect(a.headers.get("x-upstream")).toBe("yes");
    const chunks: Uint8Array[] = [];
    const reader = a.body!.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
    expect(chunks.length).toBeGreaterThan(1);
    expect(Buffer.concat(chunks).toString()).toBe(await b.text());
  });

  test("the request arrives as sent: method, headers, a UTF-8 body and its length", async () => {
    const body = JSON.stringify({ text: "日本語 ✓", n: 1 });
    const res = await streamFetch(
      base + "/echo",
      POST(body, { headers: { "content-type": "application/json", "x-api-key": "k1" } }),
    );
    const got: any = await res.json();
    expect(got.method).toBe("POST");
    expect(got.body).toBe(body);
    expect(got.headers["x-api-key"]).toBe("k1");
    expect(got.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
    expect(got.headers.host).toBe(`127.0.0.1:${sse.port}`);
    expect(got.headers["user-agent"]).toStartWith("Bun/");
  });

  test("a byte body and a 2 MB body arrive whole", async () => {
    const bytes = new TextEncoder().encode('{"a":"bytes"}');
    expect(((await (await streamFetch(base + "/echo", POST(bytes as any))).json()) as any).body).toBe('{"a":"bytes"}');
    const big = JSON.stringify({ text: "x".repeat(2 * 1024 * 1024) });
    expect(((await (await streamFetch(base + "/echo", POST(big))).json()) as any).body.length).toBe(big.length);
  });

  test("large UTF-8 bodies sent at once (each encoded into the one scratch buffer) arrive whole and unmixed", async () => {
    // Each is larger than the socket takes in one write, so the next one's encoding would overwrite the first
    // one's unsent rest if it were not copied out.
    const bodies = ["a", "日", "✓"].map((c, i) => JSON.stringify({ i, text: c.repeat(1_500_000) }));
    // A text joined from pieces, as the relay's stream usage request makes one, with 4-byte characters.
    const joined = JSON.stringify({ i: 3, text: "😀".repeat(600_000) });
    bodies.push(joined.slice(0, -1) + ',"stream_options":{"include_usage":true}' + joined.slice(-1));
    const got = await Promise.all(
      bodies.map(async (body) => (await (await streamFetch(base + "/echo", POST(body))).json()) as any),
    );
    got.forEach((g, i) => {
      expect(g.headers["content-length"]).toBe(String(Buffer.byteLength(bodies[i]!)));
      expect(g.body === bodies[i]).toBe(true);
    });
  });

  test("an error answer is a Response with its status, headers and body", async () => {
    const res = await streamFetch(base + "/error", POST());
    expect(res.status).toBe(429);
    expect(res.ok).toBe(false);
    expect(res.headers.get("retry-after")).toBe("3");
    expect(await res.json()).toEqual({ error: { message: "slow down" } });
  });

  test("a 204 has no body", async () => {
    const res = await streamFetch(base + "/empty", POST());
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });

  test("a header value with a line break is refused before anything is sent", async () => {
    await expect(
      streamFetch(base + "/echo", POST("{}", { headers: { "x-bad": "a\r\nx-injected: 1" } })),
    ).rejects.toThrow();
    await expect(
      streamFetch(base + "/echo", POST("{}", { headers: new Headers([["x-ok", "1"]]) as any, method: "POST\r\nX: y" })),
    ).rejects.toThrow();
    await expect(streamFetch(base + "/echo", POST("{}", { headers: { "bad name": "1" } }))).rejects.toThrow();
  });
});

describe("connections", () => {
  test("sequential calls reuse one connection; the idle one is kept, then closed on request", async () => {
    const up = rawServer((r, s) =>
      s.write(
        `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n${chunked(["data: 1\n\n", "data: 2\n\n"])}`,
      ),
    );
    for (let i = 0; i < 3; i++)
      expect(await (await streamFetch(up.url + "/v1/chat/completions", POST())).text()).toBe("data: 1\n\ndata: 2\n\n");
    expect(up.connections()).toBe(1);
    expect(idleStreamConnections()).toBe(1);
    closeIdleStreamConnections();
    expect(idleStreamConnections()).toBe(0);
  });

  test("a kept connection the server closed as it was reused: the request is sent once more on a new one", async () => {
    const up = rawServer((r, s) => {
      // The second request on a connection finds it closing (a server's keep-alive ran out).
      if (r.n === 2) return s.end();
      s.write(`HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok`);
    });
    expect(await (await streamFetch(up.url + "/a", POST())).text()).toBe("ok");
    expect(await (await streamFetch(up.url + "/b", POST())).text()).toBe("ok");
    expect(up.connections()).toBe(2);
    expect(up.heads.filter((h) => h.startsWith("POST /b ")).length).toBe(2);
  });

  test("a kept connection closed long after the request, without an answer, is an error: the upstream may have started on it", async () => {
    const up = rawServer((r, s) => {
      if (r.n === 2) return void setTimeout(() => s.end(), 1200);
      s.write(`HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok`);
    });
    expect(await (await streamFetch(up.url + "/a", POST())).text()).toBe("ok");
    await expect(streamFetch(up.url + "/b", POST())).rejects.toThrow(/closed/);
    expect(up.heads.filter((h) => h.startsWith("POST /b ")).length).toBe(1);
  });

  test("a new connection closed before any answer is an error, not a retry", async () => {
    const up = rawServer((_r, s) => s.end());
    await expect(streamFetch(up.url + "/a", POST())).rejects.toThrow(/closed/);
    expect(up.heads.length).toBe(1);
  });

  test("a connection refused is an error", async () => {
    const closedPort = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = closedPort.port;
    closedPort.stop(true);
    await expect(streamFetch(`http://127.0.0.1:${port}/x`, POST())).rejects.toThrow();
  });

  test("an answer cut mid-body errors the body's reader; the connection is not kept", async () => {
    const up = rawServer((_r, s) => {
      s.write(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${"9\r\ndata: 1\n\n\r\n"}`);
      setTimeout(() => s.end(), 20);
    });
    const res = await streamFetch(up.url + "/a", POST());
    await expect(res.text()).rejects.toThrow();
    expect(idleStreamConnections()).toBe(0);
  });

  test("an answer without a length ends when the server closes (and its connection is not kept)", async () => {
    const up = rawServer((_r, s) => {
      s.write("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: a\n\n");
      setTimeout(() => {
        s.write("data: b\n\n");
        s.end();
      }, 20);
    });
    expect(await (await streamFetch(up.url + "/a", POST())).text()).toBe("data: a\n\ndata: b\n\n");
    expect(idleStreamConnections()).toBe(0);
  });

  test("interim 100 Continue is skipped; chunk extensions and trailers are read", async () => {
    const up = rawServer((_r, s) =>
      s.write(
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nx-trailer: t\r\n\r\n",
      ),
    );
    expect(await (await streamFetch(up.url + "/a", POST())).text()).toBe("hello");
    expect(idleStreamConnections()).toBe(1);
  });

  test("an answer arriving a byte at a time (head, sizes, extensions, payloads and line ends split anywhere) reads the same", async () => {
    const parts = ['data: {"text":"héllo ✓"}\n\n', "data: [DONE]\n\n"];
    const answer =
      "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
      + parts.map((p, i) => `${Buffer.byteLength(p).toString(16)}${i ? ";x=y" : ""}\r\n${p}\r\n`).join("")
      + "0\r\nx-trailer: t\r\n\r\n";
    const up = rawServer(async (_r, s) => {
      for (const byte of Buffer.from(answer)) {
        s.write(Buffer.from([byte]));
        s.flush();
        await Bun.sleep(0);
      }
    });
    const res = await streamFetch(up.url + "/a", POST());
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(await res.text()).toBe(parts.join(""));
    expect(idleStreamConnections()).toBe(1);
  });

  test("chunk sizes with leading zeros and upper-case digits are read", async () => {
    const up = rawServer((_r, s) =>
      s.write(
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0000000000000000005\r\nhello\r\n0000C\r\n hello world\r\n0\r\n\r\n",
      ),
    );
    expect(await (await streamFetch(up.url + "/a", POST())).text()).toBe("hello hello world");
  });

  test("the body's chunks are buffers of their own, not views into the socket's", async () => {
    const up = rawServer((_r, s) =>
      s.write(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${chunked(["data: a\n\n", "data: b\n\n"])}`),
    );
    const reader = (await streamFetch(up.url + "/a", POST())).body!.getReader();
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      expect([value.byteOffset, value.byteLength]).toEqual([0, value.buffer.byteLength]);
      text += Buffer.from(value).toString();
    }
    expect(text).toBe("data: a\n\ndata: b\n\n");
  });

  for (const [name, body] of [
    ["a size that is not hex", "zz\r\nhello\r\n0\r\n\r\n"],
    ["an empty size line", "\r\nhello\r\n0\r\n\r\n"],
    ["bytes after the size that are not an extension", "5 x\r\nhello\r\n0\r\n\r\n"],
    ["a chunk longer than its size", "5\r\nhello!\r\n0\r\n\r\n"],
  ]) {
    test(`malformed chunk framing (${name}) errors the body's reader; the connection is not kept`, async () => {
      const up = rawServer((_r, s) => s.write(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${body}`));
      const res = await streamFetch(up.url + "/a", POST());
      await expect(res.text()).rejects.toThrow();
      expect(idleStreamConnections()).toBe(0);
    });
  }

  test("a gzip-encoded answer is decoded", async () => {
    const zipped = gzipSync("data: compressed\n\n");
    const up = rawServer((_r, s) => {
      s.write(`HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: ${zipped.length}\r\n\r\n`);
      s.write(zipped);
    });
    expect(await (await streamFetch(up.url + "/a", POST())).text()).toBe("data: compressed\n\n");
    expect(up.heads[0]).toContain("accept-encoding: identity");
  });
});

describe("aborts, cancels and backpressure", () => {
  test("an abort before the answer rejects with the signal's reason and closes the connection", async () => {
    let closed = false;
    const up = stopAfterTest(
      Bun.listen({
        hostname: "127.0.0.1",
        port: 0,
        socket: {
          data() {},
          close() {
            closed = true;
          },
        },
      }),
    );
    const abort = new AbortController();
    const p = streamFetch(`http://127.0.0.1:${up.port}/a`, POST("{}", { signal: abort.signal }));
    setTimeout(() => abort.abort(new Error("timeout")), 30);
    await expect(p).rejects.toThrow("timeout");
    await Bun.sleep(30);
    expect(closed).toBe(true);
    const already = new AbortController();
    already.abort(new Error("gone"));
    await expect(streamFetch(`http://127.0.0.1:${up.port}/a`, POST("{}", { signal: already.signal }))).rejects.toThrow(
      "gone",
    );
  });

  test("an abort mid-stream errors the reader; cancelling the body closes the connection", async () => {
    const up = rawServer((r, s) => {
      s.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n");
    });
    const abort = new AbortController();
    const res = await streamFetch(up.url + "/a", POST("{}", { signal: abort.signal }));
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("first");
    abort.abort(new Error("client disconnected"));
    await expect(reader.read()).rejects.toThrow("client disconnected");
    const second = await streamFetch(up.url + "/b", POST());
    const r2 = second.body!.getReader();
    await r2.read();
    await r2.cancel();
    expect(idleStreamConnections()).toBe(0);
    expect(up.connections()).toBe(2);
  });

  test("a reader that stops reading holds the stream at the socket: the upstream cannot send it all", async () => {
    const total = 128 * 1024 * 1024;
    let sent = 0;
    const chunk = Buffer.alloc(64 * 1024, 120);
    const pump = (s: any) => {
      while (sent < total) {
        const part = chunk.subarray(0, Math.min(chunk.length, total - sent));
        const n = s.write(part);
        sent += n;
        if (n < part.length) return;
      }
    };
    const up = stopAfterTest(
      Bun.listen({
        hostname: "127.0.0.1",
        port: 0,
        socket: {
          data(s) {
            s.write(`HTTP/1.1 200 OK\r\ncontent-length: ${total}\r\n\r\n`);
            pump(s);
          },
          drain: pump,
        },
      }),
    );
    const res = await streamFetch(`http://127.0.0.1:${up.port}/a`, POST());
    const reader = res.body!.getReader();
    let got = (await reader.read()).value!.byteLength;
    await Bun.sleep(300);
    // Socket buffers (several MB each way on loopback) and the body's few queued chunks, not the 128 MB.
    expect(sent).toBeLessThan(48 * 1024 * 1024);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      got += value.byteLength;
    }
    expect(sent).toBe(total);
    expect(got).toBe(total);
  });
});

describe("what it leaves to fetch()", () => {
  test("a request with a proxy goes through the proxy (fetch())", async () => {
    const proxy = rawServer((_r, s) => s.write("HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\nproxied"));
    const res = await streamFetch(
      "http://upstream.invalid/v1/chat/completions",
      POST("{}", { proxy: proxy.url } as any),
    );
    expect(await res.text()).toBe("proxied");
    expect(proxy.heads[0]).toStartWith("POST http://upstream.invalid/v1/chat/completions HTTP/1.1");
  });

  test("a HEAD request (any spelling) goes to fetch(): its answer has no body whatever its length says", async () => {
    const up = rawServer((_r, s) => s.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n"));
    const res = await streamFetch(up.url + "/a", { method: "head", redirect: "manual" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
    expect(up.heads[0]).toMatch(/accept-encoding: gzip/i);
  });

  test("switched off (UPSTREAM_STREAM_CLIENT=fetch), or for a proxied protocol, every call goes to fetch()", async () => {
    const up = rawServer((_r, s) => s.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"));
    configureStreamClient({ enabled: false, proxiedProtocols: [] });
    await (await streamFetch(up.url + "/a", POST())).text();
    configureStreamClient({ enabled: true, proxiedProtocols: ["http:"] });
    await (await streamFetch(up.url + "/b", POST())).text();
    configureStreamClient({ enabled: true, proxiedProtocols: [] });
    await (await streamFetch(up.url + "/c", POST())).text();
    // fetch() says so in its user agent and asks for compression; the socket client asks for none.
    expect(up.heads[0]).toMatch(/accept-encoding: gzip/i);
    expect(up.heads[1]).toMatch(/accept-encoding: gzip/i);
    expect(up.heads[2]).toContain("accept-encoding: identity");
  });
});

describe("TLS", () => {
  const dir = join(import.meta.dir, "..", "helpers", "tls");
  const tls = { cert: Bun.file(join(dir, "localhost.crt")), key: Bun.file(join(dir, "localhost.key")) };

  test("a certificate no trusted authority signed is refused", async () => {
    const server = stopAfterTest(Bun.serve({ port: 0, tls, fetch: () => new Response("secret") }));
    await expect(streamFetch(`https://localhost:${server.port}/a`, POST())).rejects.toThrow();
  });

  test("with the authority trusted (NODE_EXTRA_CA_CERTS) the stream is read; a name the certificate does not carry is refused", async () => {
    const script = `
      import { streamFetch } from ${JSON.stringify(join(import.meta.dir, "..", "..", "server", "infra", "stream-client.ts"))};
      const server = Bun.serve({ port: 0, tls: { cert: Bun.file(${JSON.stringify(join(dir, "localhost.crt"))}), key: Bun.file(${JSON.stringify(join(dir, "localhost.key"))}) },
        fetch: () => new Response("data: over tls\\n\\n", { headers: { "content-type": "text/event-stream" } }) });
      const init = { method: "POST", body: "{}", redirect: "manual" };
      const ok = await (await streamFetch("https://localhost:" + server.port + "/a", init)).text();
      const wrongName = await streamFetch("https://127.0.0.2:" + server.port + "/a", init).then(() => "accepted", () => "refused");
      console.log(JSON.stringify({ ok, wrongName }));
      process.exit(0);`;
    const proc = Bun.spawn([process.execPath, "-e", script], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, "localhost.crt") },
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = await new Response(proc.stdout).text();
    expect(JSON.parse(out.trim().split("\n").pop()!)).toEqual({ ok: "data: over tls\n\n", wrongName: "refused" });
  });
});
