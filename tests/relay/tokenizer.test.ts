// The token counter (server/relay/bpe.ts through tokenizer.ts): exactly tiktoken's tokens for o200k_base
// and cl100k_base (js-tiktoken is the reference), linear work on any input (counted in steps, not timed),
// and a capped amount of work per call, on the event loop and in the counting worker.
import { describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Tiktoken } from "js-tiktoken/lite";
import {
  cl100kBase,
  countPromptTokens,
  countPromptTokensNow,
  countTextsNow,
  countTokens,
  countTokensNow,
  decodeEmbeddingTokens,
  o200kBase,
  estimatePromptTokens,
  estimateTokens,
  promptBytes,
  promptText,
  SYNC_STEPS,
  WORKER_STEPS,
} from "../../server/relay/tokenizer.ts";

const ROOT = join(import.meta.dir, "../..");

/** English prose and tables: the README and the documentation under docs/, in a fixed order. */
function englishProse(): string {
  const docs = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((e) =>
        e.isDirectory()
          ? docs(join(dir, e.name))
          : e.name.endsWith(".md")
            ? [readFileSync(join(dir, e.name), "utf8")]
            : [],
      );
  return [readFileSync(join(ROOT, "README.md"), "utf8"), ...docs(join(ROOT, "docs"))].join("\n\n");
}

/** Normal text of several kinds: English prose, Chinese and Russian UI strings, TypeScript. */
function corpus(): string[] {
  const texts = [
    englishProse(),
    readFileSync(join(ROOT, "console/i18n/zh.ts"), "utf8"),
    readFileSync(join(ROOT, "console/i18n/ru.ts"), "utf8"),
    ...readdirSync(join(ROOT, "server/relay"))
      .filter((f) => f.endsWith(".ts"))
      .sort()
      .map((f) => readFileSync(join(ROOT, "server/relay", f), "utf8")),
  ];
  // Seeded mixes of what splits and merges differently: cases, digits, contractions, whitespace runs,
  // CJK, accents and combining marks, emoji, a lone surrogate, special-token text, long runs.
  const parts = [
    "a",
    "b",
    "e",
    "t",
    "A",
    "Z",
    " ",
    "  ",
    "\n",
    "\t",
    "\r\n",
    "1",
    "23",
    "456",
    ".",
    ",",
    "'s",
    "'ll",
    "'",
    "中",
    "文",
    "日本語",
    "é",
    "ü",
    "\u0301",
    "😀",
    "\ud800",
    "-",
    "_",
    "/",
    "=",
    "+",
    "ё",
    "ß",
    "<|endoftext|>",
    "the",
    "ing",
    "tion",
    "Hello",
    "ЖЖ",
  ];
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
  for (let i = 0; i < 400; i++) {
    let s = "";
    const len = next() % 300;
    while (s.length < len) {
      const p = parts[next() % parts.length]!;
      // Now and then a run long enough for the heap merge (pieces over 32 bytes).
      s += next() % 10 === 0 ? p.repeat(5 + (next() % 60)) : p;
    }
    texts.push(s);
  }
  texts.push(
    "a".repeat(2000),
    "A".repeat(300) + "b".repeat(300),
    "中".repeat(500),
    " ".repeat(700) + "x",
    "thequickbrownfoxjumpsoverthelazydog".repeat(20),
  );
  return texts;
}

