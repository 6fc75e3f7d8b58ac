// A channel's param_override, applied to the body that goes upstream after any format conversion, so its
// keys reach the upstream in the upstream's own wire format (Claude's top_k, Gemini's cachedContent, ...)
// whatever format the client spoke. Two forms, as new-api reads them:
//   {"temperature": 0.2, "top_k": 5}     each top-level key set as given (a key is literal, never a path)
//   {"operations": [{"path": "generationConfig.thinkingConfig.thinkingBudget", "mode": "set", "value": 0,
//                    "conditions": [{"path": "model", "mode": "prefix", "value": "gemini-2.5"}]}]}
//     paths are dot-separated ("messages.-1.content": negative indexes count from the end, "*" every
//     element), modes set (keep_origin), delete, move, copy (from, to), append / prepend (arrays, strings,
//     objects), trim_prefix, trim_suffix, ensure_prefix, ensure_suffix, trim_space, to_lower, to_upper,
//     replace / regex_replace (from → to), return_error (refuse the call), pass (stop here); conditions
//     full, prefix, suffix, contains, gt, gte, lt, lte, with invert and pass_missing_key, joined by
//     `logic` OR (default) or AND. A condition path missing from the body is looked up among the call's
//     facts: model, original_model, upstream_model, request_path.
//   Other keys beside "operations" are set like the first form, before the operations run.
// An adaptor that signs its body cannot be edited afterwards; it declares appliesParamOverride and
// applies call.paramOverride itself (withParamOverride).
import type { ProviderAdaptor, ProviderCall, UpstreamRequest } from "./providers/types.ts";
import { AppError } from "../http/errors.ts";
import { fetchBody } from "../infra/stream-client.ts";

export type ParamOverride = Record<string, unknown>;
/** Facts about the call that conditions may test. */
export type OverrideContext = Record<string, unknown>;

type Seg = string;

function parsePath(path: string): Seg[] {
  const out: Seg[] = [];
  let cur = "";
  for (let i = 0; i < path.length; i++) {
    const c = path[i]!;
    if (c === "\\" && i + 1 < path.length) cur += path[++i];
    else if (c === ".") {
      out.push(cur);
      cur = "";
    } else cur += c;
  }
  out.push(cur);
  return out.filter((s) => s !== "");
}

const isObj = (v: unknown): v is Record<string, any> => !!v && typeof v === "object" && !Array.isArray(v);
const isIndex = (s: string) => /^-?\d+$/.test(s);

/** The concrete paths a pattern names in `root` ("*" and negative indexes resolved); missing tails are kept. */
function expand(root: unknown, segs: Seg[]): Seg[][] {
  let paths: { at: unknown; path: Seg[] }[] = [{ at: root, path: [] }];
  for (const s of segs) {
    const next: typeof paths = [];
    for (const p of paths) {
      if (s === "*") {
        if (Array.isArray(p.at)) p.at.forEach((v, i) => next.push({ at: v, path: [...p.path, String(i)] }));
        else if (isObj(p.at)) for (const k of Object.keys(p.at)) next.push({ at: p.at[k], path: [...p.path, k] });
        continue;
      }
      let key = s;
      if (Array.isArray(p.at) && isIndex(s) && Number(s) < 0) key = String(p.at.length + Number(s));
      const child = Array.isArray(p.at) ? p.at[Number(key)] : isObj(p.at) ? p.at[key] : undefined;
      next.push({ at: child, path: [...p.path, key] });
    }
    paths = next;
  }
  return paths.map((p) => p.path);
}

function getAt(root: unknown, path: Seg[]): { found: boolean; value: unknown } {
  let at: any = root;
  for (const s of path) {
    if (Array.isArray(at) && isIndex(s)) {
      const i = Number(s) < 0 ? at.length + Number(s) : Number(s);
      if (i < 0 || i >= at.length) return { found: false, value: undefined };
      at = at[i];
    } else if (isObj(at) && Object.hasOwn(at, s)) at = at[s];
    else return { found: false, value: undefined };
  }
  return { found: true, value: at };
}

