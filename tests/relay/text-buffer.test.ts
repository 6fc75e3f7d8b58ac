// The generated text of a long stream is kept as flat strings, not as a rope of one cell per chunk (which held
// ~80 bytes a chunk until the stream ended: 16 MB over 200,000 chunks, scripts/bench/memory.ts).
import { describe, expect, test } from "bun:test";
import { heapStats, jscDescribe } from "bun:jsc";
import { TextBuffer } from "../../server/relay/formats/text-buffer.ts";
import type { StreamMapper } from "../../server/relay/providers/types.ts";
import { openaiAdaptor } from "../../server/relay/providers/openai/index.ts";
import { claudeAdaptor } from "../../server/relay/providers/claude/index.ts";
import { geminiAdaptor } from "../../server/relay/providers/gemini/index.ts";
import { makeCall } from "../providers/harness.ts";

/** Distinct strings, as JSON.parse makes them from each chunk. */
const pieceOf = (i: number) => JSON.parse(`"tok${i % 97} "`) as string;

test("the text is every piece in order, at and around the block sizes, read once or many times", () => {
  for (const n of [0, 1, 1023, 1024, 1025, 32 * 1024, 32 * 1024 + 1, 70_000]) {
    const buf = new TextBuffer();
    const expected: string[] = [];
    for (let i = 0; i < n; i++) {
      const p = i % 11 === 0 ? "" : pieceOf(i);
      buf.add(p);
      expected.push(p);
      if (i === 5000) expect(buf.toString()).toBe(expected.join(""));
    }
    expect(buf.toString()).toBe(expected.join(""));
    expect(buf.toString()).toBe(expected.join(""));
    buf.add("tail");
    expect(buf.toString()).toBe(expected.join("") + "tail");
  }
});

test("the text read back is a flat string", () => {
  const buf = new TextBuffer();
  for (let i = 0; i < 5000; i++) buf.add(pieceOf(i));
  expect(jscDescribe(buf.toString())).not.toContain("rope");
});

test("200,000 pieces keep about their characters alive, not a cell per piece", () => {
  Bun.gc(true);
  const before = heapStats().heapSize;
  const buf = new TextBuffer();
  let length = 0;
  for (let i = 0; i < 200_000; i++) {
    const p = pieceOf(i);
    length += p.length;
    buf.add(p);
  }
  Bun.gc(true);
  const grown = heapStats().heapSize - before;
  // ~1.2 MB of characters; `text += piece` kept ~16 MB.
  expect(grown).toBeLessThan(4 * 1024 * 1024);
  expect(buf.toString().length).toBe(length);
});

// Every mapper that gathers a stream's text: OpenAI passed through, and each conversion (Claude and Gemini
// upstreams to OpenAI clients, OpenAI upstreams to Claude, Gemini and Responses clients).
describe("a 200,000-chunk stream through a mapper keeps little more than its text", () => {
  const N = 200_000;
  const frame = (data: unknown, event?: string) => ({
    event,
    data: JSON.stringify(data),
    raw: `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`,
  });
  const openaiChunk = (i: number) =>
    frame({
      id: "c",
      object: "chat.completion.chunk",
      created: 1,
      model: "m",
      choices: [{ index: 0, delta: { content: pieceOf(i) }, finish_reason: null }],
    });
  const cases: [string, () => StreamMapper, (i: number) => ReturnType<typeof frame>, ReturnType<typeof frame>[]][] = [
    [
      "OpenAI passed through",
      () => openaiAdaptor.streamMapper(makeCall({ baseUrl: "http://x", key: "k", stream: true })),
      openaiChunk,
      [],
    ],
    [
      "Claude upstream, OpenAI client",
      () => claudeAdaptor.streamMapper(makeCall({ baseUrl: "http://x", key: "k", stream: true })),
      (i) =>
        frame(
          { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: pieceOf(i) } },
          "content_block_delta",
        ),
      [
        frame(
          {
            type: "message_start",
            message: {
              id: "m",
              type: "message",
              role: "assistant",
              model: "m",
              content: [],
              usage: { input_tokens: 5, output_tokens: 1 },
            },
          },
          "message_start",
        ),
        frame(
          { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
          "content_block_start",
        ),
      ],
    ],
    [
      "Gemini upstream, OpenAI client",
      () => geminiAdaptor.streamMapper(makeCall({ baseUrl: "http://x", key: "k", stream: true })),
      (i) => frame({ candidates: [{ content: { parts: [{ text: pieceOf(i) }], role: "model" } }] }),
      [],
    ],
    ...(["claude", "gemini", "responses"] as const).map((format): (typeof cases)[number] => [
      `OpenAI upstream, ${format} client`,
      () =>
        openaiAdaptor.streamMapper(
          makeCall({
            baseUrl: "http://x",
            key: "k",
            stream: true,
            format: format === "responses" ? "openai" : format,
            mode: format === "responses" ? "responses" : "chat",
          }),
        ),
      openaiChunk,
      [],
    ]),
  ];
  for (const [name, make, chunk, opening] of cases) {
    test(name, () => {
      const mapper = make();
      for (const ev of opening) mapper.event(ev);
      Bun.gc(true);
      const before = heapStats().heapSize;
      let length = 0;
      for (let i = 0; i < N; i++) {
        length += pieceOf(i).length;
        mapper.event(chunk(i));
      }
      Bun.gc(true);
      const grown = heapStats().heapSize - before;
      expect(mapper.generatedText().length).toBe(length);
      // ~1.2 MB of characters; a rope (text += piece) or an array of pieces kept 6-16 MB.
      expect(grown).toBeLessThan(4 * 1024 * 1024);
    });
  }
});
