import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  toGeminiRequest,
  fromGeminiResponse,
  GeminiStreamToOpenAI,
  thinkingFromModel,
  safetySettings,
  cleanSchema,
  usageFromGemini,
  GEMINI_THINKING_BUDGET_CAP,
  type GeminiSettings,
} from "../../server/relay/formats/gemini/upstream.ts";
import { geminiAdaptor, geminiVersion } from "../../server/relay/providers/gemini/index.ts";
import { startGeminiUpstream, GEMINI_TEXT } from "../mocks/gemini-upstream.ts";
import { serve, type MockUpstream } from "../mocks/recorder.ts";
import { chunksOf, contentOf, makeCall, run, site } from "./harness.ts";
import { countTokensNow } from "../../server/relay/tokenizer.ts";
import { SseReader } from "../../server/relay/formats/sse.ts";
import { LOCAL_FETCHES } from "../helpers/outbound.ts";

const settings: GeminiSettings = {
  safety: { default: "OFF" },
  thinkingAdapter: true,
  thinkingPercentage: 0.6,
  imageModels: ["gemini-2.0-flash-exp-image-generation"],
};
const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
      $schema: "http://json-schema.org/draft-07/schema#",
    },
  },
};

describe("OpenAI → Gemini request", () => {
  test("system instruction, roles, merged turns, images, sampling", () => {
    const { model, body } = toGeminiRequest(
      {
        model: "gemini-2.5-flash",
        temperature: 0.4,
        top_p: 0.8,
        max_tokens: 256,
        stop: ["END"],
        messages: [
          { role: "system", content: "Be brief." },
          {
            role: "user",
            content: [
              { type: "text", text: "What is this?" },
              { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0" } },
            ],
          },
          { role: "assistant", content: "A logo." },
          { role: "user", content: "Sure?" },
        ],
      },
      settings,
    );
    expect(model).toBe("gemini-2.5-flash");
    expect(body.systemInstruction).toEqual({ parts: [{ text: "Be brief." }] });
    expect(body.contents).toEqual([
      { role: "user", parts: [{ text: "What is this?" }, { inlineData: { mimeType: "image/png", data: "iVBORw0" } }] },
      { role: "model", parts: [{ text: "A logo." }] },
      { role: "user", parts: [{ text: "Sure?" }] },
    ]);
    expect(body.generationConfig).toEqual({
      temperature: 0.4,
      topP: 0.8,
      maxOutputTokens: 256,
      stopSequences: ["END"],
    });
  });

  test("remote images use the downloaded bytes", () => {
    const images = new Map([["https://x.test/a.jpg", { mimeType: "image/jpeg", data: "AAAA" }]]);
    const { body } = toGeminiRequest(
      {
        model: "m",
        messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x.test/a.jpg" } }] }],
      },
      settings,
      images,
    );
    expect(body.contents[0]!.parts).toEqual([{ inlineData: { mimeType: "image/jpeg", data: "AAAA" } }]);
  });

  test("tools, function calls and responses (named from the matching call), cleaned schemas, tool_choice", () => {
    const { body } = toGeminiRequest(
      {
        model: "m",
        tools: [weatherTool],
        tool_choice: { type: "function", function: { name: "get_weather" } },
        messages: [
          { role: "user", content: "Weather?" },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              { id: "call_7", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
            ],
          },
          { role: "tool", tool_call_id: "call_7", content: '{"temp":18}' },
          { role: "tool", tool_call_id: "call_unknown", content: "plain text" },
        ],
      },
      settings,
    );
    expect(body.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: "get_weather",
            description: "Weather",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          },
        ],
      },
    ]);
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } });
    expect(body.contents[1]).toEqual({
      role: "model",
      parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } } }],
    });
    expect(body.contents[2]!.parts).toEqual([
      { functionResponse: { name: "get_weather", response: { temp: 18 } } },
      { functionResponse: { name: "function", response: { content: "plain text" } } },
    ]);
  });

  test("safety settings: default threshold for every category, per-category overrides", () => {
    const s = safetySettings({ default: "BLOCK_NONE", HARM_CATEGORY_HARASSMENT: "BLOCK_ONLY_HIGH" });
    expect(s.length).toBe(5);
    expect(s.find((x) => x.category === "HARM_CATEGORY_HARASSMENT")!.threshold).toBe("BLOCK_ONLY_HIGH");
    expect(s.find((x) => x.category === "HARM_CATEGORY_HATE_SPEECH")!.threshold).toBe("BLOCK_NONE");
  });

  test("thinking adapter: percentage of max tokens, capped at 24576; explicit and disabled budgets", () => {
    expect(thinkingFromModel("gemini-2.5-flash-thinking", 1000, settings)).toEqual({
      model: "gemini-2.5-flash",
      thinking: { thinkingBudget: 600, includeThoughts: true },
    });
    expect(thinkingFromModel("gemini-2.5-flash-thinking", 100000, settings).thinking!.thinkingBudget).toBe(
      GEMINI_THINKING_BUDGET_CAP,
    );
    expect(thinkingFromModel("gemini-2.5-flash-thinking-512", undefined, settings).thinking).toEqual({
      thinkingBudget: 512,
      includeThoughts: true,
    });
    expect(thinkingFromModel("gemini-2.5-flash-nothinking", undefined, settings)).toEqual({
      model: "gemini-2.5-flash",
      thinking: { thinkingBudget: 0 },
    });
    expect(thinkingFromModel("gemini-2.5-flash-thinking", 1000, { ...settings, thinkingAdapter: false })).toEqual({
      model: "gemini-2.5-flash-thinking",
    });
  });

  test("image models ask for image output", () => {
    expect(
      toGeminiRequest(
        { model: "gemini-2.0-flash-exp-image-generation", messages: [{ role: "user", content: "draw" }] },
        settings,
      ).body.generationConfig!.responseModalities,
    ).toEqual(["TEXT", "IMAGE"]);
  });

  test("cleanSchema keeps property names that look like dropped keywords", () => {
    expect(cleanSchema({ type: "object", properties: { strict: { type: "boolean", $schema: "x" } } })).toEqual({
      type: "object",
      properties: { strict: { type: "boolean" } },
    });
  });

  test("API version per model from gemini.version_settings", () => {
    const s = site({ "gemini.version_settings": JSON.stringify({ default: "v1beta", "gemini-1.0-pro": "v1" }) });
    expect(geminiVersion({ site: s }, "gemini-1.0-pro")).toBe("v1");
    expect(geminiVersion({ site: s }, "gemini-2.5-flash")).toBe("v1beta");
  });
});

