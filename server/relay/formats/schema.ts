// Gemini's schemas (function declarations, responseSchema) are an OpenAPI 3.0 subset written with
// upper-case type names ("OBJECT", "STRING"), `nullable`, int64 counts as strings ("minItems": "1") and
// Google-only keys (propertyOrdering). OpenAI and Claude want JSON Schema: sent as they are, the upstream
// answers 400 ("'OBJECT' is not valid under any of the given schemas"). One recursive, linear pass.

const COUNT_KEYS = new Set(["minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"]);
/** Keys of Gemini's Schema that JSON Schema has no use for. */
const DROPPED_KEYS = new Set(["propertyOrdering", "nullable"]);
/** Keys whose value is a map of name → schema. */
const MAP_KEYS = new Set(["properties", "$defs", "definitions"]);
/** Keys whose value is one schema or a list of them. */
const SCHEMA_KEYS = new Set(["items", "anyOf", "oneOf", "allOf", "not", "additionalProperties", "prefixItems"]);

/** Past this depth a schema is left as it is (Gemini itself refuses deeper ones). */
const MAX_DEPTH = 64;

function jsonType(t: unknown): unknown {
  if (typeof t !== "string") return t;
  const lower = t.toLowerCase();
  return lower === "type_unspecified" ? undefined : lower;
}

/**
 * A Gemini schema as JSON Schema: type names lower-cased, `nullable: true` folded into the type
 * (["string", "null"]), count keys as numbers, propertyOrdering dropped. A JSON Schema passes unchanged.
 */
export function geminiSchemaToJson(schema: unknown, depth = 0): unknown {
  if (Array.isArray(schema)) return schema.map((s) => geminiSchemaToJson(s, depth + 1));
  if (!schema || typeof schema !== "object" || depth > MAX_DEPTH) return schema;
  const src = schema as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(src)) {
    if (DROPPED_KEYS.has(k)) continue;
    if (k === "type") {
      const t = Array.isArray(v) ? v.map(jsonType).filter((x) => x !== undefined) : jsonType(v);
      if (t !== undefined) out.type = t;
    } else if (COUNT_KEYS.has(k) && typeof v === "string" && /^\d+$/.test(v)) out[k] = Number(v);
    else if (MAP_KEYS.has(k) && v && typeof v === "object" && !Array.isArray(v)) {
      out[k] = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, geminiSchemaToJson(s, depth + 1)]));
    } else if (SCHEMA_KEYS.has(k)) out[k] = typeof v === "boolean" ? v : geminiSchemaToJson(v, depth + 1);
    else out[k] = v;
  }
  if (src.nullable === true) {
    if (typeof out.type === "string") out.type = [out.type, "null"];
    else if (Array.isArray(out.type) && !out.type.includes("null")) out.type = [...out.type, "null"];
    else if (out.type === undefined && Array.isArray(out.anyOf)) out.anyOf = [...out.anyOf, { type: "null" }];
  }
  return out;
}
