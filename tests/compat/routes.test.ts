// Routes users' tools call besides chat: image edits (multipart, through the openai SDK), the model list in
// each SDK's shape, and a key's balance where chat front-ends read it (OpenAI's old billing routes and
// OpenRouter's /v1/credits). None of them may answer the console's HTML or a 501.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI, { toFile } from "openai";
import { relayFixture, logsOf, tokenRow, type RelayFixture } from "../relay/fixtures.ts";
import { startAzureUpstream } from "../mocks/azure-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";

let fx: RelayFixture;
let azure: MockUpstream;
let server: ReturnType<typeof Bun.serve>;
let base: string;
let key: string;
let tokenId: number;
let userId: number;
let oai: OpenAI;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  azure = startAzureUpstream();
  await fx.option("ModelPrice", JSON.stringify({ "dall-e-2": 0.02, "gpt-image-1": 0.04 }));
  await fx.option("ModelRatio", JSON.stringify({ "rt-chat": 1, "rt-embed": 1 }));
  await fx.channel({ base_url: fx.mock.url, models: ["dall-e-2", "gpt-image-1", "rt-chat", "rt-embed"] });
  const user = await fx.user(2_000_000);
  userId = user.id;
  const t = await fx.token(user.id, { remain_quota: 1_000_000 });
  key = t.key;
  tokenId = t.id;
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
  base = `http://127.0.0.1:${server.port}`;
  oai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0, dangerouslyAllowBrowser: true });
});

afterAll(async () => {
  server.stop(true);
  azure.stop();
  await fx.close();
});

describe("image edits (multipart)", () => {
  test("the openai SDK's images.edit reaches the channel's /v1/images/edits with the file, priced per image", async () => {
    const image = await toFile(new Uint8Array([137, 80, 78, 71, 1, 2, 3, 4]), "in.png", { type: "image/png" });
    const r = await oai.images.edit({ model: "gpt-image-1", image, prompt: "add a hat", n: 2 });
    expect(r.data!.length).toBe(2);
    expect(Buffer.from(r.data![0]!.b64_json!, "base64").toString()).toBe("edited 8 bytes: add a hat");
    const seen = fx.mock.seen.at(-1)!;
    expect(seen.path).toBe("/v1/images/edits");
    expect(seen.body.model).toBe("gpt-image-1");
    await fx.flush();
    const log = (await logsOf(fx, userId)).find((l) => l.model_name === "gpt-image-1")!;
    // $0.04 per image × 2 images × 500000 quota per dollar.
    expect(log.quota).toBe(40_000);
  });

  test("without a model the edit is priced and routed as dall-e-2, OpenAI's default", async () => {
    const form = new FormData();
    form.set("image", new Blob([new Uint8Array([1, 2])], { type: "image/png" }), "a.png");
    form.set("prompt", "x");
    const res = await fetch(`${base}/v1/images/edits`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    expect(res.status).toBe(200);
    expect(fx.mock.seen.at(-1)!.body.model).toBe("dall-e-2");
  });
});

describe("the model list in each SDK's shape", () => {
  const get = (path: string, headers: Record<string, string>) =>
    fetch(base + path, { headers }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

  test("OpenAI's by default", async () => {
    const r = await get("/v1/models", { authorization: `Bearer ${key}` });
    expect(r.body.object).toBe("list");
    expect(r.body.data.map((m: any) => m.id)).toContain("rt-chat");
  });

  test("Anthropic's with anthropic-version (list and one)", async () => {
    const list = await get("/v1/models", { "x-api-key": key, "anthropic-version": "2023-06-01" });
    expect(list.body).toMatchObject({ has_more: false, first_id: "dall-e-2", last_id: "rt-embed" });
    expect(list.body.data[0]).toEqual({
      type: "model",
      id: "dall-e-2",
      display_name: "dall-e-2",
      created_at: "2021-07-20T10:40:00.000Z",
    });
    const one = await get("/v1/models/rt-chat", { "x-api-key": key, "anthropic-version": "2023-06-01" });
    expect(one.body.type).toBe("model");
  });

  test("Gemini's with x-goog-api-key or ?key=, also under /v1beta", async () => {
    for (const r of [
      await get("/v1/models", { "x-goog-api-key": key }),
      await get(`/v1/models?key=${key}`, {}),
      await get("/v1beta/models", { "x-goog-api-key": key }),
    ]) {
      expect(r.body.models.map((m: any) => m.name)).toContain("models/rt-chat");
    }
    const embed = await get("/v1beta/models/rt-embed", { "x-goog-api-key": key });
    expect(embed.body.supportedGenerationMethods).toEqual(["embedContent", "batchEmbedContents"]);
    const missing = await get("/v1beta/models/nope", { "x-goog-api-key": key });
    expect(missing.status).toBe(404);
    expect(missing.body.error.status).toBe("NOT_FOUND");
  });
});

describe("a key's balance for chat front-ends", () => {
  const get = (path: string, k = key) =>
    fetch(base + path, { headers: { authorization: `Bearer ${k}` } }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as any,
    }));

  test("subscription and usage, with and without /v1, in dollars from the token (one-api's numbers)", async () => {
    await fx.flush();
    const t = await tokenRow(fx, tokenId);
    const total = (Number(t.remain_quota) + Number(t.used_quota)) / 500_000;
    for (const prefix of ["", "/v1"]) {
      const sub = await get(`${prefix}/dashboard/billing/subscription`);
      expect(sub.status).toBe(200);
      expect(sub.body).toEqual({
        object: "billing_subscription",
        has_payment_method: true,
        soft_limit_usd: total,
        hard_limit_usd: total,
        system_hard_limit_usd: total,
        access_until: 0,
      });
      const usage = await get(`${prefix}/dashboard/billing/usage?start_date=2024-01-01&end_date=2024-02-01`);
      expect(usage.body).toEqual({ object: "list", total_usage: (Number(t.used_quota) / 500_000) * 100 });
    }
    expect(Number(t.used_quota)).toBeGreaterThan(0);
    const credits = await get("/v1/credits");
    expect(credits.body).toEqual({ data: { total_credits: total, total_usage: Number(t.used_quota) / 500_000 } });
  });

  test("the user's balance without DisplayTokenStatEnabled; quota units without DisplayInCurrencyEnabled; unlimited tokens", async () => {
    await fx.option("DisplayTokenStatEnabled", "false");
    await fx.option("DisplayInCurrencyEnabled", "false");
    const u = await fx.ctx.deps.db
      .selectFrom("users")
      .select(["quota", "used_quota"])
      .where("id", "=", userId)
      .executeTakeFirstOrThrow();
    expect((await get("/v1/dashboard/billing/subscription")).body.hard_limit_usd).toBe(
      Number(u.quota) + Number(u.used_quota),
    );
    await fx.option("DisplayTokenStatEnabled", "true");
    await fx.option("DisplayInCurrencyEnabled", "true");
    const unlimited = (await fx.token(userId, { unlimited_quota: true })).key;
    expect((await get("/dashboard/billing/subscription", unlimited)).body.hard_limit_usd).toBe(100_000_000);
  });

  test("a bad key is an OpenAI-format 401, not the console's page", async () => {
    const r = await get("/dashboard/billing/subscription", "sk-nope");
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("invalid_api_key");
  });
});
