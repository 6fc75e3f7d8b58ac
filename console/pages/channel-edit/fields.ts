// What the channel form asks per channel type (spec 001 §3 Channel, "types with special form fields").
// Each entry names the labels and hints the form shows; anything missing falls back to the generic fields.

export interface TypeFields {
  /** Label and hint for the `other` field, when the type uses it. */
  other?: { label: string; placeholder: string; defaultValue?: string };
  /** Shows the organization field (OpenAI). */
  organization?: boolean;
  /** Base URL label key and whether it is required. */
  baseUrl?: { label: string; placeholder: string; required?: boolean };
  /** Hint for the key box (credential formats). */
  keyHint?: string;
  /** The key is a JSON document (cloud credentials), so batch splitting by line does not apply. */
  jsonKey?: boolean;
}

/** Keys are i18n keys under ops.ch.*; the form translates them. */
export const TYPE_FIELDS: Record<number, TypeFields> = {
  1: { organization: true },
  2: { baseUrl: { label: "ops.ch.mjUrl", placeholder: "ops.ch.mjUrlHint", required: true } },
  3: {
    baseUrl: { label: "ops.ch.azureEndpoint", placeholder: "https://your-resource.openai.azure.com", required: true },
    other: { label: "ops.ch.apiVersion", placeholder: "2024-10-21", defaultValue: "2024-10-21" },
  },
  5: { baseUrl: { label: "ops.ch.mjUrl", placeholder: "ops.ch.mjUrlHint", required: true } },
  8: { baseUrl: { label: "ops.ch.fullUrl", placeholder: "https://example.com/v1/chat/completions", required: true } },
  15: { keyHint: "ops.ch.keyBaidu" },
  18: { other: { label: "ops.ch.sparkVersion", placeholder: "v2.1", defaultValue: "v2.1" }, keyHint: "ops.ch.keySpark" },
  21: { other: { label: "ops.ch.knowledgeId", placeholder: "ops.ch.knowledgeIdHint" } },
  22: { baseUrl: { label: "ops.ch.baseUrl", placeholder: "https://fastgpt.run/api/openapi" } },
  23: { keyHint: "ops.ch.keyTencent" },
  33: { other: { label: "ops.ch.region", placeholder: "us-east-1" }, keyHint: "ops.ch.keyAws" },
  36: { baseUrl: { label: "ops.ch.sunoUrl", placeholder: "ops.ch.sunoUrlHint", required: true } },
  37: { baseUrl: { label: "ops.ch.baseUrl", placeholder: "https://api.dify.ai", required: true } },
  39: { other: { label: "ops.ch.accountId", placeholder: "d6b5da8hk1awo8nap34ube6gh" } },
  40: { baseUrl: { label: "ops.ch.baseUrl", placeholder: "https://api.siliconflow.cn" } },
  41: { other: { label: "ops.ch.region", placeholder: "us-central1" }, keyHint: "ops.ch.keyVertex", jsonKey: true },
  45: { baseUrl: { label: "ops.ch.baseUrl", placeholder: "https://ark.cn-beijing.volces.com" } },
};

export const fieldsFor = (type: number): TypeFields => TYPE_FIELDS[type] ?? {};

/** Checks a JSON object text; empty is allowed (the field is optional). */
export function isJsonObjectOrEmpty(text: string): boolean {
  if (!text.trim()) return true;
  try {
    const v = JSON.parse(text);
    return !!v && typeof v === "object" && !Array.isArray(v);
  } catch {
    return false;
  }
}

/** Splits a comma/newline list into unique trimmed names. */
export function splitNames(text: string): string[] {
  return [...new Set(text.split(/[,\n]/).map((s) => s.trim()).filter(Boolean))];
}
