// The official openai npm client against a listening gateway: what real applications will do.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { relayFixture, logsOf, type RelayFixture } from "../relay/fixtures.ts";

let fx: RelayFixture;
let client: OpenAI;
let server: { stop(force?: boolean): Promise<void> | void };
let userId: number;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  const app = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
  server = { stop: async (f) => void (await app.stop(f)) };
  const models = ["compat-chat", "compat-cmp", "compat-emb"];
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 1]))));
  await fx.option("CompletionRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 1]))));
  await fx.channel({ base_url: fx.mock.url, models });
  const user = await fx.user(10_000_000);
  userId = user.id;
  const token = await fx.token(user.id);
  // The test preload registers a DOM globally, which the SDK would take for a browser.
  client = new OpenAI({
    apiKey: token.key,
    baseURL: `http://127.0.0.1:${app.server!.port}/v1`,
    maxRetries: 0,
    dangerouslyAllowBrowser: true,
  });
});

afterAll(async () => {
  await server.stop(true);
  await fx.close();
});

describe("openai SDK", () => {
  test("chat, plain", async () => {
    const r = await client.chat.completions.create({
      model: "compat-chat",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(r.choices[0].message.content).toBe("Hello world!");
    expect(r.usage?.total_tokens).toBe(30);
  });

  test("chat, streamed with usage", async () => {
    const stream = await client.chat.completions.create({
      model: "compat-chat",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hello" }],
    });
    let text = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("Hello world!");
    expect(usage?.completion_tokens).toBe(20);
  });

  test("chat with tools, plain and streamed", async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: "function",
        function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
      },
    ];
    const r = await client.chat.completions.create({
      model: "compat-chat",
      tools,
      messages: [{ role: "user", content: "weather?" }],
    });
    const call = r.choices[0].message.tool_calls?.[0] as any;
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });
    const stream = client.chat.completions.stream({
      model: "compat-chat",
      tools,
      messages: [{ role: "user", content: "weather?" }],
    });
    const final = await stream.finalChatCompletion();
    expect((final.choices[0].message.tool_calls![0] as any).function.arguments).toBe('{"city":"Paris"}');
  });

  test("completions and embeddings", async () => {
    const c = await client.completions.create({ model: "compat-cmp", prompt: "once" });
    expect(c.choices[0].text).toBe("Hello world!");
    const e = await client.embeddings.create({ model: "compat-emb", input: "vector me" });
    expect(e.data[0].embedding).toHaveLength(3);
  });

  test("models list and retrieve", async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids.sort()).toEqual(["compat-chat", "compat-cmp", "compat-emb"]);
    expect((await client.models.retrieve("compat-chat")).id).toBe("compat-chat");
  });

  test("errors arrive as typed SDK errors with the gateway's message", async () => {
    const bad = new OpenAI({
      apiKey: "sk-wrong",
      baseURL: client.baseURL,
      maxRetries: 0,
      dangerouslyAllowBrowser: true,
    });
    const e1 = await bad.chat.completions
      .create({ model: "compat-chat", messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(e1).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(e1.status).toBe(401);
    const e2 = await client.chat.completions
      .create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(e2).toBeInstanceOf(OpenAI.NotFoundError);
    expect(e2.status).toBe(404);
    expect(e2.code).toBe("model_not_found");
    expect(e2.message).toContain("the model 'no-such-model' does not exist or you do not have access to it");
    const e3 = await client.models.retrieve("nope").catch((e) => e);
    expect(e3).toBeInstanceOf(OpenAI.NotFoundError);
  });

  test("every served call is logged", async () => {
    await fx.flush();
    const logs = await logsOf(fx, userId);
    // chat ×2, tools ×2, completions, embeddings; listing models and failed calls cost nothing.
    expect(logs.length).toBe(6);
    expect(logs.every((l) => l.type === 2 && l.quota > 0)).toBe(true);
  });
});
