// What the channel form asks per channel type (spec 001 §3 Channel, "types with special form fields"): the
// catalogue row's `form` (server/catalogue/channel-types.ts), so the server and the console read one list.
// Labels, placeholders and help are i18n keys under ops.ch.* (or literal text such as a URL).
import { CHANNEL_TYPES, channelType, type ChannelForm } from "../../../server/catalogue/index.ts";

export type TypeFields = ChannelForm;

/** Every type's extra fields, by type id. */
export const TYPE_FIELDS: Record<number, TypeFields> = Object.fromEntries(
  CHANNEL_TYPES.filter((t) => t.form).map((t) => [t.id, t.form!]),
);

export const fieldsFor = (type: number): TypeFields => channelType(type)?.form ?? {};

/** The settings of a channel's `setting` JSON the form edits with its own controls (new-api's channel settings). */
export const SETTING_SWITCHES = [
  "system_prompt_override",
  "force_format",
  "thinking_to_content",
  "pass_through_body_enabled",
] as const;

/** The setting JSON as an object ({} when empty or not an object). */
export function readSetting(text: string): Record<string, unknown> {
  try {
    const v = text.trim() ? JSON.parse(text) : {};
    return v && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** The setting JSON with one key set (removed when the value is empty or false), other keys kept as they were. */
export function writeSetting(text: string, key: string, value: unknown): string {
  const obj = readSetting(text);
  if (value === "" || value === false || value === null || value === undefined) delete obj[key];
  else obj[key] = value;
  return Object.keys(obj).length ? JSON.stringify(obj, null, 2) : "";
}

/** A proxy address the server accepts: http(s):// or socks5(h):// (empty is none). */
export function isProxyUrl(text: string): boolean {
  const v = text.trim();
  if (!v) return true;
  try {
    return ["http:", "https:", "socks5:", "socks5h:", "socks:"].includes(new URL(v).protocol);
  } catch {
    return false;
  }
}

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
  return [
    ...new Set(
      text
        .split(/[,\n]/)
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
}
