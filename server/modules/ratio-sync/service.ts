// new-api's pricing exchange between gateways. GET /api/ratio_config publishes this site's pricing tables while
// ExposeRatioEnabled is on; the super admin's "sync from upstream" (POST /api/ratio_sync/fetch) reads another
// site's /api/ratio_config, or its /api/pricing list, and answers where it differs from ours, in new-api's
// shape, for the operator to copy what they want. The addresses are fetched through the outbound guard
// (fetch_setting.*), as new-api does, and nothing is changed here.
import type { AppDeps } from "../../deps.ts";
import { badRequest, forbidden } from "../../http/errors.ts";
import { fetchOutbound, fetchPolicy, OutboundError } from "../../infra/outbound.ts";

/** Tables synced, as named in the exchanged JSON, and the option holding each. */
export const SYNC_FIELDS: Record<string, string> = {
  model_ratio: "ModelRatio",
  completion_ratio: "CompletionRatio",
  cache_ratio: "CacheRatio",
  create_cache_ratio: "CreateCacheRatio",
  image_ratio: "ImageRatio",
  audio_ratio: "AudioRatio",
  audio_completion_ratio: "AudioCompletionRatio",
  model_price: "ModelPrice",
};
const PUBLISHED = ["model_ratio", "completion_ratio", "cache_ratio", "model_price"];

type Table = Record<string, number>;
type Data = Record<string, Table>;

function localTables(deps: AppDeps, fields: string[]): Data {
  return Object.fromEntries(fields.map((f) => [f, deps.options.json<Table>(SYNC_FIELDS[f]!, {})]));
}

/** GET /api/ratio_config (anyone, while ExposeRatioEnabled is on). */
export function ratioConfig(deps: AppDeps): Data {
  if (!deps.options.bool("ExposeRatioEnabled"))
    throw forbidden("the ratio config API is not enabled (ExposeRatioEnabled)");
  return localTables(deps, PUBLISHED);
}

