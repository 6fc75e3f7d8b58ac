// An OpenAI chat client's max_tokens / max_completion_tokens of 0 means "no limit" and is taken as absent:
// it is not forwarded to an OpenAI-type upstream (real ones refuse 0), and a call converted to Claude asks
// for the channel's default instead of 0.
import { describe, expect, test } from "bun:test";
import { NEW_USER_QUOTA, ratios, sharedRelayFixture } from "./fixtures.ts";
import { startCompatUpstream } from "../mocks/openai-compatible-upstream.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";

const session = { key: "" };

const up = sharedRelayFixture(async (fx) => {
  const u = { compat: startCompatUpstream(), claude: startClaudeUpstream() };
  await fx.channel({ type: 1, key: "sk-compat", base_url: u.compat.url, models: ["zero-openai"] });
  await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: u.claude.url,
    models: ["zero-claude"],
    model_mapping: { "zero-claude": "claude-sonnet-4-20250514" },
  });
  await ratios(fx, ["zero-openai", "zero-claude"], 1, 2);
  const user = await fx.user(NEW_USER_QUOTA);
  session.key = (await fx.token(user.id, { remain_quota: NEW_USER_QUOTA })).key;
  return u;
});

const call = (model: string, extra: Record<string, unknown>) =>
  up.fx.call("/v1/chat/completions", session.key, { model, messages: [{ role: "user", content: "Hi" }], ...extra });

describe("max tokens 0 from an OpenAI chat client", () => {
  test("is not forwarded to an OpenAI-type upstream; a set value still is", async () => {
    for (const field of ["max_tokens", "max_completion_tokens"]) {
      const r = await call("zero-openai", { [field]: 0, temperature: 0.5 });
      expect(r.status).toBe(200);
      const sent = up.compat.requests.at(-1)!.body;
      expect(field in sent).toBe(false);
      expect(sent.temperature).toBe(0.5);
    }
    expect((await call("zero-openai", { max_tokens: 64 })).status).toBe(200);
    expect(up.compat.requests.at(-1)!.body.max_tokens).toBe(64);
  });

  test("a call converted to Claude asks for the default, not 0", async () => {
    for (const field of ["max_tokens", "max_completion_tokens"]) {
      const r = await call("zero-claude", { [field]: 0 });
      expect(r.status).toBe(200);
      expect(up.claude.requests.at(-1)!.body.max_tokens).toBeGreaterThan(0);
    }
  });
});
