// Who pays for an API call: the sk- token in Authorization (or x-api-key / x-goog-api-key / ?key= for the
// Claude and Gemini routes), checked against status, expiry, balance, IP allow list and its user.
import type { AppDeps } from "../deps.ts";
import { AppError } from "../http/errors.ts";
import { ROLE, TOKEN_STATUS, USER_STATUS, TOKEN_KEY_PREFIX } from "../catalogue/index.ts";
import { relayState, type TokenEntry } from "./state.ts";
import { ipAllowed } from "../modules/token/ips.ts";
import { tokenLimits, type TokenLimits } from "../modules/token/limits.ts";
import { clientIp } from "../http/ratelimit.ts";

export interface Caller {
  userId: number;
  username: string;
  role: number;
  /** The group the call is priced and routed in: the token's group, else the user's ("auto": see core/admit.ts). */
  group: string;
  /** The user's own group: GroupGroupRatio prices by it, and auto groups are the ones it may use. */
  userGroup?: string;
  tokenId: number;
  tokenName: string;
  unlimited: boolean;
  /** null when the token has no model limits */
  modelLimits: Set<string> | null;
  /** Admins may pin a channel with sk-KEY-CHANNELID. */
  pinnedChannel: number | null;
  acceptUnsetModel: boolean;
  /** The user asked for their address in their consume and error logs (new-api's setting record_ip_log). */
  recordIp: boolean;
  /** Balances as last read (a few seconds old at most): only used to decide whether a call needs a hold. */
  userQuota: number;
  /** null for unlimited tokens and the playground */
  tokenQuota: number | null;
  /** The user's raw settings: the quota-warning threshold and where warnings go. */
  userSetting: string | null;
  /** The token's rpm/tpm/concurrency limits and budget (modules/token/limits.ts); null or absent when it has none. */
  limits?: TokenLimits | null;
}

/** Made once: a regular expression literal inside the function is a new object on every call. */
const BEARER = /^Bearer\s+/i;

/** The raw key from whichever header the calling SDK uses. */
export function presentedKey(request: Request): string {
  const h = request.headers;
  const auth = h.get("authorization");
  if (auth) return auth.replace(BEARER, "").trim();
  const alt = h.get("x-api-key") ?? h.get("x-goog-api-key");
  if (alt) return alt.trim();
  const q = request.url.indexOf("key=");
  if (q !== -1) return new URL(request.url).searchParams.get("key")?.trim() ?? "";
  return "";
}

/** The client's address, or how to find it: a relay route asks the socket only when the token's IP list or the
 * user's logs need it (Bun's requestIP() is a system call on every call). */
export type IpSource = string | { ip(): string };

/** The caller behind `rawKey`, or throws 401/403 in the caller's terms. */
export async function authenticate(deps: AppDeps, rawKey: string, ip: IpSource): Promise<Caller> {
  return (
    authenticateNow(deps, rawKey, ip)
    ?? callerFor(deps, await relayState(deps).tokens.get(tokenKeyOf(rawKey)), rawKey, ip)
  );
}

/**
 * authenticate() without a promise when the token is cached (as usual): its caller, or null when the token has
 * to be read (then authenticate() it). Throws as authenticate() rejects. A route that awaited authenticate()
 * suspended on every call (a generator, two scopes and a turn of the loop).
 */
export function authenticateNow(deps: AppDeps, rawKey: string, ip: IpSource): Caller | null {
  const entry = relayState(deps).tokens.cached(tokenKeyOf(rawKey));
  return entry === undefined ? null : callerFor(deps, entry, rawKey, ip);
}

/** Where a presented key's own part (KEY, or KEY-CHANNELID) starts: after sk- when it has one. */
function keyStart(rawKey: string): number {
  return rawKey.startsWith(TOKEN_KEY_PREFIX) ? TOKEN_KEY_PREFIX.length : 0;
}

/** The token's key in a presented key; throws 401 on a missing or malformed one. Read without split()'s array. */
function tokenKeyOf(rawKey: string): string {
  if (!rawKey) throw new AppError(401, "no API key provided: send Authorization: Bearer sk-...", "invalid_api_key");
  const start = keyStart(rawKey);
  const dash = rawKey.indexOf("-", start);
  const key = dash === -1 ? rawKey.slice(start) : rawKey.slice(start, dash);
  if (!key || (dash !== -1 && rawKey.indexOf("-", dash + 1) !== -1))
    throw new AppError(401, "invalid API key", "invalid_api_key");
  return key;
}