function setAt(root: Record<string, any>, path: Seg[], value: unknown): void {
  if (!path.length) return;
  let at: any = root;
  for (let i = 0; i < path.length - 1; i++) {
    const s = path[i]!;
    const key: string | number = Array.isArray(at) && isIndex(s) ? Number(s) : s;
    if (at[key] === undefined || at[key] === null || typeof at[key] !== "object")
      at[key] = isIndex(path[i + 1]!) && Number(path[i + 1]) >= 0 ? [] : {};
    at = at[key];
  }
  const last = path[path.length - 1]!;
  if (Array.isArray(at) && isIndex(last)) at[Number(last)] = value;
  else at[last] = value;
}

function deleteAt(root: unknown, path: Seg[]): void {
  const parent = getAt(root, path.slice(0, -1));
  if (!parent.found) return;
  const last = path[path.length - 1]!;
  if (Array.isArray(parent.value) && isIndex(last)) parent.value.splice(Number(last), 1);
  else if (isObj(parent.value)) delete parent.value[last];
}

interface Condition {
  path?: string;
  mode?: string;
  value?: unknown;
  invert?: boolean;
  pass_missing_key?: boolean;
}
interface Operation {
  path?: string;
  mode?: string;
  value?: unknown;
  keep_origin?: boolean;
  from?: string;
  to?: string;
  conditions?: Condition[];
  logic?: string;
}

function compare(actual: unknown, mode: string, target: unknown): boolean {
  const str = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
  switch (mode) {
    case "prefix":
      return str(actual).startsWith(str(target));
    case "suffix":
      return str(actual).endsWith(str(target));
    case "contains":
      return str(actual).includes(str(target));
    case "gt":
    case "gte":
    case "lt":
    case "lte": {
      if (typeof actual !== "number" || typeof target !== "number") return false;
      return mode === "gt"
        ? actual > target
        : mode === "gte"
          ? actual >= target
          : mode === "lt"
            ? actual < target
            : actual <= target;
    }
    default:
      return typeof actual === typeof target && typeof actual === "object"
        ? JSON.stringify(actual) === JSON.stringify(target)
        : actual === target || str(actual) === str(target);
  }
}

function conditionsHold(body: unknown, ctx: OverrideContext, op: Operation): boolean {
  const conds = Array.isArray(op.conditions) ? op.conditions : [];
  if (!conds.length) return true;
  const results = conds.map((c) => {
    const segs = parsePath(String(c.path ?? ""));
    let got = getAt(body, segs);
    if (!got.found) got = getAt(ctx, segs);
    if (!got.found) return Boolean(c.pass_missing_key);
    const r = compare(got.value, String(c.mode ?? "full").toLowerCase(), c.value);
    return c.invert ? !r : r;
  });
  return String(op.logic ?? "OR").toUpperCase() === "AND" ? results.every(Boolean) : results.some(Boolean);
}

function modify(current: unknown, value: unknown, keepOrigin: boolean, prepend: boolean): unknown {
  if (Array.isArray(current)) {
    const added = Array.isArray(value) ? value : [value];
    return prepend ? [...added, ...current] : [...current, ...added];
  }
  if (typeof current === "string") return prepend ? `${String(value)}${current}` : `${current}${String(value)}`;
  if (isObj(current) && isObj(value)) {
    const out = { ...current };
    for (const [k, v] of Object.entries(value)) if (!keepOrigin || out[k] === undefined || out[k] === null) out[k] = v;
    return out;
  }
  if (current === undefined) return value;
  throw new AppError(
    500,
    `param override: cannot ${prepend ? "prepend" : "append"} to a ${typeof current}`,
    "channel_param_override_invalid",
  );
}

