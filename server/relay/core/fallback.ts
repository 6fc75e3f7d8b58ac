// Fallbacks across models: when every channel for the requested model fails (a retryable upstream failure on
// the last attempt, or 503 model_not_available because all its channels are disabled), or the prompt does not
// fit the model's context window (the upstream's 400 "context length exceeded", or a prompt larger than every
// channel's max_input_tokens), the call is admitted again for the next model of the rule — priced, held,
// routed and logged as that model — then the next. Rules: GroupModelFallbacks[group][model] (wins, even when
// empty) else ModelFallbacks[model]; only the requested model's list is followed, each model at most once.
// Nothing here runs on a call that is served by its own model unless a rule exists (one option read then).
import type { AppDeps } from "../../deps.ts";
import { AppError } from "../../http/errors.ts";
import type { OptionStore } from "../../modules/option/store.ts";
import { countTokens, promptText } from "../tokenizer.ts";
import { admit, admitNow, clientSignal, type Admission, type RelayRequest } from "./admit.ts";
import { UpstreamError, type Routed } from "./route.ts";
import { release } from "./settle.ts";
import { callsObserved, observeAdmission } from "../observe.ts";

export type FallbackReason = "upstream_error" | "model_not_available" | "context_length_exceeded";

/** What the log's `other.fallback` says of a call served by a fallback model. */
export interface FallbackFacts {
  requested: string;
  served: string;
  /** why the model before the served one was left */
  reason: FallbackReason;
  /** every model tried, in order, with why each was left (the served one last, without a reason) */
  tried: { model: string; reason?: FallbackReason | "not_allowed" | "not_admitted" | "failed" }[];
}

/** Upstream error texts that mean "the prompt is longer than this model takes" (OpenAI and compatibles,
 * Claude, Gemini, Bedrock, Mistral, vLLM ...). */
const CONTEXT_TEXT =
  /context[ _-]?length|maximum context|context window|too many tokens|prompt is too long|input is too long|exceeds the maximum number of tokens|too large for model|maximum (?:input|prompt) length|reduce the length of the (?:messages|prompt)/i;

/** Whether an upstream's 4xx answer says the prompt exceeds the model's context window. */
export function contextExceeded(status: number, message: string, code?: string): boolean {
  if (status !== 400 && status !== 413 && status !== 422) return false;
  return code === "context_length_exceeded" || code === "string_above_max_length" || CONTEXT_TEXT.test(message);
}

/** Why a failure may move the call on to a fallback model, or null when it may not. */
export function fallbackReason(err: unknown): FallbackReason | null {
  if (err instanceof UpstreamError)
    return err.contextOverflow ? "context_length_exceeded" : err.retry ? "upstream_error" : null;
  if (err instanceof AppError && err.status === 503 && err.code === "model_not_available") return "model_not_available";
  return null;
}

const EMPTY = new Set(["", "{}"]);

/** Cheap: whether any fallback rule is configured at all (two option reads). */
export function hasFallbackRules(options: OptionStore): boolean {
  return !EMPTY.has(options.get("ModelFallbacks").trim()) || !EMPTY.has(options.get("GroupModelFallbacks").trim());
}

