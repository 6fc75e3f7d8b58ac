// The sensitive-word scan (server/relay/wordscan.ts): finds the same words as a search for each word,
// in one pass whatever the number of words, with the dense table and with the sparse fallback.
import { expect, test } from "bun:test";
import { WordScan } from "../../server/relay/wordscan.ts";

function naive(words: string[], text: string): boolean {
  return words.some((w) => w && text.includes(w));
}

test("reports a word exactly when the text contains one, on seeded random words and texts", () => {
  let seed = 99;
  const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
  const alphabet = "abcab中文ü 😀";
  const pick = (len: number) => Array.from({ length: len }, () => alphabet[next() % alphabet.length]).join("");
  for (let round = 0; round < 2000; round++) {
    const words = Array.from({ length: 1 + (next() % 6) }, () => pick(1 + (next() % 4)));
    const text = pick(next() % 40);
    const scan = new WordScan(words);
    const found = scan.find(text);
    expect(found !== null).toBe(naive(words, text));
    if (found !== null) expect(text.includes(found) && words.includes(found)).toBe(true);
  }
});

test("the word that ends first is reported; overlapping and nested words are found", () => {
  expect(new WordScan(["he", "she", "his", "hers"]).find("ahishers")).toBe("his");
  expect(new WordScan(["abcd", "bc"]).find("xabcx")).toBe("bc");
  expect(new WordScan(["敏感词", "感"]).find("这是敏感的")).toBe("感");
  expect(new WordScan(["aab"]).find("aaab")).toBe("aab");
  expect(new WordScan([]).find("anything")).toBeNull();
  expect(new WordScan(["x"]).empty).toBe(false);
});

test("thousands of words over thousands of distinct characters use the sparse tables and still find them", () => {
  const words = Array.from({ length: 5000 }, (_, i) =>
    String.fromCharCode(0x4e00 + i, 0x4e00 + ((i * 7) % 5000), 0x6000 + (i % 3000)),
  );
  const scan = new WordScan(words);
  expect(scan.find("中".repeat(100_000) + words[4321])).toBe(words[4321]!);
  expect(scan.find("中".repeat(100_000))).toBeNull();
});
