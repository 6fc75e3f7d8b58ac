// A custom tool's input decoded from streamed function arguments ({"input": "..."}): whatever the fragment
// boundaries (inside an escape, between a surrogate pair's halves), the pieces join to the input itself.
import { describe, expect, test } from "bun:test";
import { CustomInputStream } from "../../server/relay/formats/responses/custom-input.ts";

const INPUTS = ['*** Begin Patch\n+say "hi" \\ \u{1F600} \t/\u0001 é\n*** End Patch', "", "plain"];

function decode(fragments: string[]): { text: string; s: CustomInputStream } {
  const s = new CustomInputStream();
  return { text: fragments.map((f) => s.push(f)).join(""), s };
}

describe("custom tool input from streamed arguments", () => {
  test("every split into two and three fragments gives back the input", () => {
    for (const input of INPUTS) {
      for (const args of [
        JSON.stringify({ input }),
        JSON.stringify({ input }, null, 1),
        `{"input":"${input
          .split("")
          .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
          .join("")}"}`,
      ]) {
        for (let i = 0; i <= args.length; i++) {
          expect(decode([args.slice(0, i), args.slice(i)]).text).toBe(input);
          const j = Math.min(args.length, i + 3);
          expect(decode([args.slice(0, i), args.slice(i, j), args.slice(j)]).text).toBe(input);
        }
      }
    }
  });

  test("one character at a time, and nothing after the closing quote", () => {
    const input = 'a"b\\c\u{1F600}';
    const args = JSON.stringify({ input, other: "ignored" });
    expect(decode([...args]).text).toBe(input);
  });

  test("arguments of another shape give no text (the caller sends the whole input at the end)", () => {
    const { text, s } = decode(['{"patch": ', '"x"}']);
    expect(text).toBe("");
    expect(s.emitted).toBe(false);
    const long = decode([`{"other": "${"x".repeat(400)}"`, `, "input": "late"}`]);
    expect(long.text).toBe("");
    expect(long.s.gaveUp).toBe(true);
  });
});
