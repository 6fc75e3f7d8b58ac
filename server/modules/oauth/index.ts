// Third-party sign-in and account binding (spec 000 §2.3, §2.7, §7.2): the state handshake, the provider
// callbacks the console's /oauth/<provider> screens call, WeChat codes and Telegram's login widget.
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { badRequest, unauthorized } from "../../http/errors.ts";
import { clientIp, enforceLimit } from "../../http/ratelimit.ts";
import { ROLE } from "../../catalogue/index.ts";
import { publicUser } from "../user/view.ts";
import { signInReply } from "../twofa/signin.ts";
import {
  authorizeReply,
  callbackQuery,
  stateQuery,
  stateReply,
  telegramQuery,
  wechatQuery,
  type ExternalIdentity,
} from "./model.ts";
import { signInResult as signInSchema, userReply } from "../user/model.ts";
import {
  STATE_COOKIE,
  STATE_COOKIE_PATH,
  STATE_TTL_SECONDS,
  consumeState,
  issueState,
  type StateData,
} from "./state.ts";
import { assertProviderEnabled, bind, signIn, type Provider } from "./service.ts";
import { githubIdentity } from "./github.ts";
import { oidcAuthorizationUrl, oidcIdentity } from "./oidc.ts";
import { linuxdoIdentity } from "./linuxdo.ts";
import { wechatIdentity } from "./wechat.ts";
import { telegramIdentity } from "./telegram.ts";

type Identify = (deps: AppDeps, code: string, request: Request, state: StateData) => Promise<ExternalIdentity>;

const BIND_SESSION_ENDED = "your login has expired: log in again, then bind the account";

const isHttps = (request: Request) => new URL(request.url).protocol === "https:";

