// The task endpoint kind: submit → poll → settle. A submit is admitted like any call (token, model limits,
// sensitive words, price, rate limit) with its fixed price as the hold, routed over the channels whose
// provider runs tasks of the platform (retrying on failures another channel may not share), and paid only
// when the upstream takes the job; a refusal gives the hold back. The client-format front ends
// (endpoints/midjourney.ts, suno.ts, video.ts) write the task row and answer; the poller
// (jobs/task-poller.ts) and core/task-settle.ts bring the row to its end and refund a failure.
import type { AppDeps } from "../../deps.ts";
import type { Channel } from "../../../db/schema.ts";
import { AppError } from "../../http/errors.ts";
import { QUOTA_PER_UNIT } from "../../catalogue/index.ts";
import { DEFAULT_TASK_PRICES } from "../../catalogue/tasks.ts";
import { recordUpstreamError } from "../../http/metrics.ts";
import type { Price } from "../billing.ts";
import { retryable } from "../select.ts";
import { scrub } from "../formats/scrub.ts";
import type { ProviderCall } from "../providers/types.ts";
import { taskAdaptorFor, type SubmitOutcome, type TaskAdaptor } from "../providers/tasks.ts";
import { admit, type Admission, type RelayRequest } from "../core/admit.ts";
import { mappedStatus, providerCall, reportFailure, route, UpstreamError } from "../core/route.ts";
import { recordError, release } from "../core/settle.ts";
import { chargeTask } from "../core/task-settle.ts";
import {
  observeAdmission,
  observeAttempt,
  observeAttemptEnd,
  observeTaskAccepted,
  observeTaskCall,
  observeTaskCharging,
} from "../observe.ts";
import { fetchBody } from "../../infra/stream-client.ts";

export interface TaskSubmit {
  /** `model` is the price key the task is billed and routed by (mj_imagine, suno_music, sora-2, ...). */
  req: RelayRequest;
  platform: TaskAdaptor["platform"];
  /** Billed units of the price: 1 per call, or the seconds of a video. */
  units: number;
  /** The channel that must take the task (actions on an earlier drawing go to the channel that made it). */
  channelId?: number;
  /** The upstream path and body of one attempt (they may depend on the channel and its mapped model). */
  path(channel: Channel): string;
  body(channel: Channel, call: ProviderCall): unknown;
  action: string;
}

export interface TaskAccepted {
  accepted: true;
  outcome: SubmitOutcome;
  adm: Admission;
  channel: Channel;
  keyIndex: number;
  /** the quota paid */
  quota: number;
}

export interface TaskRefused {
  accepted: false;
  outcome: SubmitOutcome;
  channel: Channel;
}

/** An upstream that answered but did not take the job, in a way the next channel may not repeat. */
class Refused extends UpstreamError {
  constructor(
    public outcome: SubmitOutcome,
    public channel: Channel,
  ) {
    super(503, outcome.message ?? "the upstream refused the task", true);
  }
}

/** The quota a task costs: its fixed price (or, for a model priced only by ratio, the catalogue's default
 * price for it) × QUOTA_PER_UNIT × group ratio × units. */
export function taskPrice(price: Price, key: string): Price {
  if (price.perCall) return price;
  return { ...price, perCall: true, modelPrice: DEFAULT_TASK_PRICES[key] ?? 0, modelRatio: 0 };
}

export function taskQuota(price: Price, units: number): number {
  return Math.round(price.modelPrice * QUOTA_PER_UNIT * price.groupRatio * units);
}

/** Submits the task, observed (relay/observe.ts: its metrics and trace; nothing when both are off). */
export function submitTask(deps: AppDeps, sub: TaskSubmit): Promise<TaskAccepted | TaskRefused> {
  return observeTaskCall(sub.req, () => submit(deps, sub));
}

