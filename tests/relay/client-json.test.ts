// The client's JSON text goes upstream as it came (formats/client-json.ts) whenever the gateway would send the
// same object: no re-serialising of a long conversation on the event loop, and numbers JavaScript cannot hold
// (a 64-bit seed) reach the upstream intact. Whatever the gateway changes (a mapped model, a system prompt, a
// param_override, the response cache's body directive) still reaches the upstream changed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";
import { jsonText, withModel, withUsageRequest } from "../../server/relay/formats/client-json.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { JoinedText, configureStreamClient } from "../../server/infra/stream-client.ts";

let fx: RelayFixture;
let key: string;
let claude: MockUpstream;
let gemini: MockUpstream;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  claude = startClaudeUpstream();
  gemini = startGeminiUpstream();
  await fx.option(
    "ModelRatio",
    JSON.stringify({
      "cj-plain": 1,
      "cj-mapped": 1,
      "cj-prompt": 1,
      "cj-override": 1,
      "cj-cached": 1,
      "claude-sonnet-4-20250514": 1,
      "cj-claude": 1,
      "gemini-2.5-flash": 1,
    }),
  );
  await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: claude.url,
    models: ["claude-sonnet-4-20250514", "cj-claude"],
    model_mapping: { "cj-claude": "claude-sonnet-4-20250514" },
  });
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: ["gemini-2.5-flash"] });
  await fx.channel({ type: 1, base_url: fx.mock.url, models: ["cj-plain", "cj-cached"] });
  await fx.channel({
    type: 1,
    base_url: fx.mock.url,
    models: ["cj-mapped"],
    model_mapping: { "cj-mapped": "upstream-model" },
  });
  await fx.channel({ type: 1, base_url: fx.mock.url, models: ["cj-prompt"], setting: { system_prompt: "Be brief." } });
  await fx.channel({ type: 1, base_url: fx.mock.url, models: ["cj-override"], param_override: { temperature: 0.1 } });
  key = (await fx.token((await fx.user(100_000_000)).id)).key;
});
afterAll(async () => {
  claude.stop();
  gemini.stop();
  await fx.close();
});

/** Posts `text` as it is (fx.call would serialise an object). */
const post = (text: string, headers: Record<string, string> = {}, path = "/v1/chat/completions") =>
  fx.ctx.app.handle(
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      body: text,
    }),
  );
const last = () => fx.mock.seen.at(-1)!;

/** A body whose text JSON.stringify would not write back: spacing, escapes, a number past 2^53. */
const odd = (model: string, more = "") =>
  `{ "model" : "${model}",\n  "messages": [ {"role":"user", "content":"caf\\u00e9 \\"hi\\""} ],\n  "seed": 12345678901234567890${more} }\n`;

describe("the client's JSON text upstream", () => {
  test("a call the gateway changes nothing in goes upstream byte for byte", async () => {
    const text = odd("cj-plain");
    const res = await post(text);
    expect(res.status).toBe(200);
    expect(last().raw).toBe(text);
    expect(last().body.messages[0].content).toBe('café "hi"');
  });

  test("a stream gets its usage request written into the client's text; one that asked for usage goes as it came", async () => {
    const text = odd("cj-plain", `, "stream": true`);
    const res = await post(text);
    expect(res.status).toBe(200);
    await res.text();
    expect(last().raw).toBe(
      `{ "model" : "cj-plain",\n  "messages": [ {"role":"user", "content":"caf\\u00e9 \\"hi\\""} ],\n  "seed": 12345678901234567890, "stream": true ,"stream_options":{"include_usage":true}}\n`,
    );
    expect(last().body.stream_options).toEqual({ include_usage: true });

    const asked = odd("cj-plain", `, "stream": true, "stream_options": {"include_usage": true}`);
    await (await post(asked)).text();
    expect(last().raw).toBe(asked);

    // Options of its own without the usage request: serialised, with both.
    await (await post(odd("cj-plain", `, "stream": true, "stream_options": {"continuous_usage_stats": false}`))).text();
    expect(last().body.stream_options).toEqual({ continuous_usage_stats: false, include_usage: true });
  });

  test("a mapped model is written into the client's text (a body over 1 KB; a smaller one is serialised)", async () => {
    const text = odd("cj-mapped", `, "stream": true, "user": "${"u".repeat(1100)}"`);
    const res = await post(text);
    expect(res.status).toBe(200);
    await res.text();
    expect(last().raw).toBe(
      text.replace('"cj-mapped"', '"upstream-model"').replace(/ }\n$/, ' ,"stream_options":{"include_usage":true}}\n'),
    );
    expect(last().body.model).toBe("upstream-model");
    await post(odd("cj-mapped"));
    expect(last().body.model).toBe("upstream-model");
  });

  test("what the gateway changes reaches the upstream changed: a system prompt, a param_override", async () => {
    await post(odd("cj-prompt"));
    expect(last().body.messages[0]).toEqual({ role: "system", content: "Be brief." });
    await post(odd("cj-override"));
    expect(last().body.temperature).toBe(0.1);
    // A model name the gateway trims is sent trimmed.
    await post(odd(" cj-plain "));
    expect(last().body.model).toBe("cj-plain");
  });

  test("the Responses API to a channel that serves it goes as it came; a model name to trim is serialised", async () => {
    const text = `{ "model": "cj-plain", "input": "caf\\u00e9", "store": false, "seed": 12345678901234567890 }`;
    const res = await post(text, {}, "/v1/responses");
    expect(res.status).toBe(200);
    expect(last().path).toBe("/v1/responses");
    expect(last().raw).toBe(text);
    await post(text.replace('"cj-plain"', '" cj-plain "'), {}, "/v1/responses");
    expect(last().body.model).toBe("cj-plain");
  });

  test("with the response cache on, its body directive is taken out before the body goes upstream", async () => {
    await fx.option("ResponseCacheEnabled", "true");
    try {
      const res = await post(odd("cj-cached", `, "cache": {"ttl": 60}`));
      expect(res.status).toBe(200);
      expect(last().body).not.toHaveProperty("cache");
      expect(last().body.model).toBe("cj-cached");
    } finally {
      await fx.option("ResponseCacheEnabled", "false");
    }
  });
});