describe("Gemini → OpenAI response", () => {
  test("text, thoughts, function calls, finish reasons and usage with thoughts billed as completion", () => {
    const r = fromGeminiResponse(
      {
        candidates: [
          {
            content: {
              role: "model",
              parts: [
                { text: "Plan.", thought: true },
                { text: "Calling." },
                { functionCall: { name: "f", args: { a: 1 } } },
              ],
            },
            finishReason: "STOP",
            index: 0,
          },
        ],
        usageMetadata: {
          promptTokenCount: 10,
          candidatesTokenCount: 4,
          thoughtsTokenCount: 6,
          cachedContentTokenCount: 2,
          totalTokenCount: 20,
        },
      },
      "gemini-x",
    );
    const msg = r.choices[0]!.message;
    expect(msg.content).toBe("Calling.");
    expect(msg.reasoning_content).toBe("Plan.");
    expect(msg.tool_calls![0]!.function).toEqual({ name: "f", arguments: '{"a":1}' });
    expect(msg.tool_calls![0]!.id).toMatch(/^call_/);
    expect(r.choices[0]!.finish_reason).toBe("tool_calls");
    expect(r.usage).toEqual({
      prompt_tokens: 10,
      completion_tokens: 10,
      total_tokens: 20,
      prompt_tokens_details: { cached_tokens: 2 },
      completion_tokens_details: { reasoning_tokens: 6 },
    });
    const fin = (finishReason: string) =>
      fromGeminiResponse({ candidates: [{ content: { parts: [{ text: "" }] }, finishReason }] }, "m").choices[0]!
        .finish_reason;
    expect([fin("MAX_TOKENS"), fin("SAFETY"), fin("STOP")]).toEqual(["length", "content_filter", "stop"]);
  });

  test("a blocked prompt answers an empty content_filter choice", () => {
    expect(fromGeminiResponse({ promptFeedback: { blockReason: "SAFETY" } }, "m").choices[0]!.finish_reason).toBe(
      "content_filter",
    );
  });

  test("stream chunks keep the last usageMetadata", () => {
    const s = new GeminiStreamToOpenAI("m");
    s.push({ candidates: [{ content: { parts: [{ text: "a" }] } }], usageMetadata: { promptTokenCount: 3 } });
    s.push({
      candidates: [{ content: { parts: [{ text: "b" }] }, finishReason: "STOP" }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 },
    });
    expect(s.usage).toEqual(usageFromGemini({ promptTokenCount: 3, candidatesTokenCount: 2 }));
    expect(s.receivedText).toBe("ab");
  });
});

