// Issue 6 item 6 end to end: a relay call that takes a user's quota below their warning threshold sends
// the quota notification (here by webhook to a local receiver), at most once per 2 hours per user.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, userRow, type RelayFixture } from "../relay/fixtures.ts";
import { allowLocalFetches } from "../helpers/outbound.ts";

interface Hit {
  auth: string | null;
  body: any;
}

let fx: RelayFixture;
let hooks: ReturnType<typeof Bun.serve>;
const hits: Hit[] = [];
const MODEL = "warn-model";
// The mock upstream reports 10 prompt + 20 completion tokens: 2 × (10 + 20 × 3) = 140 per call.
const COST = 140;

beforeAll(async () => {
  fx = await relayFixture("sqlite", {}, { allowLoopbackWebhooks: true });
  await allowLocalFetches(fx.ctx.deps.options);
  hooks = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      hits.push({ auth: req.headers.get("authorization"), body: await req.json() });
      return new Response("ok");
    },
  });
  await fx.option("ModelRatio", JSON.stringify({ ...fx.ctx.deps.options.json("ModelRatio", {}), [MODEL]: 2 }));
  await fx.option(
    "CompletionRatio",
    JSON.stringify({ ...fx.ctx.deps.options.json("CompletionRatio", {}), [MODEL]: 3 }),
  );
  await fx.channel({ base_url: fx.mock.url, models: [MODEL] });
});
afterAll(async () => {
  hooks.stop(true);
  await fx.close();
});

const webhook = (threshold?: number) =>
  JSON.stringify({
    notify_type: "webhook",
    webhook_url: `http://127.0.0.1:${hooks.port}/hook`,
    webhook_secret: "whsec",
    ...(threshold === undefined ? {} : { quota_warning_threshold: threshold }),
  });

async function callAs(quota: number, setting: string) {
  const user = await fx.user(quota, { setting });
  const token = await fx.token(user.id, { unlimited_quota: true });
  return {
    user,
    token,
    call: () =>
      fx.call("/v1/chat/completions", token.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] }),
  };
}

/** Delivery runs in the background after the charge settles: waits for `count` hits (or gives up). */
async function hitsFor(count: number, patienceMs = 2000) {
  for (let waited = 0; waited < patienceMs && hits.length < count; waited += 20) await Bun.sleep(20);
  await Bun.sleep(50);
  return hits.length;
}

describe("quota warnings after relay calls", () => {
  test("a call that takes the quota below the user's threshold warns once by webhook with the Bearer secret", async () => {
    const start = hits.length;
    // A small balance: the call holds its estimate in the database first.
    const { user, call } = await callAs(1_000, webhook(900));
    expect((await call()).status).toBe(200);
    await fx.flush();
    expect((await userRow(fx, user.id)).quota).toBe(1_000 - COST);
    expect(await hitsFor(start + 1)).toBe(start + 1);
    expect(hits.at(-1)!.auth).toBe("Bearer whsec");
    expect(hits.at(-1)!.body.type).toBe("quota_exceed");
    // Within two hours, further calls below the threshold send nothing more.
    expect((await call()).status).toBe(200);
    await fx.flush();
    expect(await hitsFor(start + 2, 300)).toBe(start + 1);
  });

  test("a large balance (charged through the write-behind) crossing the threshold warns too", async () => {
    const start = hits.length;
    const { call } = await callAs(100_000, webhook(99_950));
    expect((await call()).status).toBe(200);
    await fx.flush();
    expect(await hitsFor(start + 1)).toBe(start + 1);
  });

  test("calls that leave the quota at or above the threshold send nothing; QuotaRemindThreshold is the default", async () => {
    const start = hits.length;
    const above = await callAs(100_000, webhook(1_000));
    expect((await above.call()).status).toBe(200);
    await fx.option("QuotaRemindThreshold", "500");
    const byDefault = await callAs(600, webhook());
    expect((await byDefault.call()).status).toBe(200);
    await fx.flush();
    expect(await hitsFor(start + 1)).toBe(start + 1);
    await fx.option("QuotaRemindThreshold", "0");
  });
});
