// The Vercel AI SDK, unchanged, through every channel kind: openai() (the Responses API), openai.chat()
// (chat completions), anthropic() and google(), each with generateText, streamText, a tool loop of several
// steps and generateObject, against one mock upstream per wire format. Each cell checks what the client got,
// what reached the upstream, and that the gateway billed every answered call at the upstream's usage.
import { describe, expect, test } from "bun:test";
import { generateObject, generateText, stepCountIs, streamText, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { z } from "zod";
import { agentGateway, expectBilled, KINDS, type Kind, type Lane } from "./harness.ts";

// generateObject is deprecated in favour of generateText with an output: it is still what many apps call.
(globalThis as any).AI_SDK_LOG_WARNINGS = false;
const gw = agentGateway();

const PROVIDERS = ["openai-responses", "openai-chat", "anthropic", "google"] as const;
type Provider = (typeof PROVIDERS)[number];

/** The model each provider asks for (priced in the harness; the channel serves it under that name). */
const MODEL: Record<Provider, string> = {
  "openai-responses": "gpt-5.1",
  "openai-chat": "gpt-4.1-mini",
  anthropic: "claude-sonnet-4-5-20250929",
  google: "gemini-2.5-flash",
};

function modelFor(provider: Provider, lane: Lane) {
  const name = MODEL[provider];
  if (provider === "openai-responses") return createOpenAI({ baseURL: `${lane.base}/v1`, apiKey: lane.key })(name);
  if (provider === "openai-chat") return createOpenAI({ baseURL: `${lane.base}/v1`, apiKey: lane.key }).chat(name);
  if (provider === "anthropic") return createAnthropic({ baseURL: `${lane.base}/v1`, apiKey: lane.key })(name);
  return createGoogleGenerativeAI({ baseURL: `${lane.base}/v1beta`, apiKey: lane.key })(name);
}

/** The path a provider's calls arrive at on the upstream of each kind. */
function upstreamPath(kind: Kind, provider: Provider, stream: boolean): RegExp {
  if (kind === "claude") return /^\/v1\/messages$/;
  if (kind === "gemini") return stream ? /:streamGenerateContent$/ : /:(generateContent|streamGenerateContent)$/;
  if (kind === "openai" && provider === "openai-responses") return /^\/v1\/responses$/;
  return /^\/v1\/chat\/completions$/;
}

function cell(name: string, provider: Provider, kind: Kind, run: (lane: Lane) => Promise<void>) {
  test(`${name}: ${provider} → ${kind}`, async () => {
    const lane = await gw.lane(kind);
    await run(lane);
    expect(lane.mock.answered().length).toBeGreaterThan(0);
    await expectBilled(gw, lane);
  });
}

const weather = tool({
  description: "The weather in a city",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, forecast: city === "Paris" ? "sunny-21C" : "rain-14C" }),
});

for (const provider of PROVIDERS) {
  describe(provider, () => {
    for (const kind of KINDS) {
      cell("generateText", provider, kind, async (lane) => {
        const r = await generateText({ model: modelFor(provider, lane), prompt: "Say hello.", maxRetries: 0 });
        expect(r.text).toBe(lane.mock.text);
        expect(r.usage.outputTokens).toBe(lane.mock.usage.output);
        const calls = lane.mock.calls();
        expect(calls.map((c) => c.path)).toHaveLength(1);
        expect(calls[0]!.path).toMatch(upstreamPath(kind, provider, false));
        expect(JSON.stringify(calls[0]!.body)).toContain("Say hello.");
      });

      cell("streamText", provider, kind, async (lane) => {
        const r = streamText({
          model: modelFor(provider, lane),
          prompt: "Say hello.",
          maxRetries: 0,
          onError: () => {},
        });
        let text = "";
        for await (const piece of r.textStream) text += piece;
        expect(text).toBe(lane.mock.text);
        expect((await r.usage).outputTokens).toBe(lane.mock.usage.output);
        expect(lane.mock.calls()).toHaveLength(1);
        expect(lane.mock.calls()[0]!.path).toMatch(upstreamPath(kind, provider, true));
      });

      cell("tool loop of three steps", provider, kind, async (lane) => {
        const r = await generateText({
          model: modelFor(provider, lane),
          maxRetries: 0,
          tools: { weather },
          stopWhen: stepCountIs(5),
          prompt: 'Compare the weather. #tool weather {"city":"Paris"} #tool weather {"city":"Rome"}',
        });
        expect(r.steps.map((s) => s.toolCalls.map((c) => (c.input as any).city))).toEqual([["Paris"], ["Rome"], []]);
        expect(r.text).toContain("rain-14C");
        const calls = lane.mock.calls();
        expect(calls).toHaveLength(3);
        // The last request carried both results back to the model.
        const last = JSON.stringify(calls[2]!.body);
        expect(last).toContain("sunny-21C");
        expect(last).toContain("rain-14C");
      });

      cell("generateObject", provider, kind, async (lane) => {
        const r = await generateObject({
          model: modelFor(provider, lane),
          maxRetries: 0,
          prompt: "The weather in Paris as JSON.",
          schema: z.object({ city: z.string(), celsius: z.number(), sunny: z.boolean() }),
        });
        expect(r.object).toEqual({ city: "Paris", celsius: 1.5, sunny: true });
      });
    }
  });
}