describe("Gemini adaptor against the mock upstream", () => {
  let up: MockUpstream;
  let images: MockUpstream;
  beforeAll(() => {
    up = startGeminiUpstream();
    images = serve(
      () => new Response(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), { headers: { "content-type": "image/png" } }),
    );
  });
  afterAll(() => {
    up.stop();
    images.stop();
  });
  const call = (p: Partial<Parameters<typeof makeCall>[0]> = {}) =>
    makeCall({
      baseUrl: up.url,
      key: "gemini-key",
      upstreamModel: "gemini-2.5-flash",
      requestModel: "gemini-2.5-flash",
      ...p,
    });

  test("non-stream chat: URL, key header, safety settings, OpenAI answer and usage", async () => {
    const o = await run(geminiAdaptor, call(), { model: "x", messages: [{ role: "user", content: "Hi" }] });
    expect(o.status).toBe(200);
    const rec = up.last();
    expect(rec.path).toBe("/v1beta/models/gemini-2.5-flash:generateContent");
    expect(rec.headers["x-goog-api-key"]).toBe("gemini-key");
    expect(rec.body.safetySettings.every((s: any) => s.threshold === "OFF")).toBe(true);
    expect(o.body.choices[0].message.content).toBe(GEMINI_TEXT);
    expect(o.usage).toEqual({ prompt_tokens: 9, completion_tokens: 7, total_tokens: 16, cached_tokens: 0 });
  });

  test("remote image URLs are downloaded and sent inline", async () => {
    // The image server is local: the outbound guard lets the gateway reach it only when the options say so.
    await run(geminiAdaptor, call({ site: site(LOCAL_FETCHES) }), {
      model: "x",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "?" },
            { type: "image_url", image_url: { url: images.url + "/cat.png" } },
          ],
        },
      ],
    });
    expect(up.last().body.contents[0].parts[1]).toEqual({
      inlineData: { mimeType: "image/png", data: Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString("base64") },
    });
  });

  test("an unreachable image URL is a 400 for the client, before any upstream call", async () => {
    const before = up.requests.length;
    await expect(
      run(geminiAdaptor, call({ site: site(LOCAL_FETCHES) }), {
        model: "x",
        messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "http://127.0.0.1:1/x.png" } }] }],
      }),
    ).rejects.toMatchObject({ status: 400 });
    expect(up.requests.length).toBe(before);
  });

  test("stream with tools: SSE endpoint, function call as a tool call, finish, usage chunk", async () => {
    const o = await run(geminiAdaptor, call({ stream: true, clientWantsUsage: true }), {
      model: "x",
      stream: true,
      tools: [weatherTool],
      messages: [{ role: "user", content: "Weather?" }],
    });
    expect(up.last().path).toBe("/v1beta/models/gemini-2.5-flash:streamGenerateContent");
    expect(up.last().search).toBe("?alt=sse");
    const chunks = chunksOf(o);
    const calls = chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []);
    expect(calls.length).toBe(1);
    expect(JSON.parse(calls[0].function.arguments)).toEqual({ city: "Paris" });
    expect(chunks.some((c) => c.choices?.[0]?.finish_reason === "tool_calls")).toBe(true);
    expect(chunks[chunks.length - 1].usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 7 });
    expect(o.usage?.completion_tokens).toBe(7);
  });

  test("stream text", async () => {
    const o = await run(geminiAdaptor, call({ stream: true }), {
      model: "x",
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(contentOf(o)).toBe("Hello from Gemini.");
    expect(o.text.endsWith("data: [DONE]\n\n")).toBe(true);
  });

  test("embeddings through batchEmbedContents", async () => {
    const o = await run(
      geminiAdaptor,
      call({ mode: "embeddings", upstreamModel: "text-embedding-004", requestModel: "text-embedding-004" }),
      { model: "x", input: ["a", "b"], dimensions: 3 },
    );
    const rec = up.last();
    expect(rec.path).toBe("/v1beta/models/text-embedding-004:batchEmbedContents");
    expect(rec.body.requests).toEqual([
      { model: "models/text-embedding-004", content: { parts: [{ text: "a" }] }, outputDimensionality: 3 },
      { model: "models/text-embedding-004", content: { parts: [{ text: "b" }] }, outputDimensionality: 3 },
    ]);
    expect(o.body.object).toBe("list");
    expect(o.body.data.map((d: any) => d.index)).toEqual([0, 1]);
    expect(o.body.data[1].embedding[0]).toBeCloseTo(0.2);
  });

  test("embeddings usage: Gemini reports none, so the input is counted for the client and the bill", async () => {
    const input = ["The quick brown fox jumps over the lazy dog.", "Embeddings need usage too."];
    const o = await run(
      geminiAdaptor,
      call({ mode: "embeddings", upstreamModel: "text-embedding-004", requestModel: "text-embedding-004" }),
      { model: "x", input },
    );
    const n = countTokensNow(input[0]!) + countTokensNow(input[1]!);
    expect(n).toBeGreaterThan(10);
    expect(o.body.usage).toEqual({ prompt_tokens: n, total_tokens: n });
    expect(o.usage).toEqual({ prompt_tokens: n, completion_tokens: 0, total_tokens: n });
    const single = await run(geminiAdaptor, call({ mode: "embeddings", upstreamModel: "text-embedding-004" }), {
      model: "x",
      input: input[0],
    });
    expect(single.body.usage.prompt_tokens).toBe(countTokensNow(input[0]!));
  });

  test("a Gemini client's body passes through unchanged; chunks pass verbatim", async () => {
    const body = { contents: [{ role: "user", parts: [{ text: "Hi" }] }], generationConfig: { temperature: 1 } };
    const o = await run(geminiAdaptor, call({ format: "gemini", stream: true }), body);
    expect(up.last().body).toEqual(body);
    expect(o.events.map((e) => e.data.candidates[0].content.parts[0].text).join("")).toBe("Hello from Gemini.");
    expect(o.usage?.prompt_tokens).toBe(9);
  });

  test("upstream errors are read from Gemini error bodies", async () => {
    const o = await run(geminiAdaptor, call({ key: "bad" }), {
      model: "x",
      messages: [{ role: "user", content: "x" }],
    });
    expect(o.status).toBe(400);
    expect(o.error).toBe("API key not valid. Please pass a valid API key.");
  });

  test("model list", async () => {
    expect(await geminiAdaptor.fetchModels!(up.url, "gemini-key")).toEqual(["gemini-2.5-flash", "text-embedding-004"]);
  });
});