/** The fallback models of `model` for callers in `group`, in order, without repeats or the model itself. */
export function fallbackModels(options: OptionStore, group: string, model: string): string[] {
  if (!hasFallbackRules(options)) return [];
  const byGroup = options.json<Record<string, unknown>>("GroupModelFallbacks", {});
  const groupRules = isObject(byGroup) && Object.hasOwn(byGroup, group) ? byGroup[group] : null;
  const site = options.json<Record<string, unknown>>("ModelFallbacks", {});
  const list =
    isObject(groupRules) && Object.hasOwn(groupRules, model)
      ? groupRules[model]
      : isObject(site) && Object.hasOwn(site, model)
        ? site[model]
        : null;
  if (!Array.isArray(list)) return [];
  const out: string[] = [];
  for (const m of list) {
    const name = typeof m === "string" ? m.trim() : "";
    if (name && name !== model && !out.includes(name)) out.push(name);
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** The request as it goes to `model`: the body names it too (pass-through channels send the body as it is). */
export function requestFor(req: RelayRequest, model: string): RelayRequest {
  let body = req.body;
  if (body instanceof FormData) {
    const form = new FormData();
    for (const [k, v] of body.entries()) form.append(k, k === "model" ? model : v);
    body = form;
  } else if (body && typeof body === "object" && typeof body.model === "string") {
    body = { ...body, model };
  }
  return { ...req, model, body };
}

/**
 * The prompt is longer than every channel of the admitted model accepts (channels' max_input_tokens, all set):
 * checked only when the model has a fallback, counted exactly (off the event loop) only when the prompt's
 * byte length already exceeds the window (a token is at least one byte).
 */
async function overflowsWindow(adm: Admission): Promise<boolean> {
  const { candidates, table, pinned } = adm.routes;
  let window = 0;
  for (const ch of pinned ? [pinned] : candidates.map((c) => table.channels.get(c.channelId))) {
    const max = Number(ch?.max_input_tokens ?? 0);
    if (!(max > 0)) return false;
    window = Math.max(window, max);
  }
  const text = promptText(adm.req.body);
  if (Buffer.byteLength(text, "utf8") <= window) return false;
  return (await countTokens(text)) > window;
}

export type Outcome<A, T> =
  | {
      adm: Admission;
      routed: Routed<A, T> & { served: NonNullable<Routed<A, T>["served"]> };
      fallback: FallbackFacts | null;
    }
  | { adm: null; failure: AppError; usedChannels: number[]; fallback: FallbackFacts | null; started: number };

/**
 * Admits and routes `req` with `run`, then its fallback models while the failure allows one. A served outcome
 * keeps its admission's hold (the caller settles it); on a failed outcome every hold has been given back.
 * An admission error of the requested model other than model_not_available is thrown as before.
 */
export async function routeWithFallbacks<A, T>(
  deps: AppDeps,
  req: RelayRequest,
  run: (adm: Admission, deps: AppDeps) => Promise<Routed<A, T>>,
): Promise<Outcome<A, T>> {
  const started = performance.now();
  const tokenGroup = req.caller.group;
  let adm: Admission | null = null;
  let failure: AppError;
  let usedChannels: number[] = [];
  let chain: string[];
  try {
    adm = callsObserved()
      ? await observeAdmission(req, () => admit(deps, req))
      : (admitNow(deps, req) ?? (await admit(deps, req)));
  } catch (e) {
    if (fallbackReason(e) === null || !(chain = fallbackModels(deps.options, req.caller.group, req.model)).length)
      throw e;
    failure = e as AppError;
  }
  if (adm) {
    chain = fallbackModels(deps.options, req.caller.group, req.model);
    if (chain.length && (await overflowsWindow(adm))) {
      await release(deps, adm);
      failure = new UpstreamError(
        400,
        `the prompt exceeds the context window of model ${req.model} (the max_input_tokens of its channels)`,
        false,
        true,
      );
    } else {
      // The hold goes back if routing throws (the client went away). Inline, not in a helper: another async
      // layer on every call is another generator and two scopes.
      let routed: Routed<A, T>;
      try {
        routed = await run(adm, deps);
      } catch (e) {
        await release(deps, adm);
        throw e;
      }
      if (routed.served) return { adm, routed: routed as any, fallback: null };
      await release(deps, adm);
      usedChannels = routed.usedChannels;
      failure =
        routed.failure
        ?? new AppError(
          503,
          `no available channel for model ${req.model} in group ${req.caller.group}`,
          "model_not_found",
        );
    }
  }
  const reason = fallbackReason(failure!);
  if (!reason || !chain!.length) return { adm: null, failure: failure!, usedChannels, fallback: null, started };
  const tried: FallbackFacts["tried"] = [{ model: req.model, reason }];
  const facts = (served: string): FallbackFacts => ({ requested: req.model, served, reason, tried });
  // The call's rate-limit ticket, taken by the first admission that got that far: never counted twice.
  let ticket = adm?.ticket;
  for (const model of chain!) {
    if (clientSignal(req)?.aborted) throw new AppError(499, "the client closed the request");
    if (req.caller.modelLimits && !req.caller.modelLimits.has(model)) {
      tried.push({ model, reason: "not_allowed" });
      continue;
    }
    // Routed in the token's own group again: "auto" picks the first of its groups that serves this model.
    req.caller.group = tokenGroup;
    let next: Admission;
    try {
      const fallbackReq = requestFor(req, model);
      next = await observeAdmission(fallbackReq, () => admit(deps, fallbackReq, { ticket }));
    } catch (e) {
      // Not served in the caller's group, not priced, or the balances do not hold this model's estimate.
      const why = fallbackReason(e);
      tried.push({ model, reason: why ?? "not_admitted" });
      if (why) failure = e as AppError;
      continue;
    }
    ticket ??= next.ticket;
    if (await overflowsWindow(next)) {
      await release(deps, next);
      tried.push({ model, reason: "context_length_exceeded" });
      continue;
    }
    let routed: Routed<A, T>;
    try {
      routed = await run(next, deps);
    } catch (e) {
      await release(deps, next);
      throw e;
    }
    usedChannels = [...usedChannels, ...routed.usedChannels];
    if (routed.served) {
      tried.push({ model });
      next.started = started;
      return { adm: next, routed: { ...routed, usedChannels } as any, fallback: facts(model) };
    }
    await release(deps, next);
    failure = routed.failure ?? failure!;
    const why = fallbackReason(routed.failure);
    tried.push({ model, reason: why ?? "failed" });
    // A failure no fallback follows (the client's own bad request, a channel's refused key) is the answer.
    if (!why) break;
  }
  return { adm: null, failure: failure!, usedChannels, fallback: facts(""), started };
}