function stringOp(op: string, s: string, o: Operation): string {
  const v = o.value === undefined ? "" : String(o.value);
  switch (op) {
    case "trim_prefix":
      return s.startsWith(v) ? s.slice(v.length) : s;
    case "trim_suffix":
      return v && s.endsWith(v) ? s.slice(0, -v.length) : s;
    case "ensure_prefix":
      return s.startsWith(v) ? s : v + s;
    case "ensure_suffix":
      return s.endsWith(v) ? s : s + v;
    case "trim_space":
      return s.trim();
    case "to_lower":
      return s.toLowerCase();
    case "to_upper":
      return s.toUpperCase();
    case "replace":
      return s.split(String(o.from ?? "")).join(String(o.to ?? ""));
    default: {
      let re: RegExp;
      try {
        re = new RegExp(String(o.from ?? ""), "g");
      } catch {
        throw new AppError(500, "param override: invalid regex_replace pattern", "channel_param_override_invalid");
      }
      return s.replace(re, String(o.to ?? ""));
    }
  }
}

const STRING_OPS = new Set([
  "trim_prefix",
  "trim_suffix",
  "ensure_prefix",
  "ensure_suffix",
  "trim_space",
  "to_lower",
  "to_upper",
  "replace",
  "regex_replace",
]);

function returnError(value: unknown): AppError {
  const v: any = isObj(value) ? value : { message: value };
  const status = Number(v.status_code ?? v.status);
  return new AppError(
    status >= 400 && status <= 599 ? status : 400,
    String(v.message || "request blocked by param override"),
    typeof v.code === "string" ? v.code : "param_override_rejected",
  );
}

function runOperations(body: Record<string, any>, ops: Operation[], ctx: OverrideContext): void {
  for (const op of ops) {
    if (!conditionsHold(body, ctx, op)) continue;
    const mode = String(op.mode ?? "");
    if (mode === "pass") return;
    if (mode === "block") throw returnError(op.value ?? "request blocked by param override conditions");
    if (mode === "return_error") throw returnError(op.value);
    if (mode === "move" || mode === "copy") {
      const from = getAt(body, parsePath(String(op.from ?? "")));
      if (!from.found) continue;
      const copy = structuredClone(from.value);
      const to = parsePath(String(op.to ?? ""));
      if (op.keep_origin && getAt(body, to).found) continue;
      if (mode === "move") deleteAt(body, parsePath(String(op.from ?? "")));
      setAt(body, to, copy);
      continue;
    }
    for (const path of expand(body, parsePath(String(op.path ?? "")))) {
      if (!path.length) continue;
      const cur = getAt(body, path);
      if (mode === "set") {
        if (!(op.keep_origin && cur.found)) setAt(body, path, structuredClone(op.value));
      } else if (mode === "delete") deleteAt(body, path);
      else if (mode === "append" || mode === "prepend")
        setAt(body, path, modify(cur.value, structuredClone(op.value), Boolean(op.keep_origin), mode === "prepend"));
      else if (STRING_OPS.has(mode)) {
        if (typeof cur.value === "string") setAt(body, path, stringOp(mode, cur.value, op));
      } else throw new AppError(500, `param override: unknown operation "${mode}"`, "channel_param_override_invalid");
    }
  }
}

/** The object with the override applied (the object itself when there is none). */
export function withParamOverride<T extends object>(
  body: T,
  override: ParamOverride | null | undefined,
  ctx: OverrideContext = {},
): T {
  if (!override) return body;
  const { operations, ...literal } = override as { operations?: unknown };
  if (!Array.isArray(operations)) return { ...body, ...override };
  const out: Record<string, any> = structuredClone({ ...body, ...literal });
  runOperations(out, operations as Operation[], ctx);
  return out as T;
}

/** What conditions may test besides the body. */
export function overrideContext(call: Pick<ProviderCall, "requestModel" | "upstreamModel" | "path">): OverrideContext {
  return {
    model: call.upstreamModel,
    original_model: call.requestModel,
    upstream_model: call.upstreamModel,
    request_path: call.path,
  };
}

/** The built request with call.paramOverride applied to its JSON body; other bodies stay as they are. */
export function applyParamOverride(adaptor: ProviderAdaptor, call: ProviderCall, up: UpstreamRequest): UpstreamRequest {
  const override = call.paramOverride;
  if (!override || adaptor.appliesParamOverride) return up;
  const text = fetchBody(up.body);
  if (typeof text !== "string") return up;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return up;
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) return up;
  return { ...up, body: JSON.stringify(withParamOverride(body, override, overrideContext(call))) };
}