describe("image download guard", () => {
  test("local and cloud metadata addresses are refused by default; a redirect is checked again", async () => {
    const { fetchImage } = await import("../../server/relay/providers/gemini/images.ts");
    await expect(fetchImage("http://169.254.169.254/latest/meta-data/")).rejects.toThrow("cloud metadata address");
    await expect(fetchImage("http://metadata.google.internal/computeMetadata/v1/")).rejects.toThrow(
      "cloud metadata address",
    );
    await expect(fetchImage("http://127.0.0.1/a.png")).rejects.toThrow("private or local address");
    await expect(fetchImage("file:///etc/passwd")).rejects.toThrow("unsupported image URL scheme");
    const redirecting = serve(
      () => new Response(null, { status: 302, headers: { location: "http://169.254.169.254/" } }),
    );
    await expect(fetchImage(redirecting.url + "/a.png", site(LOCAL_FETCHES))).rejects.toThrow(
      "169.254.169.254 is a cloud metadata address",
    );
    redirecting.stop();
  });
});

describe("a mid-stream error reaches the client scrubbed", () => {
  const key = "AIzaSyGEMINISECRETKEY0123456789";
  const baseUrl = "http://10.7.7.7:8443";
  const data = JSON.stringify({
    error: {
      code: 503,
      message: `quota for key ${key} at ${baseUrl}/v1beta (see https://internal.example/x)`,
      status: "UNAVAILABLE",
      details: [{ reason: "internal" }],
    },
  });
  const ev = { data, raw: `data: ${data}\n\n` };
  const parsed = (out: string) => JSON.parse(new SseReader().push(new TextEncoder().encode(out))[0]!.data);
  const clean = (out: string) => {
    for (const secret of [key, "10.7.7.7", "internal.example"]) expect(out).not.toContain(secret);
    expect(out).toContain("quota for key");
  };

  test("OpenAI client: an OpenAI error chunk", () => {
    const out = geminiAdaptor.streamMapper(makeCall({ baseUrl, key, stream: true })).event(ev);
    clean(out);
    expect(parsed(out)).toEqual({ error: { message: expect.any(String), type: "upstream_error" } });
  });

  test("Gemini client: a Gemini error with code and status, nothing else", () => {
    const out = geminiAdaptor.streamMapper(makeCall({ baseUrl, key, stream: true, format: "gemini" })).event(ev);
    clean(out);
    expect(parsed(out)).toEqual({ error: { code: 503, message: expect.any(String), status: "UNAVAILABLE" } });
  });
});