describe("exact counts", () => {
  const texts = corpus();
  for (const [name, bpe, file] of [
    ["o200k_base", o200kBase, "js-tiktoken/ranks/o200k_base"],
    ["cl100k_base", cl100kBase, "js-tiktoken/ranks/cl100k_base"],
  ] as const) {
    test(`${name}: the same token ids as js-tiktoken on ${texts.length} texts (prose, CJK, Cyrillic, code, seeded mixes)`, () => {
      const reference = new Tiktoken(require(file));
      const ours = bpe();
      let tokens = 0;
      for (const t of texts) {
        const expected = reference.encode(t, [], []);
        expect(ours.encode(t)).toEqual(expected);
        expect(ours.count(t)).toBe(expected.length);
        tokens += expected.length;
      }
      expect(tokens).toBeGreaterThan(50_000);
    }, 30_000);
  }

  test("cl100k_base decodes token ids back to their text; an id outside the vocabulary gives null", () => {
    const text = "Embeddings input as token ids: 中文, emoji 😀 and ü.";
    expect(decodeEmbeddingTokens(cl100kBase().encode(text))).toBe(text);
    expect(decodeEmbeddingTokens([9906, 1917])).toBe("Hello world");
    expect(decodeEmbeddingTokens([9906, 10_000_000])).toBeNull();
    expect(decodeEmbeddingTokens([9906, 1.5])).toBeNull();
  });

  test("the public functions count o200k_base, prompts with OpenAI's chat framing", async () => {
    expect(countTokensNow("Hello world")).toBe(2);
    expect(await countTokens("Hello world")).toBe(2);
    const body = {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", name: "ann", content: [{ type: "text", text: "Hello there" }] },
      ],
    };
    const expected =
      3 + 3 * 2 + o200kBase().count("Be brief.") + o200kBase().count("Hello there") + o200kBase().count("ann");
    expect(countPromptTokensNow(body)).toBe(expected);
    expect(await countPromptTokens(body)).toBe(expected);
  });
});

/** The steps (pieces and pair lookups) the encoder spends counting `text` without a cap. */
function stepsOf(text: string): number {
  const bpe = o200kBase();
  const before = bpe.steps;
  bpe.count(text);
  return bpe.steps - before;
}

describe("linear work", () => {
  // Before, one piece of n characters cost n²/2 pair lookups (js-tiktoken: 16,000 letters took 19 s).
  const kinds: [string, (n: number) => string][] = [
    ["one repeated letter", (n) => "a".repeat(n)],
    ["one repeated CJK character", (n) => "中".repeat(n)],
    ["spaces", (n) => " ".repeat(n)],
    ["punctuation", (n) => "!".repeat(n)],
    [
      "a lowercase run without repeats",
      (n) => Array.from({ length: n }, (_, i) => "etaoinshrdlucmfwypvbgkqjxz"[(i * i + 7 * i) % 26]).join(""),
    ],
    [
      "base64",
      (n) =>
        Buffer.from(Array.from({ length: n }, (_, i) => (i * 7919) % 256))
          .toString("base64")
          .slice(0, n),
    ],
    ["English", (n) => "The quick brown fox jumps over the lazy dog. ".repeat(Math.ceil(n / 45)).slice(0, n)],
  ];
  for (const [name, make] of kinds) {
    test(`${name}: ten times the text is about ten times the work, and at most 3 steps a byte`, () => {
      const small = stepsOf(make(16_000));
      const large = stepsOf(make(160_000));
      expect(large / small).toBeGreaterThan(8);
      expect(large / small).toBeLessThan(12);
      expect(large).toBeLessThanOrEqual(3 * Buffer.byteLength(make(160_000)) + 1000);
    }, 30_000);
  }

  test("a 3 MB run of one character is counted exactly, in linear work", () => {
    const text = "a".repeat(3 * 1024 * 1024);
    expect(stepsOf(text)).toBeLessThanOrEqual(3 * text.length);
    expect(o200kBase().count(text)).toBe(text.length / 8);
  }, 30_000);
});

