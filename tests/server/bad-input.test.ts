// Bad input gets a clear 4xx envelope and changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";

let ctx: TestContext;
let root: Session;
const count = async () =>
  Number(
    (
      await ctx.deps.db
        .selectFrom("users")
        .select((eb) => eb.fn.countAll().as("n"))
        .executeTakeFirstOrThrow()
    ).n,
  );

beforeAll(async () => {
  ctx = await testContext();
  root = await ctx.login("root", "rootpass123");
});
afterAll(() => ctx.close());

describe("bad input", () => {
  test("malformed JSON → 400 envelope, no stack trace", async () => {
    const before = await count();
    const r = await ctx.request("POST", "/api/user/", {
      as: root,
      raw: '{"username": "x", ',
      headers: { "content-type": "application/json" },
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ success: false, message: "malformed request body: expected valid JSON" });
    expect(await count()).toBe(before);
  });

  test("wrong types name the field", async () => {
    const r = await ctx.request("PUT", "/api/user/", { as: root, body: { id: "abc", quota: 5 } });
    expect(r.status).toBe(400);
    expect(r.body.success).toBe(false);
    expect(r.body.message).toContain("id");
    const r2 = await ctx.request("POST", "/api/user/", { as: root, body: { username: 42, password: "password1" } });
    expect(r2.status).toBe(400);
    expect(r2.body.message).toBe("invalid parameter username: expected string");
    const r3 = await ctx.request("POST", "/api/user/aff_transfer", { as: root, body: { quota: "lots" } });
    expect(r3.body).toEqual({ success: false, message: "quota must be an integer from 1 to 9007199254740991" });
  });

  test("missing fields name the field", async () => {
    const r = await ctx.request("POST", "/api/user/manage", { as: root, body: { action: "disable" } });
    expect(r.status).toBe(400);
    expect(r.body.message).toBe("invalid parameter id: it is required");
    const r2 = await ctx.request("PUT", "/api/option/", { as: root, body: { value: "x" } });
    expect(r2.body).toEqual({ success: false, message: "key is required" });
  });

  test("huge bodies are refused before they are read", async () => {
    const before = await count();
    const big = "x".repeat(3 * 1024 * 1024);
    const r = await ctx.request("POST", "/api/user/", { as: root, body: { username: "big", password: big } });
    expect(r.status).toBe(413);
    expect(r.body.success).toBe(false);
    expect(r.body.message).toMatch(/too large/);
    expect(await count()).toBe(before);
  });

  test("unknown /api routes answer a JSON 404; thrown errors are generic", async () => {
    const r = await ctx.request("GET", "/api/definitely/not/here");
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ success: false, message: "not found" });
    expect(r.headers.get("content-type")).toContain("application/json");

    // An unexpected failure (here: the database has gone away) is a generic 500 envelope.
    const broken = await testContext();
    const user = await broken.user(10);
    const quiet = console.error;
    const logged: unknown[][] = [];
    console.error = (...args: unknown[]) => void logged.push(args);
    try {
      await broken.deps.db.destroy();
      const e = await broken.request("GET", "/api/user/?p=1", { as: user });
      expect(e.status).toBe(500);
      expect(e.body).toEqual({ success: false, message: "internal server error, please contact the administrator" });
      expect(JSON.stringify(e.body)).not.toMatch(/at .*\.ts|stack|kysely/i);
      // The operator's log names the request (method and path) next to the error the caller does not see.
      expect(logged.some((a) => a[0] === "[GET /api/user/]")).toBe(true);
    } finally {
      console.error = quiet;
      await broken.close().catch(() => {});
    }
  });
});

test("huge bodies with a Content-Length are refused from the header alone", async () => {
  const big = JSON.stringify({ username: "big2", password: "y".repeat(3 * 1024 * 1024) });
  const r = await ctx.request("POST", "/api/user/", {
    as: root,
    raw: big,
    headers: { "content-type": "application/json", "content-length": String(big.length) },
  });
  expect(r.status).toBe(413);
  expect(r.body.success).toBe(false);
});

test("a malformed percent-escape in a path is the client's mistake: 400 on relay routes, never a 500", async () => {
  const ctx = await testContext();
  try {
    const gemini = await ctx.request("POST", "/v1beta/models/%E0%A4%A:generateContent", {
      headers: { authorization: "Bearer sk-x" },
      body: {},
    });
    expect(gemini.status).toBe(400);
    expect(gemini.body.error.message).toContain("percent-escape");
    for (const path of ["/v1/models/%E0%A4%A", "/channel/%E0%A4%A", "/assets/%ZZ.js"]) {
      expect((await ctx.request("GET", path, { headers: { authorization: "Bearer sk-x" } })).status).not.toBe(500);
    }
  } finally {
    await ctx.close();
  }
});
