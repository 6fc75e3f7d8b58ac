// Notification webhooks are addresses users type in: the gateway posts to them through the outbound guard
// (fetch_setting.*), never follows their redirects, and never lets the user's secret add header lines.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { checkQuota } from "../../server/infra/notify.ts";
import { allowLocalFetches } from "../helpers/outbound.ts";
import { OPTION_DEFAULTS } from "../../server/modules/option/defaults.ts";

let ctx: TestContext;
let receiver: ReturnType<typeof Bun.serve>;
const hits: { path: string; auth: string | null; extra: string | null }[] = [];
let local: string;

beforeAll(async () => {
  // The test flag only lets http:// through (production webhooks are https); the address rules are the options'.
  ctx = await testContext({ config: { allowLoopbackWebhooks: true } });
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      hits.push({ path, auth: req.headers.get("authorization"), extra: req.headers.get("x-injected") });
      if (path === "/moved") return new Response(null, { status: 307, headers: { location: "/hook" } });
      return new Response("ok");
    },
  });
  local = `http://127.0.0.1:${receiver.port}`;
});
afterAll(async () => {
  receiver.stop(true);
  await ctx.close();
});

const warnUser = (setting: Record<string, unknown>) =>
  ctx.user(1, { setting: JSON.stringify({ notify_type: "webhook", quota_warning_threshold: 100, ...setting }) });

async function resetFetchSettings() {
  for (const key of Object.keys(OPTION_DEFAULTS))
    if (key.startsWith("fetch_setting.")) await ctx.deps.options.set(key, OPTION_DEFAULTS[key]!);
}

describe("webhook addresses go through the outbound guard", () => {
  test("by default a webhook on this machine, the private network or a metadata address is refused unsent", async () => {
    await resetFetchSettings();
    const before = hits.length;
    for (const [url, reason] of [
      [`${local}/hook`, "port"],
      ["https://127.0.0.1/hook", "127.0.0.1 is a private or local address"],
      ["https://[::1]/hook", "::1 is a private or local address"],
      ["https://10.1.2.3/hook", "10.1.2.3 is a private or local address"],
      ["https://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"],
      ["https://localhost/hook", "localhost resolves to a private or local address"],
    ] as const) {
      const u = await warnUser({ webhook_url: url });
      await expect(checkQuota(ctx.deps, u.id, 1)).rejects.toThrow(reason);
    }
    expect(hits.length).toBe(before);
  });

  test("with the options opened for local addresses the webhook is delivered", async () => {
    await allowLocalFetches(ctx.deps.options);
    const u = await warnUser({ webhook_url: `${local}/hook`, webhook_secret: "s3cret" });
    expect(await checkQuota(ctx.deps, u.id, 1)).toBe("sent");
    expect(hits.at(-1)).toEqual({ path: "/hook", auth: "Bearer s3cret", extra: null });
    await resetFetchSettings();
  });

  test("a redirect is not followed: the delivery fails and the target is not called", async () => {
    await allowLocalFetches(ctx.deps.options);
    const before = hits.length;
    const u = await warnUser({ webhook_url: `${local}/moved` });
    await expect(checkQuota(ctx.deps, u.id, 1)).rejects.toThrow("webhook answered 307");
    expect(hits.slice(before).map((h) => h.path)).toEqual(["/moved"]);
    await resetFetchSettings();
  });
});

describe("the webhook secret cannot add header lines", () => {
  test("saving a secret with CR/LF (or another control character) is refused with a 400", async () => {
    const u = await ctx.user(1);
    for (const secret of ["abc\r\nX-Injected: 1", "abc\nX-Injected: 1", "abc\rdef", "tab\there", "nul\u0000"]) {
      const r = await ctx.request("PUT", "/api/user/setting", {
        as: u,
        body: { notify_type: "webhook", webhook_url: "https://hooks.example.com/x", webhook_secret: secret },
      });
      expect(r.status).toBe(400);
      expect(r.body.message).toBe("the webhook secret must not contain line breaks or other control characters");
    }
    const ok = await ctx.request("PUT", "/api/user/setting", {
      as: u,
      body: { notify_type: "webhook", webhook_url: "https://hooks.example.com/x", webhook_secret: "plain-secret" },
    });
    expect(ok.body.success).toBe(true);
  });

  test("a secret stored with a line break before the rule is not sent at all", async () => {
    await allowLocalFetches(ctx.deps.options);
    const before = hits.length;
    const u = await warnUser({ webhook_url: `${local}/hook`, webhook_secret: "abc\r\nX-Injected: 1" });
    await expect(checkQuota(ctx.deps, u.id, 1)).rejects.toThrow("control characters");
    expect(hits.length).toBe(before);
    await resetFetchSettings();
  });
});