async function submit(deps: AppDeps, sub: TaskSubmit): Promise<TaskAccepted | TaskRefused> {
  const { req } = sub;
  if (!deps.options.bool("TaskEnabled"))
    throw new AppError(403, "task relays are turned off on this site (TaskEnabled)", "task_disabled");
  const caller = sub.channelId ? { ...req.caller, pinnedChannel: sub.channelId } : req.caller;
  let quota = 0;
  const adm = await observeAdmission(req, () =>
    admit(
      deps,
      { ...req, caller },
      {
        estimate: (price) => (quota = taskQuota(taskPrice(price, req.model), sub.units)),
      },
    ),
  );
  adm.price = taskPrice(adm.price, req.model);
  let routed;
  try {
    routed = await route(
      deps,
      adm,
      (channel) => {
        const a = taskAdaptorFor(channel.type);
        return a && a.platform === sub.platform ? a : null;
      },
      async (adaptor, channel) => {
        const result = await attempt(deps, sub, adaptor, channel);
        observeAttemptEnd(req, result);
        return result;
      },
    );
  } catch (e) {
    await release(deps, adm);
    throw e;
  }
  const { served, usedChannels } = routed;
  if (served?.result.outcome.accepted) {
    const { outcome, keyIndex } = served.result;
    observeTaskCharging(req);
    const paid = await chargeTask(deps, adm, quota, {
      channel: served.channel,
      usedChannels,
      action: sub.action,
      taskId: outcome.id,
    });
    observeTaskAccepted(adm, served.channel.id, paid, req);
    return { accepted: true, outcome, adm, channel: served.channel, keyIndex, quota: paid };
  }
  await release(deps, adm);
  if (served) return { accepted: false, outcome: served.result.outcome, channel: served.channel };
  const failure = routed.failure;
  if (failure instanceof Refused) return { accepted: false, outcome: failure.outcome, channel: failure.channel };
  const err =
    failure
    ?? new AppError(503, `no available channel for model ${req.model} in group ${req.caller.group}`, "model_not_found");
  recordError(deps, req, err, usedChannels.at(-1) ?? 0, usedChannels, adm.started);
  throw err;
}

async function attempt(
  deps: AppDeps,
  sub: TaskSubmit,
  adaptor: TaskAdaptor,
  channel: Channel,
): Promise<{ outcome: SubmitOutcome; keyIndex: number } | AppError> {
  const call = providerCall(sub.req, channel, deps.options);
  observeAttempt(sub.req, call);
  const up = adaptor.request(
    { baseUrl: call.baseUrl, key: call.key, channelType: channel.type },
    "POST",
    sub.path(channel),
    sub.body(channel, call),
  );
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error("timeout")), deps.config.relayTimeoutMs);
  let res: Response;
  let text: string;
  try {
    res = await fetch(up.url, {
      method: up.method ?? "POST",
      headers: up.headers,
      body: fetchBody(up.body),
      signal: abort.signal,
      redirect: "manual",
    });
    text = await res.text();
  } catch {
    const timedOut = (abort.signal.reason as Error)?.message === "timeout";
    recordUpstreamError(channel.id);
    reportFailure(deps, call, undefined, timedOut ? "timeout" : "connection failed");
    return new UpstreamError(
      timedOut ? 504 : 502,
      timedOut ? "the upstream channel did not answer in time" : "could not connect to the upstream channel",
      true,
    );
  } finally {
    clearTimeout(timer);
  }
  if (!res.ok) {
    const message = scrub(adaptor.errorMessage(res.status, text), call);
    recordUpstreamError(channel.id);
    reportFailure(deps, call, res.status, message);
    return new UpstreamError(mappedStatus(channel, res.status), message, retryable(res.status, deps.options));
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    reportFailure(deps, call, res.status, "malformed answer");
    return new UpstreamError(502, "the upstream channel sent a malformed (unreadable) answer", false);
  }
  const outcome = adaptor.readSubmit(json);
  if (!outcome.accepted && outcome.message) outcome.message = scrub(outcome.message, call);
  if (!outcome.accepted && outcome.retry) {
    reportFailure(deps, call, res.status, outcome.message ?? "refused");
    return new Refused(outcome, channel);
  }
  return { outcome, keyIndex: call.keyIndex ?? 0 };
}
