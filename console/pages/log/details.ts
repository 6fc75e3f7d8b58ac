// The Details of a usage log, worded in the reader's language from the language-neutral facts the server
// keeps in the log's `other` JSON (ratios, prices, cache, mapping, retries, top-up and refund facts). The
// server's own `content` (English, kept as one-api writes it) is shown only when `other` says nothing the
// console can word: admin actions, and upstream error messages, which are the upstream's own words.
import { LOG_TYPE } from "../../../server/catalogue/index.ts";
import { formatNumber, formatSeconds, renderNumber, renderQuota } from "../../lib/format.ts";

export interface LogRowLike {
  type: number;
  content: string;
  other: string;
  quota: number;
  is_stream?: boolean;
  ip?: string;
  request_id?: string;
  upstream_request_id?: string;
}
export interface DetailEntry {
  key: string;
  label: string;
  value: string;
}
type T = (key: string, opts?: any) => string;

export function parseOther(raw: string | undefined | null): Record<string, any> {
  if (!raw) return {};
  try {
    const v = JSON.parse(raw);
    return v && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

const num = (v: unknown) => (typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN);
const has = (v: unknown) => Number.isFinite(num(v));
const ratio = (v: unknown) => formatNumber(num(v), 4);

/**
 * The summary line (what the Details column shows) and the labelled entries (the expanded row).
 * `admin` adds what only admins see: the channels tried.
 */
export function logDetails(row: LogRowLike, t: T, admin = false): { summary: string; entries: DetailEntry[] } {
  const o = parseOther(row.other);
  const entries: DetailEntry[] = [];
  const add = (key: string, label: string, value: string) => entries.push({ key, label, value });
  let summary = "";

  if (row.type === LOG_TYPE.consume) {
    // Per-call models carry their price (ratio-billed ones -1) and no model ratio.
    const perCall = has(o.model_price) && num(o.model_price) >= 0 && !(num(o.model_ratio) > 0);
    if (perCall) {
      summary = t("ops.log.d.perCall", {
        price: formatNumber(num(o.model_price), 6),
        group: ratio(o.group_ratio ?? 1),
      });
      add("modelPrice", t("ops.log.modelPrice"), `$${formatNumber(num(o.model_price), 6)}`);
    } else if (has(o.model_ratio)) {
      summary = t("ops.log.d.ratios", {
        model: ratio(o.model_ratio),
        completion: ratio(o.completion_ratio ?? 1),
        group: ratio(o.group_ratio ?? 1),
      });
      add("modelRatio", t("ops.log.modelRatio"), ratio(o.model_ratio));
      if (has(o.completion_ratio)) add("completionRatio", t("ops.log.completionRatio"), ratio(o.completion_ratio));
    }
    if (has(o.group_ratio)) add("groupRatio", t("ops.log.groupRatio"), ratio(o.group_ratio));
    if (num(o.cache_tokens) > 0) {
      add(
        "cache",
        t("ops.log.cacheTokens"),
        t("ops.log.d.tokensAtRatio", { tokens: renderNumber(num(o.cache_tokens)), ratio: ratio(o.cache_ratio ?? 1) }),
      );
      summary += t("ops.log.d.cached", { tokens: renderNumber(num(o.cache_tokens)) });
    }
    // Cache writes by TTL where the upstream reported it (Claude: 5-minute and 1-hour writes are priced apart).
    const split = has(o.cache_creation_tokens_5m) || has(o.cache_creation_tokens_1h);
    if (split) {
      if (num(o.cache_creation_tokens_5m) > 0) {
        add(
          "cacheWrite5m",
          t("ops.log.d.cacheWrite5m"),
          t("ops.log.d.tokensAtRatio", {
            tokens: renderNumber(num(o.cache_creation_tokens_5m)),
            ratio: ratio(o.cache_creation_ratio_5m ?? o.cache_creation_ratio ?? 1),
          }),
        );
      }
      if (num(o.cache_creation_tokens_1h) > 0) {
        add(
          "cacheWrite1h",
          t("ops.log.d.cacheWrite1h"),
          t("ops.log.d.tokensAtRatio", {
            tokens: renderNumber(num(o.cache_creation_tokens_1h)),
            ratio: ratio(o.cache_creation_ratio_1h ?? 1),
          }),
        );
      }
    } else if (num(o.cache_creation_tokens) > 0) {
      add(
        "cacheCreation",
        t("ops.log.cacheCreationTokens"),
        t("ops.log.d.tokensAtRatio", {
          tokens: renderNumber(num(o.cache_creation_tokens)),
          ratio: ratio(o.cache_creation_ratio ?? 1),
        }),
      );
    }
    if (num(o.cache_creation_tokens) > 0)
      summary += t("ops.log.d.cacheWritten", { tokens: renderNumber(num(o.cache_creation_tokens)) });
    // A realtime response: its audio tokens, priced at the audio ratios (input, and output × completion).
    if (o.realtime) {
      const audio = num(o.audio_ratio ?? 1);
      add(
        "audioIn",
        t("ops.log.d.audioInput"),
        t("ops.log.d.tokensAtRatio", { tokens: renderNumber(num(o.audio_input ?? 0)), ratio: ratio(audio) }),
      );
      add(
        "audioOut",
        t("ops.log.d.audioOutput"),
        t("ops.log.d.tokensAtRatio", {
          tokens: renderNumber(num(o.audio_output ?? 0)),
          ratio: ratio(audio * num(o.audio_completion_ratio ?? 1)),
        }),
      );
      summary += t("ops.log.d.realtime");
    }
    if (o.task_id) add("task", t("ops.log.d.task"), `${o.task_id}${o.action ? ` (${o.action})` : ""}`);
  } else if (row.type === LOG_TYPE.topup) {
    if (has(o.redemption_id)) {
      summary = t("ops.log.d.redeemed", { quota: renderQuota(row.quota), id: o.redemption_id });
    } else if (o.trade_no) {
      const method =
        o.payment_method === "zfb" || o.payment_method === "wx"
          ? t(`ops.topup.method.${o.payment_method}`)
          : String(o.payment_method ?? "");
      summary = t("ops.log.d.paid", { quota: renderQuota(row.quota), money: formatNumber(num(o.money), 2, 2), method });
      add("order", t("ops.log.d.order"), String(o.trade_no));
    }
  } else if (row.type === LOG_TYPE.system && o.refund) {
    summary = t("ops.log.d.refund", { quota: renderQuota(row.quota), task: o.task_id ?? "", action: o.action ?? "" });
    if (o.reason) add("reason", t("ops.ch.reason"), String(o.reason));
  } else if (row.type === LOG_TYPE.error && has(o.status_code)) {
    add("status", t("ops.log.d.status"), String(o.status_code));
  }

  if (o.is_model_mapped && o.upstream_model_name) {
    add("upstream", t("ops.log.upstreamModel"), String(o.upstream_model_name));
    summary += t("ops.log.d.mapped", { model: String(o.upstream_model_name) });
  }
  // Served by (or failed through) the fallbacks of the requested model (server/relay/core/fallback.ts).
  const fb = o.fallback;
  if (fb && typeof fb === "object" && fb.requested) {
    const tried = Array.isArray(fb.tried) ? fb.tried.map((m: any) => String(m?.model ?? "")).filter(Boolean) : [];
    if (fb.served) {
      const reason = t(`ops.log.d.fallbackReason.${fb.reason}`, { defaultValue: String(fb.reason ?? "") });
      add(
        "fallback",
        t("ops.log.d.fallbackLabel"),
        t("ops.log.d.fallback", { requested: String(fb.requested), served: String(fb.served), reason }),
      );
      summary += t("ops.log.d.fallbackShort", { requested: String(fb.requested) });
    } else {
      add("fallback", t("ops.log.d.fallbackLabel"), t("ops.log.d.fallbackTried", { models: tried.join(" → ") }));
    }
  }
  if (o.stream_interrupted) {
    add("interrupted", t("ops.log.d.interruptedLabel"), t("ops.log.d.interrupted"));
    summary += t("ops.log.d.interruptedShort");
  }
  // Answered from the response cache (server/relay/cache): no channel was called; billed a fraction of the original.
  if (o.cache_hit) {
    const rc = o.response_cache && typeof o.response_cache === "object" ? o.response_cache : {};
    add(
      "responseCache",
      t("ops.log.d.cacheHitLabel"),
      t("ops.log.d.cacheHit", { ratio: ratio(rc.billing_ratio ?? 0), age: formatSeconds(num(rc.age_seconds ?? 0), 0) }),
    );
    summary += t("ops.log.d.cacheHitShort");
  }
  if (row.is_stream && num(o.frt) > 0) add("frt", t("ops.log.d.firstToken"), formatSeconds(num(o.frt) / 1000, 2));
  if (o.reasoning_effort) add("reasoning", t("ops.log.reasoningEffort"), String(o.reasoning_effort));
  if (o.web_search) add("webSearch", t("ops.log.webSearch"), String(o.web_search_call_count ?? o.web_search));
  if (o.file_search) add("fileSearch", t("ops.log.fileSearch"), String(o.file_search_call_count ?? o.file_search));
  if (o.request_path) add("path", t("ops.log.d.path"), String(o.request_path));
  // Kept only for users who asked for it (personal settings, Privacy).
  if (row.ip) add("ip", t("ops.log.d.ip"), row.ip);
  if (row.request_id) add("requestId", t("ops.log.requestId"), row.request_id);
  if (row.upstream_request_id) add("upstreamRequestId", t("ops.log.upstreamRequestId"), row.upstream_request_id);
  const used = o.admin_info?.use_channel;
  if (admin && Array.isArray(used) && used.length > 1) add("retry", t("ops.log.retry"), used.join(" → "));
  // Sent to the channel that served the conversation's previous call (server/relay/affinity.ts).
  const affinity = o.admin_info?.channel_affinity;
  if (admin && affinity && typeof affinity === "object" && affinity.rule_name) {
    add(
      "affinity",
      t("ops.log.d.affinityLabel"),
      t("ops.log.d.affinity", {
        rule: String(affinity.rule_name),
        channel: String(affinity.channel_id ?? ""),
        key: String(affinity.key_hint ?? ""),
      }),
    );
  }

  // Nothing to word from `other`: the server's text (admin actions, upstream errors) as it is.
  if (!summary && row.content) summary = row.content;
  if (row.content && (row.type === LOG_TYPE.error || row.type === LOG_TYPE.manage || !entries.length))
    add("content", t("ops.log.d.message"), row.content);
  return { summary, entries };
}