/** The checks on a token cache entry (null: no such token) and the caller it makes for this call. */
function callerFor(deps: AppDeps, entry: TokenEntry | null, rawKey: string, ip: IpSource): Caller {
  if (!entry) throw new AppError(401, "invalid API key", "invalid_api_key");
  const { token, user, allowIps } = entry;
  const now = Math.floor(Date.now() / 1000);
  if (token.status === TOKEN_STATUS.disabled)
    throw new AppError(401, "this token has been disabled", "invalid_api_key");
  if (token.status === TOKEN_STATUS.expired || (token.expired_time !== -1 && token.expired_time < now)) {
    if (token.status === TOKEN_STATUS.enabled) {
      void deps.db
        .updateTable("tokens")
        .set({ status: TOKEN_STATUS.expired })
        .where("id", "=", token.id)
        .where("status", "=", TOKEN_STATUS.enabled)
        .execute()
        .catch(() => {});
    }
    throw new AppError(401, "this token has expired", "invalid_api_key");
  }
  const unlimited = Boolean(token.unlimited_quota);
  // A token whose row reads 0 may still have quota in this instance's lease of it (PostgreSQL, MySQL).
  if (
    token.status === TOKEN_STATUS.exhausted
    || (!unlimited && token.remain_quota <= 0 && !((relayState(deps).ledger.leased?.(user.id, token.id) ?? 0) > 0))
  ) {
    throw new AppError(403, "this token's quota is exhausted", "insufficient_token_quota");
  }
  if (token.status !== TOKEN_STATUS.enabled) throw new AppError(401, "this token is not enabled", "invalid_api_key");
  if (user.deleted_at || user.status !== USER_STATUS.enabled)
    throw new AppError(403, "user has been banned", "user_banned");
  if (allowIps.length > 0) {
    const addr = typeof ip === "string" ? ip : ip.ip();
    if (!ipAllowed(allowIps, addr))
      throw new AppError(403, `this token may not be used from ${addr}`, "ip_not_allowed");
  }

  const dash = rawKey.indexOf("-", keyStart(rawKey));
  let pinnedChannel: number | null = null;
  if (dash !== -1) {
    if (user.role < ROLE.admin)
      throw new AppError(403, "ordinary users cannot specify a channel", "channel_pinning_forbidden");
    const id = Number(rawKey.slice(dash + 1));
    if (!Number.isInteger(id) || id <= 0)
      throw new AppError(400, "the channel id after the key must be a positive integer");
    pinnedChannel = id;
  }
  // A copy per call: admission may change its group (auto groups).
  return pinnedChannel === null ? { ...callerOf(entry) } : { ...callerOf(entry), pinnedChannel };
}

/** What a token cache entry says about its callers, worked out once per entry (the cache renews entries, so
 * an edited token or user is seen with them): the model list, the user's settings JSON, the limits. */
const callers = new WeakMap<TokenEntry, Caller>();

function callerOf(entry: TokenEntry): Caller {
  let c = callers.get(entry);
  if (c) return c;
  const { token, user } = entry;
  const unlimited = Boolean(token.unlimited_quota);
  const limits = token.model_limits_enabled
    ? new Set(
        String(token.model_limits ?? "")
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean),
      )
    : null;
  c = {
    userId: user.id,
    username: user.username,
    role: user.role,
    group: token.group || user.group,
    userGroup: user.group,
    tokenId: token.id,
    tokenName: token.name,
    unlimited,
    modelLimits: limits,
    pinnedChannel: null,
    acceptUnsetModel: settingFlag(user.setting, "accept_unset_model_ratio_model"),
    recordIp: settingFlag(user.setting, "record_ip_log"),
    userQuota: Number(user.quota),
    tokenQuota: unlimited ? null : Number(token.remain_quota),
    userSetting: user.setting,
    limits: tokenLimits(token),
  };
  callers.set(entry, c);
  return c;
}

/** A true/false field of a user's settings JSON (false when absent or unreadable). */
export function settingFlag(
  setting: string | null | undefined,
  name: "accept_unset_model_ratio_model" | "record_ip_log",
): boolean {
  if (!setting) return false;
  try {
    return Boolean(JSON.parse(setting)?.[name]);
  } catch {
    return false;
  }
}

export interface TokenCaller {
  caller: Caller;
  ip: string;
  socket: boolean;
}

/**
 * Who calls, from where, and whether the call came in on a connection, for the routes that take sk- tokens:
 * without a promise when the token is cached (a route on the hot path checks for one instead of awaiting it),
 * and throwing as the promise would reject.
 */
export function tokenCallerOf(deps: AppDeps) {
  const trustProxy = deps.config.trustProxy;
  return (request: Request, server: any, socket?: boolean): TokenCaller | Promise<TokenCaller> => {
    const peer = new CallPeer(request, server, trustProxy, socket);
    const key = presentedKey(request);
    const caller = authenticateNow(deps, key, peer);
    return caller ? peer.found(caller) : authenticate(deps, key, peer).then((c) => peer.found(c));
  };
}

/** One call's peer, asked of the socket at most once and only when needed (one object rather than a closure per
 * question). `socket`: true from the server's native route table, which serves only requests that came in on a
 * connection; unknown elsewhere, where one that did has its peer's address (app.handle()'s have none). */
class CallPeer {
  private peer: { address: string } | null | undefined;
  constructor(
    private request: Request,
    private server: any,
    private trustProxy: boolean,
    private socket: boolean | undefined,
  ) {}

  private peerOf(): { address: string } | null {
    if (this.peer === undefined)
      this.peer = (this.server?.requestIP(this.request) as { address: string } | null | undefined) ?? null;
    return this.peer;
  }

  ip(): string {
    return clientIp(this.request, this.server, this.trustProxy, this.peerOf());
  }

  found(caller: Caller): TokenCaller {
    return { caller, ip: caller.recordIp ? this.ip() : "", socket: this.socket ?? this.peerOf() !== null };
  }
}