/** GET /api/ratio_sync/channels: channels with an address another new-api-style site could answer on. */
export async function syncableChannels(deps: AppDeps) {
  const rows = await deps.db
    .selectFrom("channels")
    .select(["id", "name", "base_url", "status", "type"])
    .orderBy("id")
    .execute();
  return rows
    .filter((r) => /^https?:\/\//i.test(String(r.base_url ?? "")))
    .map((r) => ({ id: r.id, name: r.name, base_url: String(r.base_url), status: r.status, type: r.type }));
}

export interface Upstream {
  id?: number;
  name?: string;
  base_url?: string;
  endpoint?: string;
}
export interface SyncRequest {
  upstreams?: Upstream[];
  channel_ids?: number[];
  timeout?: number;
}

const MAX_UPSTREAMS = 20;
const MAX_BYTES = 10 * 1024 * 1024;

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

/** Our tables' shape from an upstream answer: /api/ratio_config's object, or /api/pricing's list. */
export function tablesFrom(data: unknown): Data {
  const out: Data = {};
  if (data && typeof data === "object" && !Array.isArray(data)) {
    for (const f of Object.keys(SYNC_FIELDS)) {
      const t = (data as Record<string, unknown>)[f];
      if (t && typeof t === "object")
        out[f] = Object.fromEntries(Object.entries(t).filter(([, v]) => isNumber(v))) as Table;
    }
    return out;
  }
  if (!Array.isArray(data)) throw new Error("the answer holds neither ratio tables nor a pricing list");
  for (const item of data) {
    const name = typeof item?.model_name === "string" ? item.model_name : "";
    if (!name) continue;
    const put = (f: string, v: unknown) => isNumber(v) && ((out[f] ??= {})[name] = v);
    if (item.quota_type === 1) put("model_price", item.model_price);
    else {
      put("model_ratio", item.model_ratio);
      put("completion_ratio", item.completion_ratio);
      put("cache_ratio", item.cache_ratio);
    }
  }
  return out;
}

async function fetchUpstream(
  deps: AppDeps,
  u: Required<Pick<Upstream, "name" | "base_url">> & Upstream,
  timeoutMs: number,
): Promise<Data> {
  const endpoint = u.endpoint?.trim() || "/api/pricing";
  const url = /^https?:\/\//i.test(endpoint)
    ? endpoint
    : `${u.base_url.replace(/\/+$/, "")}${endpoint.startsWith("/") ? "" : "/"}${endpoint}`;
  const res = await fetchOutbound(url, {
    timeoutMs,
    maxBytes: MAX_BYTES,
    policy: fetchPolicy(deps.options),
    headers: { accept: "application/json" },
  });
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  const body = JSON.parse(new TextDecoder().decode(res.body));
  if (body?.success === false) throw new Error(String(body.message || "the upstream refused"));
  return tablesFrom(body?.data);
}

export interface Difference {
  current: number | null;
  upstreams: Record<string, number | "same" | null>;
  confidence: Record<string, boolean>;
}

/** new-api's differences: per model and table, our value and each upstream's ("same" when equal). */
export function differencesOf(
  local: Data,
  remote: { name: string; data: Data }[],
): Record<string, Record<string, Difference>> {
  const out: Record<string, Record<string, Difference>> = {};
  const models = new Set<string>();
  for (const d of [local, ...remote.map((r) => r.data)])
    for (const t of Object.values(d)) for (const m of Object.keys(t)) models.add(m);
  for (const model of models) {
    for (const field of Object.keys(SYNC_FIELDS)) {
      const current = local[field]?.[model] ?? null;
      const upstreams: Difference["upstreams"] = {};
      const confidence: Record<string, boolean> = {};
      let differs = false;
      for (const r of remote) {
        const v = r.data[field]?.[model];
        if (v === undefined) upstreams[r.name] = current === null ? "same" : null;
        else if (current !== null && Math.abs(current - v) < 1e-9) upstreams[r.name] = "same";
        else {
          upstreams[r.name] = v;
          differs = true;
        }
        // An unpriced model on a pricing list (ratio 37.5, completion 1) is a placeholder, not a price.
        confidence[r.name] = !(r.data.model_ratio?.[model] === 37.5 && r.data.completion_ratio?.[model] === 1);
      }
      if (differs) (out[model] ??= {})[field] = { current, upstreams, confidence };
    }
  }
  return out;
}

export async function fetchUpstreamRatios(deps: AppDeps, req: SyncRequest) {
  const timeoutMs = Math.min(Math.max(Number(req.timeout) || 10, 1), 60) * 1000;
  let upstreams: (Upstream & { name: string; base_url: string })[] = [];
  if (Array.isArray(req.upstreams) && req.upstreams.length) {
    upstreams = req.upstreams
      .filter((u) => /^https?:\/\//i.test(String(u?.base_url ?? "")))
      .map((u) => ({ ...u, name: String(u.name || u.base_url), base_url: String(u.base_url) }));
  } else if (Array.isArray(req.channel_ids) && req.channel_ids.length) {
    const ids = req.channel_ids.filter((i) => Number.isInteger(i));
    const rows = ids.length
      ? await deps.db.selectFrom("channels").select(["id", "name", "base_url"]).where("id", "in", ids).execute()
      : [];
    upstreams = rows
      .filter((r) => /^https?:\/\//i.test(String(r.base_url ?? "")))
      .map((r) => ({ id: r.id, name: r.name, base_url: String(r.base_url) }));
  }
  if (!upstreams.length) throw badRequest("no upstream with an http(s) address to read");
  if (upstreams.length > MAX_UPSTREAMS) throw badRequest(`at most ${MAX_UPSTREAMS} upstreams at once`);
  const results = await Promise.all(
    upstreams.map(async (u) => {
      const name = u.id ? `${u.name}(${u.id})` : u.name;
      try {
        return { name, data: await fetchUpstream(deps, u, timeoutMs) };
      } catch (e) {
        return { name, error: e instanceof OutboundError || e instanceof Error ? e.message : String(e) };
      }
    }),
  );
  const ok = results.filter((r): r is { name: string; data: Data } => "data" in r);
  return {
    differences: differencesOf(localTables(deps, Object.keys(SYNC_FIELDS)), ok),
    test_results: results.map((r) =>
      "data" in r ? { name: r.name, status: "success" } : { name: r.name, status: "error", error: r.error },
    ),
  };
}
