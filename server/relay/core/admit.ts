// Admission: everything decided before any upstream is called — the token may use the model, the prompt
// passes the sensitive-word filter, some channel serves the model for the caller's group, the model has a
// price, the rate limits allow one more call, and the balances hold the call's estimate.
import type { AppDeps } from "../../deps.ts";
import type { Channel } from "../../../db/schema.ts";
import { AppError } from "../../http/errors.ts";
import type { Caller } from "../auth.ts";
import type { ClientFormat, RelayMode } from "../providers/types.ts";
import { relayState, type RoutingTable } from "../state.ts";
import type { Candidate } from "../select.ts";
import {
  affordableOutput,
  heldPrompt,
  MIN_ANSWER_TOKENS,
  outputBound,
  preConsumeQuota,
  priceFor,
  worstCaseQuota,
  type Price,
} from "../billing.ts";
import { askedOutput, capOutput, generates } from "./output-cap.ts";
import { findSensitive, NO_RATE_LIMIT, rateLimitOn, takeRateLimit, type RateTicket } from "../limits.ts";
import { estimatePromptTokens } from "../tokenizer.ts";
import type { Hold } from "./ledger.ts";
import { AUTO_GROUP, pickAutoGroup } from "../../modules/group/auto.ts";
import { takeTokenLimits, type LimitLease } from "../../modules/token/limits.ts";
import { usableGroups } from "../../modules/token/service.ts";
import { DEFAULT_GROUP, ROLE } from "../../catalogue/index.ts";
import type { ClientJson } from "../formats/client-json.ts";
import type { AffinityCall } from "../affinity.ts";

/** One client call as every endpoint kind hands it to the relay core. */
export interface RelayRequest {
  mode: RelayMode;
  format: ClientFormat;
  path: string;
  search: string;
  /** JSON object, or FormData for the multipart audio routes */
  body: any;
  /** The model the call is priced and routed by (a task's action price key, e.g. mj_imagine, for tasks). */
  model: string;
  stream: boolean;
  caller: Caller;
  ip: string;
  /** Aborted when the client goes away (read it through clientSignal()). */
  signal?: AbortSignal;
  /** The HTTP request the call came in on, when its signal is read only if needed (clientSignal): creating a
   * request's signal has a cost, and a getter in the object literal made three heap cells per call. */
  incoming?: Request;
  /** Client headers the route chose for the upstream (openai-beta of a realtime session), lower-case names; part of
   * the response cache's key (anthropic-beta on /v1/messages). An exchange decides what it forwards per attempt
   * from httpHeaders instead (relay/forward.ts). */
  headers?: Record<string, string>;
  /** The JSON text `body` was parsed from, while `body` is unchanged: sent upstream as it is where the relay
   * would send the same object (formats/client-json.ts). Whoever changes `body` in place drops this. */
  json?: ClientJson;
  /** The client's request headers: read by the response cache (Cache-Control, x-switchyard-cache) and for the
   * headers an attempt forwards (relay/forward.ts). */
  httpHeaders?: Headers;
  /** The request came in on a connection (not through app.handle()), so its answer's body is read by the
   * server writing it out and by nothing else unless the response cache records it. */
  socket?: boolean;
}

/** The signal that aborts when the call's client goes away, if it has one. */
export function clientSignal(req: RelayRequest): AbortSignal | undefined {
  return req.signal ?? req.incoming?.signal;
}

/** Where the call may go: the channels of the caller's group for the model, or the one the token pins. */
export interface Routes {
  table: RoutingTable;
  candidates: Candidate[];
  pinned: Channel | null;
}

export interface Admission {
  req: RelayRequest;
  started: number;
  price: Price;
  /** billed units of a per-call price (images: n) */
  calls: number;
  hold: Hold;
  ticket: RateTicket;
  routes: Routes;
  /** What the call holds against its token's limits (rpm, tpm, concurrency, budget); null when it has none. */
  limits?: LimitLease | null;
  /** The conversation the call belongs to (relay/affinity.ts), set by route() for calls that carry one. */
  affinity?: AffinityCall;
  /** The key index the last attempt used on a multi-key channel, for the affinity pin. */
  keyIndex?: number;
  /** A generating call held at a per-token price: the prompt estimate its hold was worked out from, so that a
   * stream can tell how many output tokens the hold pays (core/stream-budget.ts). */
  prompt?: number;
}

export interface AdmitOptions {
  /** The hold, when the endpoint knows it better than the prompt estimate (a task's fixed price). */
  estimate?: (price: Price) => number;
  /** The rate-limit ticket of the call this admission falls back from (core/fallback.ts): not taken twice. */
  ticket?: RateTicket;
}

