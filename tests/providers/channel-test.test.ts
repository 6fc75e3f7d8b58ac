// "Test channel" (GET /api/channel/test/:id) and the default model lists for the five provider types.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "../relay/fixtures.ts";
import { loginRoot } from "./login.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startAzureUpstream } from "../mocks/azure-upstream.ts";
import { startBedrockUpstream } from "../mocks/bedrock-upstream.ts";
import { makeServiceAccount, startVertexUpstream } from "../mocks/vertex-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { adaptorFor } from "../../server/relay/providers/index.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../server/catalogue/models.ts";
import { bedrockModelId } from "../../server/relay/providers/aws/models.ts";
import type { Session } from "../helpers/app.ts";

let fx: RelayFixture;
let admin: Session;
const mocks: MockUpstream[] = [];
const ids: Record<string, number> = {};

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  admin = await loginRoot(fx);
  const claude = startClaudeUpstream();
  const gemini = startGeminiUpstream();
  const azure = startAzureUpstream();
  const creds = { accessKeyId: "AKIDCT", secretAccessKey: "ct-secret", region: "us-west-2" };
  const bedrock = startBedrockUpstream(creds);
  const vertex = startVertexUpstream();
  const sa = await makeServiceAccount(vertex.url + "/token");
  vertex.trust(sa);
  mocks.push(claude, gemini, azure, bedrock, vertex);
  ids.claude = await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: claude.url,
    models: ["claude-sonnet-4-20250514"],
  });
  ids.claudeBad = await fx.channel({
    type: 14,
    key: "wrong-key",
    base_url: claude.url,
    models: ["claude-sonnet-4-20250514"],
  });
  ids.gemini = await fx.channel({
    type: 24,
    key: "gemini-key",
    base_url: gemini.url,
    models: ["gemini-2.5-flash", "text-embedding-004"],
  });
  ids.azure = await fx.channel({ type: 3, key: "azure-key", base_url: azure.url, models: ["gpt-4o"] });
  ids.aws = await fx.channel({
    type: 33,
    key: `${creds.accessKeyId}|${creds.secretAccessKey}|${creds.region}`,
    base_url: bedrock.url,
    models: ["claude-3-5-sonnet-20240620"],
  });
  ids.vertex = await fx.channel({
    type: 41,
    key: JSON.stringify(sa.json),
    base_url: vertex.url,
    models: ["gemini-2.5-pro", "claude-sonnet-4-20250514"],
  });
});

afterAll(async () => {
  for (const m of mocks) m.stop();
  await fx.close();
});

const testOf = (id: number, model?: string) =>
  fx.ctx.request("GET", `/api/channel/test/${id}${model ? `?model=${model}` : ""}`, { as: admin });

describe("channel test", () => {
  test("each of the five types answers a real test request through its adaptor", async () => {
    for (const name of ["claude", "gemini", "azure", "aws", "vertex"]) {
      const r = await testOf(ids[name]!);
      expect({ name, ...r.body, time: undefined }).toEqual({ name, success: true, message: "", time: undefined });
    }
    expect((await testOf(ids.vertex!, "claude-sonnet-4-20250514")).body.success).toBe(true);
    expect((await testOf(ids.gemini!, "text-embedding-004")).body.success).toBe(true);
  });

  test("a failing channel reports the provider's message", async () => {
    const r = await testOf(ids.claudeBad!);
    expect(r.body).toMatchObject({ success: false, message: "invalid x-api-key" });
  });
});

describe("default model lists", () => {
  test("every listed model of the five types is one the adaptor can serve", () => {
    for (const type of [3, 14, 24, 33, 41]) {
      const list = adaptorFor(type)!.defaultModels!;
      expect(list).toEqual(DEFAULT_CHANNEL_MODELS[type]!);
      expect(list.length).toBeGreaterThan(0);
    }
    for (const m of DEFAULT_CHANNEL_MODELS[33]!)
      expect(bedrockModelId(m.replace(/-thinking$/, ""), "us-east-1")).toContain("anthropic.");
  });
});
