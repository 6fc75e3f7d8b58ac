// param_override as new-api applies it: literal top-level keys, or an `operations` list over dot paths.
import { describe, expect, test } from "bun:test";
import { withParamOverride } from "../../server/relay/override.ts";
import { AppError } from "../../server/http/errors.ts";

const body = () => ({
  model: "gemini-2.5-pro",
  messages: [
    { role: "system", content: " Be brief. " },
    { role: "user", content: "Hi" },
  ],
  generationConfig: { temperature: 1 },
  tags: ["a"],
});
const ops = (...operations: unknown[]) => ({ operations });

describe("literal keys", () => {
  test("each top-level key is set as given, a dotted key stays one key", () => {
    expect(withParamOverride(body(), { temperature: 0, "a.b": 1 })).toMatchObject({
      temperature: 0,
      "a.b": 1,
      model: "gemini-2.5-pro",
    });
  });
});

describe("operations", () => {
  test("set creates nested objects; keep_origin leaves an existing value", () => {
    const out: any = withParamOverride(
      body(),
      ops(
        { path: "generationConfig.thinkingConfig.thinkingBudget", mode: "set", value: 0 },
        { path: "generationConfig.temperature", mode: "set", value: 0.2, keep_origin: true },
      ),
    );
    expect(out.generationConfig).toEqual({ temperature: 1, thinkingConfig: { thinkingBudget: 0 } });
  });

  test("negative indexes and * reach array elements", () => {
    const out: any = withParamOverride(
      body(),
      ops(
        { path: "messages.-1.content", mode: "append", value: "!" },
        { path: "messages.*.content", mode: "trim_space" },
      ),
    );
    expect(out.messages.map((m: any) => m.content)).toEqual(["Be brief.", "Hi!"]);
  });

  test("move, copy, delete; append and prepend on arrays, strings and objects", () => {
    const out: any = withParamOverride(
      body(),
      ops(
        { mode: "copy", from: "generationConfig.temperature", to: "temperature" },
        { mode: "move", from: "tags", to: "labels" },
        { path: "labels", mode: "prepend", value: ["z"] },
        { path: "generationConfig", mode: "append", value: { topK: 3 } },
        { path: "model", mode: "prepend", value: "models/" },
        { path: "messages.0", mode: "delete" },
      ),
    );
    expect(out).toMatchObject({
      temperature: 1,
      labels: ["z", "a"],
      generationConfig: { temperature: 1, topK: 3 },
      model: "models/gemini-2.5-pro",
    });
    expect(out).not.toHaveProperty("tags");
    expect(out.messages).toEqual([{ role: "user", content: "Hi" }]);
  });

  test("string edits: prefixes, suffixes, case, replace and regex_replace", () => {
    const out: any = withParamOverride(
      { a: "gpt-4o-mini", b: "x", c: "Hello", d: "v1-v2" },
      ops(
        { path: "a", mode: "trim_prefix", value: "gpt-" },
        { path: "a", mode: "trim_suffix", value: "-mini" },
        { path: "b", mode: "ensure_prefix", value: "pre-" },
        { path: "b", mode: "ensure_suffix", value: "-post" },
        { path: "c", mode: "to_upper" },
        { path: "d", mode: "replace", from: "v", to: "w" },
        { path: "d", mode: "regex_replace", from: "w(\\d)", to: "n$1" },
      ),
    );
    expect(out).toEqual({ a: "4o", b: "pre-x-post", c: "HELLO", d: "n1-n2" });
  });

  test("conditions: modes, invert, pass_missing_key, AND/OR, and the call's facts", () => {
    const run = (conditions: unknown[], logic?: string) =>
      (
        withParamOverride(body(), ops({ path: "hit", mode: "set", value: true, conditions, logic }), {
          request_path: "/v1/chat/completions",
        }) as any
      ).hit === true;
    expect(run([{ path: "model", mode: "prefix", value: "gemini" }])).toBe(true);
    expect(
      run([
        { path: "model", mode: "suffix", value: "pro" },
        { path: "model", mode: "contains", value: "nope" },
      ]),
    ).toBe(true);
    expect(
      run(
        [
          { path: "model", mode: "suffix", value: "pro" },
          { path: "model", mode: "contains", value: "nope" },
        ],
        "AND",
      ),
    ).toBe(false);
    expect(run([{ path: "generationConfig.temperature", mode: "gte", value: 1 }])).toBe(true);
    expect(run([{ path: "generationConfig.temperature", mode: "lt", value: 1 }])).toBe(false);
    expect(run([{ path: "model", mode: "full", value: "gemini-2.5-pro", invert: true }])).toBe(false);
    expect(run([{ path: "missing", mode: "full", value: 1 }])).toBe(false);
    expect(run([{ path: "missing", mode: "full", value: 1, pass_missing_key: true }])).toBe(true);
    expect(run([{ path: "request_path", mode: "full", value: "/v1/chat/completions" }])).toBe(true);
  });

  test("pass stops the list; return_error refuses with its message and status", () => {
    const out: any = withParamOverride(body(), ops({ mode: "pass" }, { path: "x", mode: "set", value: 1 }));
    expect(out).not.toHaveProperty("x");
    let err: unknown;
    try {
      withParamOverride(body(), ops({ mode: "return_error", value: { message: "no", status_code: 429 } }));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect([(err as AppError).status, (err as AppError).message]).toEqual([429, "no"]);
  });

  test("the client's body is not changed in place", () => {
    const b = body();
    withParamOverride(b, ops({ path: "messages.0.content", mode: "set", value: "x" }));
    expect(b.messages[0]!.content).toBe(" Be brief. ");
  });
});
