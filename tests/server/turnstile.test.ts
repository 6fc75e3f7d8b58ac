// Cloudflare Turnstile (options TurnstileCheckEnabled, TurnstileSiteKey, TurnstileSecretKey): the routes
// one-api guards (login, register, verification, reset_password) need ?turnstile= that siteverify accepts.
import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { smtpReceiver, useSmtp, codeIn, type SmtpReceiver } from "../mocks/smtp-server.ts";
import { loadConfig } from "../../server/config.ts";

/** A stand-in for challenges.cloudflare.com/turnstile/v0/siteverify: each issued token passes once. */
function siteverify() {
  const calls: Record<string, string>[] = [];
  const valid = new Set<string>();
  let down = false;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const form = Object.fromEntries(new URLSearchParams(await req.text()));
      calls.push(form);
      if (down) return new Response("oops", { status: 500 });
      if (form.secret !== "0xSECRET") return Response.json({ success: false, "error-codes": ["invalid-input-secret"] });
      const ok = valid.delete(form.response);
      return Response.json(
        ok
          ? { success: true, hostname: "gw.example.com" }
          : { success: false, "error-codes": ["timeout-or-duplicate"] },
      );
    },
  });
  let n = 0;
  return {
    url: `http://127.0.0.1:${server.port}/turnstile/v0/siteverify`,
    calls,
    token() {
      const t = `tok-${++n}-${Math.random().toString(36).slice(2)}`;
      valid.add(t);
      return t;
    },
    setDown(v: boolean) {
      down = v;
    },
    stop: () => server.stop(true),
  };
}

let ctx: TestContext;
let cf: ReturnType<typeof siteverify>;
let smtp: SmtpReceiver;
beforeAll(async () => {
  cf = siteverify();
  smtp = smtpReceiver();
  ctx = await testContext({ config: { turnstileVerifyUrl: cf.url, trustProxy: true } });
  await useSmtp(ctx.deps.options, smtp);
  await ctx.deps.options.set("ServerAddress", "https://gw.example.com");
  await ctx.deps.options.set("TurnstileSiteKey", "0xSITE");
  await ctx.deps.options.set("TurnstileSecretKey", "0xSECRET");
  await ctx.deps.options.set("TurnstileCheckEnabled", "true");
});
afterAll(async () => {
  cf.stop();
  smtp.stop();
  await ctx.close();
});
afterEach(() => {
  setSystemTime();
  cf.setDown(false);
});

const MISSING = "the Turnstile check is missing: retry in a few seconds, Turnstile is checking the environment";
const FAILED = "the Turnstile check failed, please refresh the page and try again";
const from = (ip: string) => ({ "x-forwarded-for": ip });

/** A user with a session (ctx.user signs in, which the check would stop). */
async function signedInUser(fields: Record<string, unknown> = {}) {
  await ctx.deps.options.set("TurnstileCheckEnabled", "false");
  try {
    return await ctx.user(1, fields);
  } finally {
    await ctx.deps.options.set("TurnstileCheckEnabled", "true");
  }
}

const login = (turnstile: string | null, ip = "198.51.100.1") =>
  ctx.request("POST", `/api/user/login${turnstile === null ? "" : `?turnstile=${encodeURIComponent(turnstile)}`}`, {
    body: { username: "root", password: "rootpass123" },
    headers: from(ip),
  });

