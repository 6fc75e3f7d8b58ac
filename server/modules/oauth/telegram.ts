// Telegram's login widget (core.telegram.org/widgets/login): the browser passes on the fields Telegram
// signed. Valid when hash = hex HMAC-SHA256 of the data-check-string (every other field as "key=value",
// sorted by key, joined by "\n") keyed with SHA-256 of the bot token, and auth_date is recent.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { badRequest } from "../../http/errors.ts";
import { nowSeconds } from "../../../db/index.ts";
import type { ExternalIdentity } from "./model.ts";

/** Signed data older than this is refused, so a leaked login link does not work forever. */
export const TELEGRAM_AUTH_MAX_AGE_SECONDS = 24 * 3600;

export const TELEGRAM_MSG = {
  invalid: "invalid Telegram sign-in data",
  stale: "the Telegram sign-in has expired, please sign in again",
} as const;

export function telegramIdentity(params: URLSearchParams, botToken: string, now = nowSeconds()): ExternalIdentity {
  const hash = params.get("hash") ?? "";
  const keys = [...new Set(params.keys())].filter((k) => k !== "hash").sort();
  const checkString = keys.map((k) => `${k}=${params.get(k)}`).join("\n");
  const expected = createHmac("sha256", createHash("sha256").update(botToken).digest()).update(checkString).digest();
  const given = /^[0-9a-f]{64}$/i.test(hash) ? Buffer.from(hash, "hex") : null;
  if (!botToken || !given || !timingSafeEqual(given, expected)) throw badRequest(TELEGRAM_MSG.invalid);
  const id = params.get("id") ?? "";
  const authDate = Number(params.get("auth_date"));
  if (!/^\d+$/.test(id) || !Number.isInteger(authDate)) throw badRequest(TELEGRAM_MSG.invalid);
  if (now - authDate > TELEGRAM_AUTH_MAX_AGE_SECONDS) throw badRequest(TELEGRAM_MSG.stale);
  const name = [params.get("first_name"), params.get("last_name")].filter(Boolean).join(" ").trim();
  return { id, displayName: name || params.get("username") || "", email: "" };
}