export function oauthModule(deps: AppDeps) {
  const limit = (request: Request, server: unknown) =>
    enforceLimit(deps, "critical", clientIp(request, server as any, deps.config.trustProxy));

  /**
   * Signs the user in (session cookie as for a password login) and answers the user record; a user with
   * two-factor sign-in on gets the same require_2fa step as after a password (modules/twofa/signin.ts).
   */
  const logIn = (ctx: { sessionJwt: any; cookie: Record<string, any>; request: Request }, user: User) =>
    signInReply(deps, ctx, user);

  /**
   * GET /api/oauth/{github|oidc|linuxdo}?code&state. With a signed-in caller the provider account is bound
   * (message "bind"); otherwise it signs in, registering a new user when needed.
   */
  const codeCallback =
    (provider: Provider, identify: Identify) =>
    async (ctx: {
      query: typeof callbackQuery.static;
      cookie: Record<string, any>;
      request: Request;
      server: unknown;
      sessionJwt: any;
      viewer: User | null;
    }) => {
      const { query, cookie, request } = ctx;
      await limit(request, ctx.server);
      const stateCookie = cookie[STATE_COOKIE];
      const presented = stateCookie?.value;
      // The state is spent whatever happens next: the provider's code is single-use anyway.
      stateCookie?.set({ value: "", maxAge: 0, path: STATE_COOKIE_PATH, httpOnly: true, sameSite: "lax" });
      const state = await consumeState(deps, query.state, presented);
      const { bindFor, aff } = state;
      // A binding whose session ended on the way must not turn into signing in as (or registering) that account.
      if (bindFor && ctx.viewer?.id !== bindFor) throw unauthorized(BIND_SESSION_ENDED);
      if (query.error)
        throw badRequest(`the sign-in was cancelled or refused: ${query.error_description || query.error}`);
      assertProviderEnabled(deps, provider);
      const identity = await identify(deps, query.code ?? "", request, state);
      if (ctx.viewer) return ok(publicUser(await bind(deps, ctx.viewer, provider, identity)), "bind");
      return logIn(ctx, await signIn(deps, provider, identity, aff));
    };

  /** The state handshake's browser half: the state also lives in an HttpOnly cookie of this browser. */
  const setStateCookie = (cookie: Record<string, any>, request: Request, state: string) =>
    cookie[STATE_COOKIE].set({
      value: state,
      httpOnly: true,
      sameSite: "lax",
      path: STATE_COOKIE_PATH,
      maxAge: STATE_TTL_SECONDS,
      secure: isHttps(request),
    });

  return (
    new Elysia({ prefix: "/api/oauth", tags: ["oauth"] })
      .use(authPlugin(deps))
      .get(
        "/state",
        async ({ query, cookie, request, viewer }) => {
          const state = await issueState(deps, { aff: query.aff ?? "", bindFor: viewer?.id ?? 0 });
          setStateCookie(cookie, request, state);
          return ok(state);
        },
        {
          query: stateQuery,
          viewer: true,
          detail: { summary: "Start a third-party sign-in: a state (and its cookie)" },
          response: stateReply,
        },
      )
      // OIDC's authorisation URL built here, so it can carry a nonce and a PKCE challenge kept with the state.
      .get(
        "/oidc/authorize",
        async ({ query, cookie, request, viewer }) => {
          assertProviderEnabled(deps, "oidc");
          const started = await oidcAuthorizationUrl(deps, request, (checks) =>
            issueState(deps, { aff: query.aff ?? "", bindFor: viewer?.id ?? 0, ...checks }),
          );
          setStateCookie(cookie, request, started.state);
          return ok(started);
        },
        {
          query: stateQuery,
          viewer: true,
          detail: { summary: "Start an OIDC sign-in: the authorisation URL" },
          response: authorizeReply,
        },
      )
      .get("/github", codeCallback("github", githubIdentity), {
        query: callbackQuery,
        viewer: true,
        detail: { summary: "GitHub callback: sign in, register or bind" },
        response: signInSchema,
      })
      .get("/oidc", codeCallback("oidc", oidcIdentity), {
        query: callbackQuery,
        viewer: true,
        detail: { summary: "OIDC callback: sign in, register or bind" },
        response: signInSchema,
      })
      .get("/linuxdo", codeCallback("linuxdo", linuxdoIdentity), {
        query: callbackQuery,
        viewer: true,
        detail: { summary: "LinuxDO callback: sign in, register or bind" },
        response: signInSchema,
      })
      // WeChat has no redirect, so no state: the code the user types is proof enough, and binding is its own route.
      .get(
        "/wechat",
        async (ctx) => {
          await limit(ctx.request, ctx.server);
          assertProviderEnabled(deps, "wechat");
          return logIn(ctx, await signIn(deps, "wechat", await wechatIdentity(deps, ctx.query.code ?? "")));
        },
        { query: wechatQuery, detail: { summary: "Sign in with a WeChat code" }, response: signInSchema },
      )
      .get(
        "/wechat/bind",
        async ({ query, user }) => {
          assertProviderEnabled(deps, "wechat");
          return ok(publicUser(await bind(deps, user, "wechat", await wechatIdentity(deps, query.code ?? ""))), "bind");
        },
        {
          query: wechatQuery,
          role: ROLE.common,
          detail: { summary: "Bind WeChat to the caller's account" },
          response: userReply,
        },
      )
      // Telegram's widget signs the fields itself; every query field is part of the signature, so the raw query is read.
      .get(
        "/telegram/login",
        async (ctx) => {
          await limit(ctx.request, ctx.server);
          assertProviderEnabled(deps, "telegram");
          const identity = telegramIdentity(
            new URL(ctx.request.url).searchParams,
            deps.options.get("TelegramBotToken"),
          );
          return logIn(ctx, await signIn(deps, "telegram", identity));
        },
        { query: telegramQuery, detail: { summary: "Sign in with Telegram's login widget" }, response: signInSchema },
      )
      // JSON, not the widget's redirect: that would bind on a bare cookie, which a cross-site link also carries.
      .get(
        "/telegram/bind",
        async ({ request, user }) => {
          assertProviderEnabled(deps, "telegram");
          const identity = telegramIdentity(new URL(request.url).searchParams, deps.options.get("TelegramBotToken"));
          return ok(publicUser(await bind(deps, user, "telegram", identity)), "bind");
        },
        {
          role: ROLE.common,
          query: telegramQuery,
          detail: { summary: "Bind Telegram to the caller's account" },
          response: userReply,
        },
      )
  );
}
