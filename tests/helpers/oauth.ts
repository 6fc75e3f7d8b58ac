// Drives the browser's part of a third-party sign-in against a test gateway: ask for a state (which sets
// the state cookie), then call the callback route with the provider's code, that state and the cookies.
import type { Reply, Session, TestContext } from "./app.ts";

export interface StartedState {
  state: string;
  cookie: string;
  reply: Reply;
}

/** GET /api/oauth/state; cookie is the "name=value" pair the browser would send back. */
export async function startState(ctx: TestContext, opts: { aff?: string; as?: Session } = {}): Promise<StartedState> {
  const reply = await ctx.request("GET", `/api/oauth/state${opts.aff ? `?aff=${encodeURIComponent(opts.aff)}` : ""}`, {
    as: opts.as,
  });
  const cookie =
    reply.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .find((c) => c.startsWith("oauth_state=")) ?? "";
  return { state: reply.body?.data, cookie, reply };
}

/** GET /api/oauth/oidc/authorize: the authorisation URL the server built, with its state and the state cookie. */
export async function startOidc(
  ctx: TestContext,
  opts: { aff?: string; as?: Session } = {},
): Promise<StartedState & { url: string }> {
  const reply = await ctx.request(
    "GET",
    `/api/oauth/oidc/authorize${opts.aff ? `?aff=${encodeURIComponent(opts.aff)}` : ""}`,
    { as: opts.as },
  );
  const cookie =
    reply.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .find((c) => c.startsWith("oauth_state=")) ?? "";
  return { state: reply.body?.data?.state, url: reply.body?.data?.url, cookie, reply };
}

/** The session a successful login left in Set-Cookie, ready to call the API with; null when none was set. */
export function sessionOf(reply: Reply): Session | null {
  const cookie = reply.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .find((c) => /^session=.+/.test(c));
  if (!cookie || !reply.body?.data?.id) return null;
  const id = reply.body.data.id as number;
  return {
    id,
    username: reply.body.data.username,
    password: "",
    cookie,
    headers: { cookie, "New-Api-User": String(id) },
  };
}

export interface CallbackOptions {
  /** A logged-in browser (binding). */
  as?: Session;
  aff?: string;
  /** Overrides of what the browser sends: a state other than the issued one, or no state cookie. */
  state?: string;
  stateCookie?: string | null;
  /** A state already started (startOidc) instead of a fresh GET /api/oauth/state. */
  started?: StartedState;
  /** More query parameters the provider put on the redirect (OIDC's iss). */
  extra?: Record<string, string>;
}

/** The whole redirect round trip for GitHub, OIDC or Linux DO, with a code the mock provider issued. */
export async function oauthCallback(
  ctx: TestContext,
  provider: "github" | "oidc" | "linuxdo",
  code: string,
  opts: CallbackOptions = {},
) {
  const started = opts.started ?? (await startState(ctx, { aff: opts.aff, as: opts.as }));
  const state = opts.state ?? started.state;
  const stateCookie = opts.stateCookie === undefined ? started.cookie : opts.stateCookie;
  const cookies = [opts.as?.cookie, stateCookie].filter(Boolean).join("; ");
  const headers: Record<string, string> = { ...(opts.as?.headers ?? {}) };
  if (cookies) headers.cookie = cookies;
  else delete headers.cookie;
  const extra = opts.extra ? `&${new URLSearchParams(opts.extra)}` : "";
  const reply = await ctx.request(
    "GET",
    `/api/oauth/${provider}?code=${encodeURIComponent(code)}&state=${encodeURIComponent(state ?? "")}${extra}`,
    { headers },
  );
  return { ...reply, session: sessionOf(reply), started };
}