describe("Turnstile on guarded routes", () => {
  test("login without a token is refused before the password is looked at", async () => {
    const calls = cf.calls.length;
    const r = await login(null);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ success: false, message: MISSING });
    expect(r.headers.get("set-cookie")).toBeNull();
    expect(cf.calls.length).toBe(calls);
  });

  test("a token siteverify rejects is refused; one it accepts lets the login through", async () => {
    const bad = await login("forged");
    expect(bad.status).toBe(403);
    expect(bad.body).toEqual({ success: false, message: FAILED });
    const token = cf.token();
    const good = await login(token, "203.0.113.7");
    expect(good.body.success).toBe(true);
    expect(cf.calls.at(-1)).toEqual({ secret: "0xSECRET", response: token, remoteip: "203.0.113.7" });
  });

  test("register, verification and reset_password are guarded too", async () => {
    await signedInUser({ email: "reset-me@example.com" });
    const reg = await ctx.request("POST", "/api/user/register", {
      body: { username: "tsuser", password: "password1" },
    });
    expect(reg.body).toEqual({ success: false, message: MISSING });
    const ver = await ctx.request("GET", "/api/verification?email=ts@example.com&turnstile=forged");
    expect(ver.body).toEqual({ success: false, message: FAILED });
    const res = await ctx.request("GET", "/api/reset_password?email=reset-me@example.com");
    expect(res.body).toEqual({ success: false, message: MISSING });
    const n = smtp.mails.length;
    expect(
      (await ctx.request("GET", `/api/reset_password?email=reset-me@example.com&turnstile=${cf.token()}`)).body.success,
    ).toBe(true);
    expect(smtp.mails.length).toBe(n + 1);
    expect(
      (
        await ctx.request("POST", `/api/user/register?turnstile=${cf.token()}`, {
          body: { username: "tsuser", password: "password1" },
        })
      ).body.success,
    ).toBe(true);
  });

  test("the reset confirmation (a link from a mail) needs no token, as in one-api", async () => {
    const r = await ctx.request("POST", "/api/user/reset", { body: { email: "x@example.com", token: "nope" } });
    expect(r.body).toEqual({ success: false, message: "reset link is invalid or expired" });
  });

  test("one widget token serves the register page's send-code and register calls from the same address", async () => {
    await ctx.deps.options.set("EmailVerificationEnabled", "true");
    try {
      const token = cf.token();
      const calls = cf.calls.length;
      const n = smtp.mails.length;
      const sent = await ctx.request("GET", `/api/verification?email=pair@example.com&turnstile=${token}`, {
        headers: from("198.51.100.9"),
      });
      expect(sent.body.success).toBe(true);
      const code = codeIn(await smtp.waitFor(n + 1));
      const reg = await ctx.request("POST", `/api/user/register?turnstile=${token}`, {
        body: { username: "pairuser", password: "password1", email: "pair@example.com", verification_code: code },
        headers: from("198.51.100.9"),
      });
      expect(reg.body).toEqual({ success: true, message: "registered" });
      expect(cf.calls.length).toBe(calls + 1);
      // Another address presenting the same token is checked again, and Cloudflare knows it was used.
      const other = await login(token, "192.0.2.99");
      expect(other.body).toEqual({ success: false, message: FAILED });
    } finally {
      await ctx.deps.options.set("EmailVerificationEnabled", "false");
    }
  });

  test("a verified token is remembered for 5 minutes only", async () => {
    const token = cf.token();
    expect((await login(token, "198.51.100.20")).body.success).toBe(true);
    setSystemTime(new Date(Date.now() + 301_000));
    expect((await login(token, "198.51.100.20")).body).toEqual({ success: false, message: FAILED });
  });

  test("a logged-in caller is not asked again (one-api keeps a passed check in the session)", async () => {
    const u = await signedInUser({ email: "signed-in@example.com" });
    const n = smtp.mails.length;
    const r = await ctx.request("GET", "/api/verification?email=bind-ts@example.com", { as: u });
    expect(r.body.success).toBe(true);
    expect((await smtp.waitFor(n + 1)).to).toBe("bind-ts@example.com");
    expect((await ctx.request("GET", "/api/reset_password?email=signed-in@example.com", { as: u })).body.success).toBe(
      true,
    );
    expect((await ctx.request("GET", "/api/reset_password?email=signed-in@example.com")).body.message).toBe(MISSING);
  });

  test("when siteverify cannot be reached the caller is told to try later", async () => {
    cf.setDown(true);
    const errors: unknown[] = [];
    const log = console.error;
    console.error = (...a: unknown[]) => void errors.push(a);
    try {
      const r = await login(cf.token());
      expect(r.status).toBe(502);
      expect(r.body).toEqual({
        success: false,
        message: "cannot reach Cloudflare Turnstile to check this request, please try again later",
      });
    } finally {
      console.error = log;
    }
  });

  test("an absurdly long token is refused without calling Cloudflare", async () => {
    const calls = cf.calls.length;
    expect((await login("x".repeat(3000))).body).toEqual({ success: false, message: FAILED });
    expect(cf.calls.length).toBe(calls);
  });

  test("with the check off, no token is needed and Cloudflare is not called", async () => {
    await ctx.deps.options.set("TurnstileCheckEnabled", "false");
    try {
      const calls = cf.calls.length;
      expect((await login(null)).body.success).toBe(true);
      expect(cf.calls.length).toBe(calls);
    } finally {
      await ctx.deps.options.set("TurnstileCheckEnabled", "true");
    }
  });
});

describe("configuration", () => {
  test("TURNSTILE_VERIFY_URL overrides Cloudflare's siteverify address", () => {
    expect(loadConfig({ SESSION_SECRET: "x" }).turnstileVerifyUrl).toBe(
      "https://challenges.cloudflare.com/turnstile/v0/siteverify",
    );
    expect(
      loadConfig({ SESSION_SECRET: "x", TURNSTILE_VERIFY_URL: "http://127.0.0.1:9/verify" }).turnstileVerifyUrl,
    ).toBe("http://127.0.0.1:9/verify");
  });
});