describe("stream usage when the stream ends before its final chunk", () => {
  const thought = Array.from({ length: 30 }, (_, i) => ` idea${i}`).join("");
  const pieces = Array.from({ length: 40 }, (_, i) => ` word${i}`);
  // Intermediate chunks report the prompt only; the completion count comes with the finishing chunk.
  const chunks = [
    {
      candidates: [{ content: { parts: [{ text: thought, thought: true }], role: "model" } }],
      usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
    },
    ...pieces.map((t) => ({
      candidates: [{ content: { parts: [{ text: t }], role: "model" } }],
      usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
    })),
  ];
  const ev = (c: object) => ({ data: JSON.stringify(c), raw: `data: ${JSON.stringify(c)}\n\n` });

  test("the converter's generated text includes thoughts", () => {
    const s = new GeminiStreamToOpenAI("m");
    for (const c of chunks) s.push(c);
    expect(s.receivedText).toBe(thought + pieces.join(""));
  });

  for (const format of ["openai", "gemini"] as const) {
    test(`${format} client: a cut stream bills the counted text, not the intermediate count`, () => {
      const m = geminiAdaptor.streamMapper(makeCall({ baseUrl: "http://x", key: "k", stream: true, format }));
      for (const c of chunks) m.event(ev(c));
      const u = m.usage()!;
      expect(u.prompt_tokens).toBe(9);
      expect(u.completion_tokens).toBe(countTokensNow(thought + pieces.join("")));
      expect(u.total_tokens).toBe(9 + u.completion_tokens);
    });
  }

  test("the finishing chunk's count is trusted as reported", () => {
    const m = geminiAdaptor.streamMapper(makeCall({ baseUrl: "http://x", key: "k", stream: true }));
    for (const c of chunks) m.event(ev(c));
    m.event(
      ev({
        candidates: [{ content: { parts: [{ text: "." }], role: "model" }, finishReason: "STOP" }],
        usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 50, totalTokenCount: 59 },
      }),
    );
    expect(m.usage()!.completion_tokens).toBe(50);
  });

  test("a finishing chunk without a completion count still bills the counted text", () => {
    const m = geminiAdaptor.streamMapper(makeCall({ baseUrl: "http://x", key: "k", stream: true }));
    for (const c of chunks) m.event(ev(c));
    m.event(
      ev({
        candidates: [{ content: { parts: [{ text: "." }], role: "model" }, finishReason: "STOP" }],
        usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
      }),
    );
    expect(m.usage()!.completion_tokens).toBe(countTokensNow(thought + pieces.join("") + "."));
  });
});
