import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { awsAdaptor, parseAwsKey, bedrockUrl, eventStreamToSse } from "../../server/relay/providers/aws/index.ts";
import { bedrockModelId } from "../../server/relay/providers/aws/models.ts";
import { EventStreamDecoder, encodeEventStreamMessage } from "../../server/relay/providers/aws/eventstream.ts";
import { startBedrockUpstream, bedrockStream } from "../mocks/bedrock-upstream.ts";
import { claudeEvents } from "../mocks/claude-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { chunksOf, contentOf, makeCall, run } from "./harness.ts";
import { SseReader } from "../../server/relay/formats/sse.ts";

const creds = {
  accessKeyId: "AKIDEXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  region: "us-east-1",
};
const key = `${creds.accessKeyId}|${creds.secretAccessKey}|${creds.region}`;

describe("Bedrock pieces", () => {
  test("key AK|SK|region (optional session token); anything else is refused without echoing it", () => {
    expect(parseAwsKey(key)).toEqual({ ...creds, sessionToken: undefined });
    expect(parseAwsKey(`${key}|TOKEN`).sessionToken).toBe("TOKEN");
    try {
      parseAwsKey("AKID|only-two");
      throw new Error("expected a failure");
    } catch (e: any) {
      expect(e.status).toBe(500);
      expect(e.message).not.toContain("only-two");
    }
  });

  test("model ids: table lookup, inference-profile prefix by region for newer models, unknown names as given", () => {
    expect(bedrockModelId("claude-3-5-sonnet-20240620", "us-east-1")).toBe("anthropic.claude-3-5-sonnet-20240620-v1:0");
    expect(bedrockModelId("claude-sonnet-4-20250514", "us-west-2")).toBe("us.anthropic.claude-sonnet-4-20250514-v1:0");
    expect(bedrockModelId("claude-sonnet-4-20250514", "eu-central-1")).toBe(
      "eu.anthropic.claude-sonnet-4-20250514-v1:0",
    );
    expect(bedrockModelId("claude-3-7-sonnet-20250219", "ap-northeast-1")).toBe(
      "apac.anthropic.claude-3-7-sonnet-20250219-v1:0",
    );
    expect(bedrockModelId("arn:aws:bedrock:custom", "us-east-1")).toBe("arn:aws:bedrock:custom");
  });

  test("default endpoint per region, invoke vs stream", () => {
    expect(bedrockUrl({ baseUrl: "", stream: false }, "us-east-1", "anthropic.claude-v2:1")).toBe(
      "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A1/invoke",
    );
    expect(bedrockUrl({ baseUrl: "", stream: true }, "eu-west-1", "m")).toBe(
      "https://bedrock-runtime.eu-west-1.amazonaws.com/model/m/invoke-with-response-stream",
    );
  });

  test("event-stream frames decode across arbitrary chunk boundaries; corrupt frames are refused", () => {
    const a = encodeEventStreamMessage({ ":message-type": "event", ":event-type": "chunk" }, '{"x":1}');
    const b = encodeEventStreamMessage({ ":message-type": "event" }, "second");
    const all = new Uint8Array([...a, ...b]);
    const d = new EventStreamDecoder();
    const got = [];
    for (let i = 0; i < all.length; i += 5) got.push(...d.push(all.subarray(i, i + 5)));
    expect(got.map((m) => new TextDecoder().decode(m.payload))).toEqual(['{"x":1}', "second"]);
    expect(got[0]!.headers[":event-type"]).toBe("chunk");
    expect(d.pending).toBe(false);
    const bad = a.slice();
    bad[bad.length - 6]! ^= 0xff;
    expect(() => new EventStreamDecoder().push(bad)).toThrow("checksum");
  });

  test("the decoded stream is the Claude SSE it wraps; exceptions become Claude error events", async () => {
    const res = bedrockStream(claudeEvents({ messages: [] }, "m"), { exceptionAfter: 3 });
    const text = await new Response(eventStreamToSse(res.body!)).text();
    const evs = new SseReader().push(new TextEncoder().encode(text));
    expect(evs.slice(0, 3).map((e) => e.event)).toEqual(["message_start", "ping", "content_block_start"]);
    expect(evs[3]!.event).toBe("error");
    expect(JSON.parse(evs[3]!.data).error).toEqual({
      type: "throttlingException",
      message: "Too many requests, please wait before trying again.",
    });
  });
});