describe("the client's JSON text upstream in Claude's and Gemini's formats", () => {
  const native = (path: string, text: string, headers: Record<string, string>) =>
    fx.ctx.app.handle(
      new Request(`http://localhost${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: text,
      }),
    );

  test("Claude's /v1/messages to a Claude channel goes as it came; a mapped model or a missing max_tokens is written in", async () => {
    const text = `{"model": "claude-sonnet-4-20250514", "max_tokens": 64,\n "messages": [{"role": "user", "content": "caf\\u00e9"}], "metadata": {"user_id": "u1"} }`;
    const res = await native("/v1/messages", text, { "x-api-key": key, "anthropic-version": "2023-06-01" });
    expect(res.status).toBe(200);
    expect(claude.last().raw).toBe(text);
    await native("/v1/messages", text.replace('"claude-sonnet-4-20250514"', '"cj-claude"'), {
      "x-api-key": key,
      "anthropic-version": "2023-06-01",
    });
    expect(claude.last().body.model).toBe("claude-sonnet-4-20250514");
    // A long conversation with a mapped model: the model written into the client's text.
    const long = text.replace('"claude-sonnet-4-20250514"', '"cj-claude"').replace('"u1"', `"${"u".repeat(1100)}"`);
    await native("/v1/messages", long, { "x-api-key": key, "anthropic-version": "2023-06-01" });
    expect(claude.last().raw).toBe(long.replace('"cj-claude"', '"claude-sonnet-4-20250514"'));
    await native("/v1/messages", text.replace('"max_tokens": 64,', ""), {
      "x-api-key": key,
      "anthropic-version": "2023-06-01",
    });
    expect(typeof claude.last().body.max_tokens).toBe("number");
  });

  test("Gemini's generateContent to a Gemini channel goes as it came", async () => {
    const text = `{ "contents": [ {"role": "user", "parts": [{"text": "caf\\u00e9"}]} ],\n "generationConfig": {"temperature": 0.5} }`;
    const res = await native("/v1beta/models/gemini-2.5-flash:generateContent", text, { "x-goog-api-key": key });
    expect(res.status).toBe(200);
    expect(gemini.last().raw).toBe(text);
  });
});

describe("a long streamed conversation: the usage request written in without joining the text", () => {
  // Over 16K characters the text goes upstream as its pieces (a JoinedText), never joined in memory.
  const long = (model: string) =>
    `{ "model" : "${model}", "stream": true,\n  "messages": [${Array.from(
      { length: 60 },
      (_, i) =>
        `{"role":"${i % 2 ? "assistant" : "user"}", "content":"turn ${i}: ${"日本語 café ✓ ".repeat(30)}\\u00e9"}`,
    ).join(",\n ")}],\n  "seed": 12345678901234567890 }\n`;
  const expected = (text: string) =>
    text.slice(0, text.lastIndexOf("}"))
    + ',"stream_options":{"include_usage":true}'
    + text.slice(text.lastIndexOf("}"));

  for (const client of ["the stream client", "fetch() (UPSTREAM_STREAM_CLIENT=fetch)"]) {
    test(`through ${client}: upstream byte for byte with the usage request, the answer streamed`, async () => {
      if (client.startsWith("fetch")) configureStreamClient({ enabled: false, proxiedProtocols: [] });
      try {
        const text = long("cj-plain");
        expect(text.length).toBeGreaterThan(16 * 1024);
        const res = await post(text);
        expect(res.status).toBe(200);
        expect(await res.text()).toContain("[DONE]");
        expect(last().raw).toBe(expected(text));
        expect(last().body.messages.length).toBe(60);
        expect(last().body.stream_options).toEqual({ include_usage: true });
      } finally {
        configureStreamClient({ enabled: true, proxiedProtocols: [] });
      }
    });
  }

  test("a channel's param_override still applies to such a text", async () => {
    const res = await post(long("cj-override"));
    expect(res.status).toBe(200);
    await res.text();
    expect(last().body.temperature).toBe(0.1);
    expect(last().body.stream_options).toEqual({ include_usage: true });
    expect(last().body.messages.length).toBe(60);
  });
});

describe("formats/client-json.ts", () => {
  test("withUsageRequest keeps a long text as its pieces (JoinedText) that read as the joined text", () => {
    const body = { a: "x".repeat(20_000) };
    const text = JSON.stringify(body);
    const pieces = withUsageRequest(text, body);
    expect(pieces).toBeInstanceOf(JoinedText);
    expect(String(pieces)).toBe(text.slice(0, -1) + ',"stream_options":{"include_usage":true}}');
    expect((pieces as JoinedText).length).toBe(String(pieces).length);
    expect((pieces as JoinedText).byteLength()).toBe(Buffer.byteLength(String(pieces)));
    expect(jsonText({ body, text: pieces! }, body)).toBe(pieces!);
  });

  test("withUsageRequest writes the usage request before the closing brace, with a comma only when the object has members", () => {
    expect(withUsageRequest('{"a":1}', { a: 1 })).toBe('{"a":1,"stream_options":{"include_usage":true}}');
    expect(withUsageRequest('{"a":1}\r\n\t ', { a: 1 })).toBe('{"a":1,"stream_options":{"include_usage":true}}\r\n\t ');
    expect(withUsageRequest("{ \n }", {})).toBe('{ \n "stream_options":{"include_usage":true}}');
    expect(
      withUsageRequest('{"a":"}","stream_options":{"include_usage":true}}', {
        a: "}",
        stream_options: { include_usage: true },
      }),
    ).toBe('{"a":"}","stream_options":{"include_usage":true}}');
    expect(withUsageRequest('{"stream_options":null}', { stream_options: null })).toBeUndefined();
    expect(
      withUsageRequest('{"stream_options":{"include_usage":false}}', { stream_options: { include_usage: false } }),
    ).toBeUndefined();
  });

  test("jsonText sends the client's text only for the very object it was parsed into", () => {
    const body = { a: 1 };
    expect(jsonText({ body, text: '{ "a" : 1 }' }, body)).toBe('{ "a" : 1 }');
    expect(jsonText({ body, text: '{ "a" : 1 }' }, { ...body })).toBe('{"a":1}');
    expect(jsonText(undefined, body)).toBe('{"a":1}');
  });
});

test("withModel replaces the top-level model string only, the last of two, and gives up where a scan cannot be sure", () => {
  expect(withModel('{"model":"a","messages":[{"model":"inner"}]}', "b")).toBe(
    '{"model":"b","messages":[{"model":"inner"}]}',
  );
  expect(
    withModel('{ "messages": [{"role":"user","content":"\\"model\\": \\"x\\""}], "model" :\n "gpt-4\\u006f" }', 'm/é"'),
  ).toBe('{ "messages": [{"role":"user","content":"\\"model\\": \\"x\\""}], "model" :\n "m/é\\"" }');
  expect(withModel('{"model":"a","model":"c"}', "b")).toBe('{"model":"a","model":"b"}');
  expect(withModel('{"meta":{"model":"a"},"x":["model","y"]}', "b")).toBeUndefined();
  expect(withModel('{"mod\\u0065l":"a","model":"z"}', "b")).toBeUndefined();
  expect(withModel('{"model":null}', "b")).toBeUndefined();
  for (const text of ['{"model":"a","messages":[1,{"k":"v"}],"n":2}', '{"n":{"model":"q"},"model":"a"}']) {
    expect(JSON.parse(withModel(text, "b")!)).toEqual({ ...JSON.parse(text), model: "b" });
  }
});
