// The conversations the gateway keeps for the Responses API on channels without it, in the cache (memory,
// or Redis when configured, shared by every instance): previous_response_id continues one, only its owner
// may, store: false keeps nothing, and the earlier turns reach the upstream as chat messages; an
// item_reference to one of its output items stands for that item.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { relayFixture, type RelayFixture } from "../relay/fixtures.ts";
import { CLAUDE_TEXT, startClaudeUpstream } from "../mocks/claude-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";

const caches: { name: string; redis: boolean }[] = [{ name: "memory", redis: false }];
if (process.env.REDIS_CONN_STRING) caches.push({ name: "redis", redis: true });

for (const cache of caches) {
  describe(`converted responses kept in the ${cache.name} cache`, () => {
    let fx: RelayFixture;
    let claude: MockUpstream;
    let server: ReturnType<typeof Bun.serve>;
    const client = (key: string) =>
      new OpenAI({
        apiKey: key,
        baseURL: `http://127.0.0.1:${server.port}/v1`,
        maxRetries: 0,
        dangerouslyAllowBrowser: true,
      });
    let alice: OpenAI;
    let bob: OpenAI;

    beforeAll(async () => {
      fx = await relayFixture("sqlite", {}, {}, cache.redis);
      claude = startClaudeUpstream();
      await fx.option("ModelRatio", JSON.stringify({ "rs-claude": 1, "rs-broken": 1 }));
      await fx.channel({
        type: 14,
        key: "claude-key",
        base_url: claude.url,
        models: ["rs-claude", "rs-broken"],
        model_mapping: { "rs-claude": "claude-sonnet-4-20250514", "rs-broken": "claude-sonnet-4-streamerror" },
      });
      server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
      for (const who of ["alice", "bob"] as const) {
        const user = await fx.user(5_000_000);
        const c = client((await fx.token(user.id)).key);
        if (who === "alice") alice = c;
        else bob = c;
      }
    });
    afterAll(async () => {
      server.stop(true);
      claude.stop();
      await fx.close();
    });

    test("three turns through previous_response_id: the upstream gets the whole conversation, tool calls included", async () => {
      const tools = [
        {
          type: "function" as const,
          name: "get_weather",
          parameters: { type: "object", properties: { city: { type: "string" } } },
          strict: false,
        },
      ];
      const first = await alice.responses.create({
        model: "rs-claude",
        input: "Weather in Paris?",
        tools,
        instructions: "Be brief.",
      });
      const call = first.output.find((o) => o.type === "function_call") as any;
      expect(call.name).toBe("get_weather");
      const second = await alice.responses.create({
        model: "rs-claude",
        previous_response_id: first.id,
        tools,
        input: [{ type: "function_call_output", call_id: call.call_id, output: "18 degrees" }],
      });
      expect(second.output_text).toBe(CLAUDE_TEXT);
      const third = await alice.responses.create({
        model: "rs-claude",
        previous_response_id: second.id,
        input: "Thanks!",
      });
      expect(third.previous_response_id).toBe(second.id);
      const sent = claude.last().body;
      // Instructions are not carried over (OpenAI's rule): only the last request's would be sent.
      expect(sent.system).toBeUndefined();
      expect(
        sent.messages.map((m: any) => [
          m.role,
          (Array.isArray(m.content) ? m.content : [{ type: "text", text: m.content }]).map((b: any) => b.type),
        ]),
      ).toEqual([
        // Claude's first answer was "Let me check." and the call: one message item and one function_call item.
        ["user", ["text"]],
        ["assistant", ["text", "tool_use"]],
        ["user", ["tool_result"]],
        ["assistant", ["text"]],
        ["user", ["text"]],
      ]);
      expect(sent.messages[2].content[0]).toMatchObject({
        type: "tool_result",
        tool_use_id: call.call_id,
        content: "18 degrees",
      });
    });

    test("another user cannot continue, read or delete it; store: false keeps nothing", async () => {
      const mine = await alice.responses.create({ model: "rs-claude", input: "Secret plans" });
      const err: any = await bob.responses
        .create({ model: "rs-claude", input: "Go on", previous_response_id: mine.id })
        .catch((e) => e);
      expect(err.status).toBe(400);
      expect(err.message).toContain(`previous_response_id '${mine.id}' is not known to this gateway`);
      expect(((await bob.responses.retrieve(mine.id).catch((e) => e)) as any).status).toBe(404);
      expect(((await bob.responses.delete(mine.id).catch((e) => e)) as any).status).toBe(404);
      expect((await alice.responses.retrieve(mine.id)).id).toBe(mine.id);
      const unkept = await alice.responses.create({ model: "rs-claude", input: "Forget me", store: false });
      expect(((await alice.responses.retrieve(unkept.id).catch((e) => e)) as any).status).toBe(404);
    });

    test("an upstream error mid-stream reaches the SDK as an error (scrubbed), not as a completed response", async () => {
      const stream = alice.responses.stream({ model: "rs-broken", input: "Hi" });
      const err: any = await stream.finalResponse().catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err.message).toContain("Overloaded");
      expect(err.message).not.toContain("claude-key");
    });

    test("a streamed response is kept too", async () => {
      const final = await alice.responses.stream({ model: "rs-claude", input: "Stream me" }).finalResponse();
      await alice.responses.create({ model: "rs-claude", input: "And?", previous_response_id: final.id });
      expect(JSON.stringify(claude.last().body.messages)).toContain("Stream me");
    });

    test("an item_reference to a kept output item is that item, for its owner only", async () => {
      const first = await alice.responses.create({ model: "rs-claude", input: "Say something" });
      const ref = { type: "item_reference", id: first.output[0]!.id } as any;
      await alice.responses.create({
        model: "rs-claude",
        input: [{ role: "user", content: "Say something" }, ref, { role: "user", content: "Again" }],
      });
      expect(claude.last().body.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "user"]);
      expect(JSON.stringify(claude.last().body.messages[1])).toContain(CLAUDE_TEXT);
      const err: any = await bob.responses.create({ model: "rs-claude", input: [ref] }).catch((e) => e);
      expect(err.status).toBe(400);
      expect(err.message).toContain(`item_reference '${ref.id}' is not known to this gateway`);
    });
  });
}
