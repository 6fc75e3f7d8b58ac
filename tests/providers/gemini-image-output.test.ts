// Image models answer with inlineData parts (base64 image bytes). OpenAI clients still get them as
// Markdown data URLs, but when usage is missing only the generated text is counted: the bytes of an
// image are no text, and counting their base64 as tokens would bill thousands of tokens per picture.
import { describe, expect, test } from "bun:test";
import { geminiAdaptor } from "../../server/relay/providers/gemini/index.ts";
import type { ClientFormat, SseEvent } from "../../server/relay/providers/types.ts";
import { countTokensNow } from "../../server/relay/tokenizer.ts";
import { makeCall } from "./harness.ts";
import { answerUsage } from "../../server/relay/core/meter.ts";

const call = (format: ClientFormat = "openai", stream = false) =>
  makeCall({ baseUrl: "http://127.0.0.1:1", key: "k", stream, format });
const frame = (data: unknown): SseEvent => ({ data: JSON.stringify(data), raw: `data: ${JSON.stringify(data)}\n\n` });

// A few kilobytes of base64: thousands of o200k tokens if it were counted as text.
const IMAGE = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) % 251)).toString("base64");
const CAPTION = "Here is the picture you asked for.";
const parts = [{ text: CAPTION }, { inlineData: { mimeType: "image/png", data: IMAGE } }];
const answer = (usageMetadata?: object) => ({
  candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
  ...(usageMetadata ? { usageMetadata } : {}),
});

describe("non-stream", () => {
  for (const format of ["openai", "gemini"] as const) {
    test(`${format} client: the generated text leaves the image out`, () => {
      expect(geminiAdaptor.generatedText!(call(format), answer())).toBe(CAPTION);
    });
  }

  test("a usage without candidatesTokenCount counts the caption only", async () => {
    const u = (await answerUsage(
      geminiAdaptor.parseResponse(call(), answer({ promptTokenCount: 9, totalTokenCount: 9 })),
    ))!;
    expect(u.completion_tokens).toBe(countTokensNow(CAPTION));
  });

  test("the OpenAI client still receives the image as a Markdown data URL", () => {
    const body: any = geminiAdaptor.parseResponse(call(), answer()).body;
    expect(body.choices[0].message.content).toBe(`${CAPTION}![image](data:image/png;base64,${IMAGE})`);
  });
});

describe("stream", () => {
  for (const format of ["openai", "gemini"] as const) {
    test(`${format} client: the generated text leaves the image out, and so does a partial usage`, () => {
      const m = geminiAdaptor.streamMapper(call(format, true));
      m.event(
        frame({
          candidates: [{ content: { role: "model", parts: [parts[0]] }, index: 0 }],
          usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
        }),
      );
      const out = m.event(frame({ candidates: [{ content: { role: "model", parts: [parts[1]] }, index: 0 }] }));
      expect(out).toContain(IMAGE);
      expect(m.generatedText()).toBe(CAPTION);
      expect(m.usage()!.completion_tokens).toBe(countTokensNow(CAPTION));
    });
  }
});