describe("capped work per call", () => {
  const bpe = o200kBase();
  // A piece short enough for the plain merge (32 bytes) is finished even when it crosses the cap.
  const CAP_SLACK = 100;
  const spent = (f: () => unknown) => {
    const before = bpe.steps;
    f();
    return bpe.steps - before;
  };

  test("on the event loop: 30 KB, 100 KB and 3 MB of one character cost at most SYNC_STEPS, and the count is extrapolated", () => {
    for (const n of [30_000, 100_000, 3 * 1024 * 1024]) {
      const text = "x".repeat(n);
      expect(spent(() => countTokensNow(text))).toBeLessThanOrEqual(SYNC_STEPS + CAP_SLACK);
      // A run of one letter is the same token over and over: the extrapolation from the counted part lands
      // within a token in a thousand.
      const exact = bpe.count(text);
      expect(Math.abs(countTokensNow(text) - exact)).toBeLessThanOrEqual(4 + exact / 1000);
    }
  });

  test("normal text within the cap is exact; the cap is shared by all texts of one call", () => {
    // 40,000 characters of real prose and tables: well within the cap (~85,000 characters of English), and
    // independent of how long the documentation grows.
    const readme = englishProse().slice(0, 40_000);
    expect(countTokensNow(readme)).toBe(bpe.count(readme));
    const many = Array.from({ length: 2000 }, () => "a".repeat(5000));
    expect(spent(() => countTextsNow(many))).toBeLessThanOrEqual(SYNC_STEPS + CAP_SLACK);
    const prompt = { messages: many.map((content) => ({ role: "user", content })) };
    expect(spent(() => countPromptTokensNow(prompt))).toBeLessThanOrEqual(SYNC_STEPS + CAP_SLACK);
    expect(countPromptTokensNow(prompt)).toBeGreaterThanOrEqual(3 + 3 * 2000 + 2000 * 625 - 10);
  });

  test("the count of a text does not depend on what was counted before (cached merges are charged their cost)", () => {
    // Words of mixed-up Chinese characters and long lowercase runs: few are whole tokens, so most are
    // merged, and a second count finds them cached.
    let seed = 4242;
    const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) >>> 12;
    let text = "";
    while (text.length < 120_000) {
      text +=
        next() % 2
          ? String.fromCharCode(...Array.from({ length: 8 + (next() % 20) }, () => 0x4e00 + (next() % 3000)))
          : "qwzxkvjy".repeat(1 + (next() % 6));
      text += "。 ";
    }
    const cold = countTokensNow(text);
    bpe.count(text);
    expect(countTextsNow([text])).toBe(cold);
  });

  test("a long text split between exact and extrapolated parts stays close to the exact count", () => {
    const mixed = readFileSync(join(ROOT, "console/i18n/zh.ts"), "utf8").repeat(20);
    const exact = bpe.count(mixed);
    expect(Math.abs(countTokensNow(mixed) - exact) / exact).toBeLessThan(0.02);
  });

  test("the async count runs in the worker: exact past the synchronous cap, and the event loop keeps turning meanwhile", async () => {
    // English then Chinese: the synchronous count extrapolates the English rate over the Chinese part.
    const text = "Hello world, how are you today? ".repeat(10_000) + "中文的句子，没有空格也没有标点".repeat(20_000);
    const exact = bpe.count(text);
    expect(countTokensNow(text)).toBeLessThan(exact * 0.8);
    let turns = 0;
    const timer = setInterval(() => turns++, 1);
    const counted = await countTokens(text);
    clearInterval(timer);
    expect(counted).toBe(exact);
    expect(turns).toBeGreaterThan(0);
  }, 30_000);

  test("the worker's cap: 3 MB of one character is counted within WORKER_STEPS and extrapolated", async () => {
    const text = "a".repeat(3 * 1024 * 1024);
    expect(WORKER_STEPS).toBeLessThan(3 * text.length);
    const counted = await countTokens(text);
    expect(Math.abs(counted - text.length / 8)).toBeLessThanOrEqual(8);
  }, 30_000);
});

test("promptBytes is the UTF-8 length of promptText for every shape of prompt, without joining it", () => {
  const bodies: unknown[] = [
    {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "naïve 日本語 🙂\nline" },
        { role: "user", content: [{ type: "text", text: "a" }, "b", { type: "image_url" }, { text: 7 }] },
        { role: "assistant", content: null },
        null,
      ],
    },
    { messages: [{ content: [] }, { content: ["only"] }] },
    {
      prompt: "complete this",
      input: ["x", { content: "y" }, { text: "z" }, { content: ["p", "q"] }, 3],
      query: "q?",
      instructions: "inst",
      system: "sys",
    },
    { input: "one input", documents: ["d1", { text: "d2" }, { text: ["d3", "d4"] }, 5] },
    {
      systemInstruction: { parts: [{ text: "snake" }] },
      contents: [{ parts: [{ text: "hi" }, { inlineData: {} }] }, { parts: "not a list" }, {}],
    },
    { system_instruction: { parts: [{ text: "camel" }] }, contents: [] },
    {},
    null,
    "text",
    new FormData(),
  ];
  for (const body of bodies) {
    expect(promptBytes(body)).toBe(Buffer.byteLength(promptText(body), "utf8"));
    expect(estimatePromptTokens(body)).toBe(estimateTokens(promptText(body)));
  }
  expect(promptText(bodies[0])).toBe("Be brief.\nnaïve 日本語 🙂\nline\na\nb\n\n\n\n\n");
});