/**
 * The usual admission, made without a promise: no write-behind backlog to wait for, the routing table current,
 * no pinned channel, no rate limit to take, no token limits, and a hold the ledger takes without I/O. Null when
 * any of that needs I/O (then admit() does the whole admission). Refusals are thrown as admit() rejects them.
 * An async admission that never suspends still builds its generator, two scopes and a promise, and its caller
 * waits a turn of the loop for it.
 */
export function admitNow(deps: AppDeps, req: RelayRequest, opts: AdmitOptions = {}): Admission | null {
  const state = relayState(deps);
  const table = state.routing.current();
  const { caller } = req;
  if (
    !table
    || state.writer.room()
    || caller.pinnedChannel !== null
    || caller.limits
    || (!opts.ticket && rateLimitOn(deps))
  )
    return null;
  const started = performance.now();
  const candidates = screen(deps, req, table, false);
  const price = priceFor(
    deps.options,
    req.model,
    caller.group,
    caller.acceptUnsetModel,
    caller.userGroup,
    caller.role >= ROLE.admin,
  );
  const { calls, estimate, least, output } = estimated(deps, req, price, opts);
  const hold =
    state.ledger.takeNow?.(
      { userId: caller.userId, tokenId: caller.tokenId, unlimited: caller.unlimited },
      estimate,
      least,
    ) ?? null;
  if (hold === null) return null;
  if (hold.amount < estimate && output) capped(req, price, output, hold.amount);
  return {
    req,
    started,
    price,
    calls,
    hold,
    ticket: opts.ticket ?? NO_RATE_LIMIT,
    routes: { table, candidates, pinned: null },
    limits: null,
    prompt: output?.prompt,
  };
}

export async function admit(deps: AppDeps, req: RelayRequest, opts: AdmitOptions = {}): Promise<Admission> {
  const started = performance.now();
  const { caller, model } = req;
  const state = relayState(deps);
  // The write-behind is too far behind the calls (the database writes slower than they settle): wait for it.
  const room = state.writer.room();
  if (room) await room;
  const table = state.routing.current() ?? (await state.routing.get());
  const candidates = screen(deps, req, table, caller.pinnedChannel !== null);
  const pinned = caller.pinnedChannel !== null ? await pinnedChannel(deps, table, caller.pinnedChannel) : null;
  const price = priceFor(
    deps.options,
    model,
    caller.group,
    caller.acceptUnsetModel,
    caller.userGroup,
    caller.role >= ROLE.admin,
  );
  const ticket =
    opts.ticket ?? (rateLimitOn(deps) ? await takeRateLimit(deps, caller.userId, caller.group) : NO_RATE_LIMIT);
  const { calls, estimate, least, output } = estimated(deps, req, price, opts);
  // The token's own limits and budget (none: nothing), taken with this call's estimate before the hold; a
  // fallback's admission (opts.ticket) does not count the request again.
  const limits = caller.limits
    ? await takeTokenLimits(
        deps,
        caller.tokenId,
        opts.ticket ? { ...caller.limits, rpm: 0 } : caller.limits,
        budgetEstimate(deps, req, price, estimate, output),
      )
    : null;
  let hold: Hold;
  try {
    const payer = { userId: caller.userId, tokenId: caller.tokenId, unlimited: caller.unlimited };
    hold = state.ledger.takeNow?.(payer, estimate, least) ?? (await state.ledger.take(payer, estimate, least));
  } catch (e) {
    if (limits) await limits.end();
    throw e;
  }
  if (hold.amount < estimate && output) capped(req, price, output, hold.amount);
  return {
    req,
    started,
    price,
    calls,
    hold,
    ticket,
    routes: { table, candidates, pinned },
    limits,
    prompt: output?.prompt,
  };
}

/** The checks that need no I/O: the token may use the model, the prompt passes the sensitive-word filter, and
 * some channel of the caller's group serves the model (unless the token pins one). The candidates. */