describe("Bedrock adaptor against the mock upstream (signature checked)", () => {
  let up: MockUpstream;
  beforeAll(() => (up = startBedrockUpstream(creds)));
  afterAll(() => up.stop());
  const call = (p: Partial<Parameters<typeof makeCall>[0]> = {}) =>
    makeCall({
      baseUrl: up.url,
      key,
      upstreamModel: "claude-3-5-sonnet-20240620",
      requestModel: "claude-3-5-sonnet-20240620",
      ...p,
    });

  test("invoke: signed request, Bedrock body (no model/stream, anthropic_version), OpenAI answer", async () => {
    const o = await run(awsAdaptor, call(), {
      model: "x",
      messages: [
        { role: "system", content: "s" },
        { role: "user", content: "Hi" },
      ],
      user: "u1",
    });
    expect(o.status).toBe(200);
    const rec = up.last();
    expect(rec.path).toBe("/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke");
    expect(rec.headers.authorization).toStartWith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/");
    expect(rec.headers.authorization).toContain("/us-east-1/bedrock/aws4_request");
    expect(rec.body.anthropic_version).toBe("bedrock-2023-05-31");
    expect(rec.body.model).toBeUndefined();
    expect(rec.body.metadata).toBeUndefined();
    expect(o.body.choices[0].message.content).toBe("Hello from Claude.");
    expect(o.usage).toMatchObject({
      prompt_tokens: 17,
      completion_tokens: 7,
      cached_tokens: 3,
      cache_creation_tokens: 2,
    });
  });

  test("a wrong secret fails the signature check", async () => {
    const o = await run(awsAdaptor, call({ key: `${creds.accessKeyId}|wrong-secret|us-east-1` }), {
      model: "x",
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(o.status).toBe(403);
    expect(o.error).toContain("signature");
  });

  test("stream: event-stream decoded into OpenAI chunks with tool calls and usage", async () => {
    const o = await run(awsAdaptor, call({ stream: true, clientWantsUsage: true }), {
      model: "x",
      stream: true,
      messages: [{ role: "user", content: "Weather?" }],
      tools: [
        {
          type: "function",
          function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
        },
      ],
    });
    expect(up.last().path).toEndWith("/invoke-with-response-stream");
    expect(up.last().body.stream).toBeUndefined();
    expect(contentOf(o)).toBe("Hello from Claude.");
    const args = chunksOf(o)
      .flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? [])
      .map((t: any) => t.function?.arguments ?? "")
      .join("");
    expect(JSON.parse(args)).toEqual({ city: "Paris" });
    expect(o.usage).toMatchObject({ prompt_tokens: 17, completion_tokens: 7 });
  });

  test("a Claude client gets the Claude events of the Bedrock stream", async () => {
    const o = await run(awsAdaptor, call({ format: "claude", stream: true }), {
      model: "x",
      max_tokens: 10,
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(o.events[0]!.event).toBe("message_start");
    expect(o.events[o.events.length - 1]!.event).toBe("message_stop");
  });

  test("a mid-stream exception reaches an OpenAI client as an error frame", async () => {
    const o = await run(awsAdaptor, call({ stream: true, upstreamModel: "anthropic.claude-throttle" }), {
      model: "x",
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(chunksOf(o).some((c) => c.error?.message?.includes("Too many requests"))).toBe(true);
  });
});

describe("Bedrock beta flags", () => {
  let up: MockUpstream;
  beforeAll(() => (up = startBedrockUpstream(creds)));
  afterAll(() => up.stop());

  test("a Claude client's anthropic-beta header becomes Bedrock's anthropic_beta body field", async () => {
    const call = makeCall({
      baseUrl: up.url,
      key,
      format: "claude",
      upstreamModel: "claude-3-5-sonnet-20240620",
      clientHeaders: { "anthropic-beta": "a-1, b-2" },
    });
    const o = await run(awsAdaptor, call, { model: "x", max_tokens: 10, messages: [{ role: "user", content: "Hi" }] });
    expect(o.status).toBe(200);
    expect(up.last().body.anthropic_beta).toEqual(["a-1", "b-2"]);
  });
});
