// The /api guard (body size, setup first) on a listening server, where Elysia serves static routes through
// Bun's own router and hands the guard the route's path instead of the request's URL: raw request lines
// over a socket, so no client normalises the path first.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";

let ctx: TestContext;
let port = 0;

beforeAll(async () => {
  ctx = await testContext({ setup: false });
  ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
  port = ctx.app.server!.port!;
});

afterAll(async () => {
  await ctx.app.stop(true);
  await ctx.close();
});

/** Sends one raw HTTP/1.1 request and answers the status and body. */
async function raw(
  requestLine: string,
  headers: Record<string, string> = {},
  body = "",
): Promise<{ status: number; body: string }> {
  const chunks: Uint8Array[] = [];
  const done = Promise.withResolvers<void>();
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data: (_s, d) => {
        chunks.push(d);
      },
      close: () => done.resolve(),
      error: () => done.resolve(),
    },
  });
  const head = {
    host: `127.0.0.1:${port}`,
    connection: "close",
    ...(body ? { "content-length": String(Buffer.byteLength(body)) } : {}),
    ...headers,
  };
  socket.write(
    `${requestLine}\r\n${Object.entries(head)
      .map(([k, v]) => `${k}: ${v}`)
      .join("\r\n")}\r\n\r\n${body}`,
  );
  await done.promise;
  const text = Buffer.concat(chunks).toString("utf8");
  const [first, ...rest] = text.split("\r\n\r\n");
  return { status: Number(first.split(" ")[1]), body: rest.join("\r\n\r\n") };
}

test("before setup, /api routes answer 403 however the path is spelled; exempt ones answer", async () => {
  for (const path of ["/api/user/self", "/v1/../api/user/self", "/api/./user/self"]) {
    const r = await raw(`GET ${path} HTTP/1.1`);
    expect([path, r.status]).toEqual([path, 403]);
    expect(r.body).toContain("setup");
  }
  expect((await raw("GET /api/status HTTP/1.1")).status).toBe(200);
});

test("a management body over 2 MiB is 413 before it is read; the relay's static routes skip the guard", async () => {
  const big = await raw("POST /api/user/login HTTP/1.1", {
    "content-type": "application/json",
    "content-length": String(3 * 1024 * 1024),
  });
  expect(big.status).toBe(413);
  // A relay route is not an /api route: no setup guard, its own answer (no key: 401 in OpenAI's shape).
  const relay = await raw(
    "POST /v1/chat/completions HTTP/1.1",
    { "content-type": "application/json" },
    JSON.stringify({ model: "m", messages: [] }),
  );
  expect(relay.status).toBe(401);
  expect(JSON.parse(relay.body).error.code).toBe("invalid_api_key");
});
