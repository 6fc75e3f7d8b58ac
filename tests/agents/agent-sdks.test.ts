// The OpenAI Agents SDK and LangChain's ChatOpenAI, unchanged, each in both of its modes (the Responses API,
// and chat completions), through every channel kind: a plain answer, a streamed one, a tool loop of several
// steps and structured output, each billed at the upstream's usage.
import { describe, expect, test } from "bun:test";
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool as agentTool } from "@openai/agents";
import { ChatOpenAI } from "@langchain/openai";
import { tool as lcTool } from "@langchain/core/tools";
import { HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import { agentGateway, expectBilled, KINDS, type Kind, type Lane } from "./harness.ts";

// The Agents SDK exports traces to OpenAI by default: nothing may leave this machine.
setTracingDisabled(true);

const gw = agentGateway();
const MODES = [
  { name: "Responses", responses: true, model: "gpt-5.1" },
  { name: "chat", responses: false, model: "gpt-4.1-mini" },
] as const;
type Mode = (typeof MODES)[number];

const TOOL_PROMPT = 'Compare the weather. #tool weather {"city":"Paris"} #tool weather {"city":"Rome"}';
const forecast = (city: string) => (city === "Paris" ? "sunny-21C" : "rain-14C");

/** Each cell runs in a lane of its own; on an OpenAI upstream the calls arrive at the mode's own endpoint. */
function cell(name: string, mode: Mode, kind: Kind, run: (lane: Lane) => Promise<void>) {
  test(`${name} → ${kind}`, async () => {
    const lane = await gw.lane(kind);
    await run(lane);
    expect(lane.mock.answered().length).toBeGreaterThan(0);
    if (kind === "openai")
      for (const c of lane.mock.calls()) expect(c.path).toBe(mode.responses ? "/v1/responses" : "/v1/chat/completions");
    await expectBilled(gw, lane);
  });
}

/** The upstream's last request carried both tool results back. */
function expectResultsSent(lane: Lane, calls: number) {
  const seen = lane.mock.calls();
  expect(seen).toHaveLength(calls);
  const last = JSON.stringify(seen.at(-1)!.body);
  expect(last).toContain("sunny-21C");
  expect(last).toContain("rain-14C");
}

describe("OpenAI Agents SDK", () => {
  for (const mode of MODES) {
    const runner = (lane: Lane) =>
      new Runner({
        modelProvider: new OpenAIProvider({
          apiKey: lane.key,
          baseURL: `${lane.base}/v1`,
          useResponses: mode.responses,
        }),
      });
    for (const kind of KINDS) {
      cell(`${mode.name}: run`, mode, kind, async (lane) => {
        const agent = new Agent({ name: "Greeter", instructions: "Greet.", model: mode.model });
        const r = await runner(lane).run(agent, "Say hello.");
        expect(r.finalOutput).toBe(lane.mock.text);
      });

      cell(`${mode.name}: streamed run`, mode, kind, async (lane) => {
        const agent = new Agent({ name: "Greeter", instructions: "Greet.", model: mode.model });
        const r = await runner(lane).run(agent, "Say hello.", { stream: true });
        let text = "";
        for await (const piece of r.toTextStream()) text += piece;
        await r.completed;
        expect(text).toBe(lane.mock.text);
        expect(r.finalOutput).toBe(lane.mock.text);
      });

      cell(`${mode.name}: tool loop`, mode, kind, async (lane) => {
        const cities: string[] = [];
        const weather = agentTool({
          name: "weather",
          description: "The weather in a city",
          parameters: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            cities.push(city);
            return forecast(city);
          },
        });
        const agent = new Agent({
          name: "Forecaster",
          instructions: "Use the tools.",
          model: mode.model,
          tools: [weather],
        });
        const r = await runner(lane).run(agent, TOOL_PROMPT, { maxTurns: 5 });
        expect(cities).toEqual(["Paris", "Rome"]);
        expect(r.finalOutput).toContain("rain-14C");
        expectResultsSent(lane, 3);
      });

      cell(`${mode.name}: structured output`, mode, kind, async (lane) => {
        const agent = new Agent({
          name: "Reporter",
          instructions: "Report.",
          model: mode.model,
          outputType: z.object({ city: z.string(), celsius: z.number() }),
        });
        const r = await runner(lane).run(agent, "The weather in Paris.");
        expect(r.finalOutput).toEqual({ city: "Paris", celsius: 1.5 });
      });
    }
  }
});

describe("LangChain ChatOpenAI", () => {
  for (const mode of MODES) {
    const chat = (lane: Lane) =>
      new ChatOpenAI({
        model: mode.model,
        apiKey: lane.key,
        configuration: { baseURL: `${lane.base}/v1` },
        useResponsesApi: mode.responses,
        maxRetries: 0,
      });
    for (const kind of KINDS) {
      cell(`useResponsesApi ${mode.responses}: invoke`, mode, kind, async (lane) => {
        const m = await chat(lane).invoke("Say hello.");
        expect(m.text).toBe(lane.mock.text);
        expect(m.usage_metadata?.output_tokens).toBe(lane.mock.usage.output);
      });

      cell(`useResponsesApi ${mode.responses}: stream`, mode, kind, async (lane) => {
        let text = "";
        for await (const chunk of await chat(lane).stream("Say hello.")) text += chunk.text;
        expect(text).toBe(lane.mock.text);
      });

      cell(`useResponsesApi ${mode.responses}: tool loop`, mode, kind, async (lane) => {
        const weather = lcTool(async ({ city }: { city: string }) => forecast(city), {
          name: "weather",
          description: "The weather in a city",
          schema: z.object({ city: z.string() }),
        });
        const model = chat(lane).bindTools([weather]);
        const messages: BaseMessage[] = [new HumanMessage(TOOL_PROMPT)];
        const cities: string[] = [];
        for (let step = 0; step < 5; step++) {
          const reply = await model.invoke(messages);
          messages.push(reply);
          if (!reply.tool_calls?.length) break;
          for (const call of reply.tool_calls) {
            cities.push(call.args.city);
            messages.push(new ToolMessage({ tool_call_id: call.id!, content: forecast(call.args.city) }));
          }
        }
        expect(cities).toEqual(["Paris", "Rome"]);
        expect(messages.at(-1)!.text).toContain("rain-14C");
        expectResultsSent(lane, 3);
      });

      cell(`useResponsesApi ${mode.responses}: withStructuredOutput`, mode, kind, async (lane) => {
        const out = await chat(lane)
          .withStructuredOutput(z.object({ city: z.string(), celsius: z.number() }))
          .invoke("The weather in Paris.");
        expect(out).toEqual({ city: "Paris", celsius: 1.5 });
      });
    }
  }
});
