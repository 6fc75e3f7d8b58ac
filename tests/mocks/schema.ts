// What the mock upstreams need of schemas: whether one is JSON Schema as OpenAI and Anthropic insist (lower-case
// types; Gemini's "OBJECT" is refused there), and a value that fits one (the mocks answer structured output
// with it, so a test can check the answer parses and has the asked-for shape).

const JSON_TYPES = new Set(["object", "string", "number", "integer", "boolean", "array", "null"]);

/** The first problem the real OpenAI / Anthropic APIs would refuse a schema for, or null. */
export function jsonSchemaProblem(schema: unknown, where = "schema"): string | null {
  if (!schema || typeof schema !== "object") return null;
  const s = schema as Record<string, any>;
  const types = Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type];
  for (const t of types)
    if (!JSON_TYPES.has(t)) return `${where}: '${String(t)}' is not valid under any of the given schemas`;
  if (s.nullable !== undefined) return `${where}: 'nullable' is not a JSON Schema keyword`;
  for (const [name, sub] of Object.entries(s.properties ?? {})) {
    const p = jsonSchemaProblem(sub, `${where}.properties.${name}`);
    if (p) return p;
  }
  if (s.items) return jsonSchemaProblem(s.items, `${where}.items`);
  for (const sub of s.anyOf ?? []) {
    const p = jsonSchemaProblem(sub, `${where}.anyOf`);
    if (p) return p;
  }
  return null;
}

/** A small value matching a schema (JSON Schema or Gemini's, either case). */
export function sampleFor(schema: unknown, depth = 0): unknown {
  if (!schema || typeof schema !== "object" || depth > 8) return "x";
  const s = schema as Record<string, any>;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  const t = String(
    (Array.isArray(s.type) ? s.type.find((x: string) => x !== "null") : s.type) ?? (s.properties ? "object" : "string"),
  ).toLowerCase();
  if (t === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(s.properties ?? {})) out[k] = sampleFor(v, depth + 1);
    if (!s.properties) out.answer = "Hello";
    return out;
  }
  if (t === "array") return [sampleFor(s.items, depth + 1)];
  if (t === "integer") return 7;
  if (t === "number") return 1.5;
  if (t === "boolean") return true;
  return "Paris";
}
