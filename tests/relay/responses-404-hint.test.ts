// An OpenAI-type channel whose upstream has no /v1/responses: the upstream's 404 to a Responses call (and to
// a compaction) reaches the client in OpenAI's error shape with a hint naming the channel setting that routes
// such calls through chat completions, and nothing of the channel (its key, address or id).
import { describe, expect, test } from "bun:test";
import { NEW_USER_QUOTA, ratios, sharedRelayFixture } from "./fixtures.ts";
import { startCompatUpstream } from "../mocks/openai-compatible-upstream.ts";

const CHANNEL_KEY = "sk-compat";
const session = { key: "", channelId: 0 };

const up = sharedRelayFixture(async (fx) => {
  const u = { compat: startCompatUpstream() };
  session.channelId = await fx.channel({ type: 1, key: CHANNEL_KEY, base_url: u.compat.url, models: ["no-responses"] });
  await fx.channel({
    type: 1,
    key: CHANNEL_KEY,
    base_url: u.compat.url,
    models: ["via-chat"],
    setting: { responses_api: "chat" },
  });
  await ratios(fx, ["no-responses", "via-chat"], 1, 2);
  const user = await fx.user(NEW_USER_QUOTA);
  session.key = (await fx.token(user.id, { remain_quota: NEW_USER_QUOTA })).key;
  return u;
});

const responses = (model: string, path = "/v1/responses") => up.fx.call(path, session.key, { model, input: "Hi" });

describe("an upstream without the Responses API", () => {
  for (const path of ["/v1/responses", "/v1/responses/compact"]) {
    test(`its 404 to ${path} carries the responses_api hint and no channel details`, async () => {
      const r = await responses("no-responses", path);
      expect(r.status).toBe(404);
      const body = await r.json();
      const message: string = body.error.message;
      expect(message).toContain(`Invalid URL (POST ${path})`);
      expect(message).toContain('"responses_api": "chat"');
      expect(message).toContain("through chat completions");
      expect(message).not.toContain(CHANNEL_KEY);
      expect(message).not.toContain(new URL(up.compat.url).host);
      expect(message).not.toContain(`#${session.channelId}`);
      expect(message).not.toMatch(/channel \d/);
    });
  }

  test("with the setting the same upstream answers the call; its 404 to another route has no hint", async () => {
    expect((await responses("via-chat")).status).toBe(200);
    const other = await up.fx.call("/v1/moderations", session.key, { model: "no-responses", input: "Hi" });
    expect(other.status).toBe(404);
    const message: string = (await other.json()).error.message;
    expect(message).toContain("Invalid URL (POST /v1/moderations)");
    expect(message).not.toContain("responses_api");
  });
});