function screen(deps: AppDeps, req: RelayRequest, table: RoutingTable, pins: boolean): Candidate[] {
  const { caller, model } = req;
  if (caller.modelLimits && !caller.modelLimits.has(model)) {
    throw new AppError(403, `this token is not allowed to use model ${model}`, "model_not_allowed");
  }
  if (findSensitive(deps, req.body) !== null)
    throw new AppError(400, "the prompt contains a sensitive word and was refused", "sensitive_words_detected");
  // A token of group "auto" (new-api's auto groups) runs in the first of AutoGroups the user may use that serves
  // the model; from here on the call is routed, priced and logged in that group.
  if (caller.group === AUTO_GROUP) {
    const serves = (g: string) => (table.abilities.get(`${g}\n${model}`)?.length ?? 0) > 0;
    caller.group =
      pickAutoGroup(deps.options, (u) => usableGroups(deps, u), caller.userGroup ?? DEFAULT_GROUP, serves)
      ?? caller.group;
  }
  const candidates = table.abilities.get(`${caller.group}\n${model}`) ?? [];
  if (!pins && candidates.length === 0) {
    // A model the group has channels for, all disabled, is down (503, which SDKs retry); a model no channel
    // of the group serves does not exist for the caller (404: not_found_error / NOT_FOUND in the native formats).
    if (table.offline.has(`${caller.group}\n${model}`)) {
      throw new AppError(
        503,
        `no available channel for model ${model} in group ${caller.group}: its channels are disabled`,
        "model_not_available",
      );
    }
    throw new AppError(
      404,
      `the model '${model}' does not exist or you do not have access to it (no channel serves it in group ${caller.group})`,
      "model_not_found",
    );
  }
  return candidates;
}

/** What a generating call's hold was worked out from, to cap its output when the hold is smaller. */
interface OutputFacts {
  prompt: number;
  bound: number;
}

interface Estimate {
  calls: number;
  /** the hold that covers the call's worst case */
  estimate: number;
  /** the smallest hold the call can still run on (capped to what it pays); `estimate` when it cannot be capped */
  least: number;
  output: OutputFacts | null;
}

/**
 * The call's billed units (images: n) and the quota its hold takes before the answer is known. A call that
 * generates tokens at a per-token price holds its worst case: the prompt estimate plus its output bound (its
 * max-tokens field, else the model's output limit) at the completion price; it can run on less, capped to what
 * that pays, down to MIN_ANSWER_TOKENS. Per-call prices and tasks hold their price, other calls the prompt
 * estimate plus PreConsumedQuota.
 */
function estimated(deps: AppDeps, req: RelayRequest, price: Price, opts: AdmitOptions): Estimate {
  const body = req.body;
  const images = req.mode === "images" || req.mode === "image_edits";
  const calls = images
    ? Math.max(1, Math.min(10, Math.floor(Number(body instanceof FormData ? body.get("n") : body?.n) || 1)))
    : 1;
  if (opts.estimate) {
    const estimate = opts.estimate(price);
    return { calls, estimate, least: estimate, output: null };
  }
  if (!price.perCall && generates(req)) {
    const prompt = heldPrompt(estimatePromptTokens(body));
    const bound = outputBound(price, askedOutput(req));
    const estimate = worstCaseQuota(price, prompt, bound);
    const least = Math.min(estimate, worstCaseQuota(price, prompt, MIN_ANSWER_TOKENS));
    return { calls, estimate, least, output: { prompt, bound } };
  }
  const maxTokens = Math.max(
    0,
    Math.floor(Number(body?.max_tokens ?? body?.max_completion_tokens ?? body?.max_output_tokens) || 0),
  );
  const estimate = preConsumeQuota(
    price,
    estimatePromptTokens(body),
    maxTokens,
    deps.options.number("PreConsumedQuota", 0),
    calls,
  );
  return { calls, estimate, least: estimate, output: null };
}

/**
 * What a call counts against its token's budget before it runs: the prompt estimate plus its max-tokens field, or
 * plus PreConsumedQuota without one — not the worst case its hold covers, which for a call naming no bound is the
 * model's whole output limit and would refuse every such call on a budget smaller than that. What the call
 * costs replaces it once it is settled.
 */
function budgetEstimate(
  deps: AppDeps,
  req: RelayRequest,
  price: Price,
  estimate: number,
  output: OutputFacts | null,
): number {
  if (!output) return estimate;
  const guess = preConsumeQuota(
    price,
    estimatePromptTokens(req.body),
    askedOutput(req),
    deps.options.number("PreConsumedQuota", 0),
  );
  return Math.min(estimate, guess);
}

/** The hold paid less than the call's worst case: its output is capped to what the hold pays (the client's
 * body gets the lower max-tokens field, which the adaptor sends upstream under the upstream's own name). */
function capped(req: RelayRequest, price: Price, output: OutputFacts, held: number): void {
  const cap = affordableOutput(price, output.prompt, held, output.bound);
  if (cap > 0 && cap < output.bound) capOutput(req, cap);
}

async function pinnedChannel(deps: AppDeps, table: RoutingTable, id: number): Promise<Channel> {
  const hit = table.channels.get(id);
  if (hit) return hit;
  const row = await deps.db.selectFrom("channels").select("id").where("id", "=", id).executeTakeFirst();
  throw row
    ? new AppError(403, `channel ${id} is disabled`, "channel_disabled")
    : new AppError(400, `channel ${id} does not exist`, "channel_not_found");
}
