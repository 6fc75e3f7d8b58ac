// A call's output bound in the client's own terms: which max-tokens field its format has, what it asked for,
// and lowering it when the payer's balance buys less than the whole answer. The adaptors carry the field over
// to the upstream's own name (max_tokens, max_completion_tokens, max_output_tokens, maxOutputTokens).
import type { RelayRequest } from "./admit.ts";
import { REASONING_MODEL } from "../formats/reasoning.ts";

/** The call generates tokens billed per token, bounded by a max-tokens field of its format. */
export function generates(req: RelayRequest): boolean {
  return (req.mode === "chat" || req.mode === "completions" || req.mode === "responses") && isObject(req.body);
}

/** The output tokens the client asked for at most; 0 when it named no bound. */
export function askedOutput(req: RelayRequest): number {
  const b = req.body;
  let n: unknown;
  if (req.format === "gemini") n = isObject(b.generationConfig) ? b.generationConfig.maxOutputTokens : undefined;
  else if (req.format === "claude") n = b.max_tokens;
  else if (req.mode === "responses") n = b.max_output_tokens;
  else n = b.max_completion_tokens ?? b.max_tokens;
  const v = Math.floor(Number(n));
  return Number.isFinite(v) && v > 0 ? v : 0;
}

/**
 * The client's body with its output bound lowered to `cap`, as a new object: the client's JSON text no longer
 * says the same, so it is not sent as it is (RelayRequest.json).
 */
export function capOutput(req: RelayRequest, cap: number): void {
  const b = req.body;
  let body: Record<string, any>;
  if (req.format === "gemini")
    body = {
      ...b,
      generationConfig: { ...(isObject(b.generationConfig) ? b.generationConfig : {}), maxOutputTokens: cap },
    };
  else if (req.format === "claude") body = { ...b, max_tokens: cap };
  else if (req.mode === "responses") body = { ...b, max_output_tokens: cap };
  else if (b.max_completion_tokens != null && b.max_tokens != null)
    body = { ...b, max_completion_tokens: cap, max_tokens: cap };
  else if (
    b.max_completion_tokens != null
    || (b.max_tokens == null && REASONING_MODEL.test(String(b.model ?? req.model)))
  )
    body = { ...b, max_completion_tokens: cap };
  else body = { ...b, max_tokens: cap };
  req.body = body;
  req.json = undefined;
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof FormData);
}
