// createApp(deps) composes the module plugins. Tests build it without listening and call app.handle().
import { Elysia } from "elysia";
import type { AppDeps } from "./deps.ts";
import { AppError, errorReply } from "./http/errors.ts";
import { checkOneHost } from "./http/host.ts";
import { clientIp, enforceLimit } from "./http/ratelimit.ts";
import { isApiUrl } from "./http/paths.ts";
import { metricsPlugin } from "./http/metrics.ts";
import { tracingPlugin } from "./infra/tracing.ts";
import { consolePlugin } from "./http/console.ts";
import { setupModule } from "./modules/setup/index.ts";
import { authModule } from "./modules/auth/index.ts";
import { customOAuthModule } from "./modules/oauth/custom.ts";
import { oauthModule } from "./modules/oauth/index.ts";
import { userModule } from "./modules/user/index.ts";
import { optionModule } from "./modules/option/index.ts";
import { statusModule } from "./modules/status/index.ts";
import { groupModule } from "./modules/group/index.ts";
import { tokenUsageModule } from "./modules/token/usage.ts";
import { tokenModule } from "./modules/token/index.ts";
import { channelModule } from "./modules/channel/index.ts";
import { redemptionModule } from "./modules/redemption/index.ts";
import { walletModule } from "./modules/wallet/index.ts";
import { logModule } from "./modules/log/index.ts";
import { dashboardModule } from "./modules/dashboard/index.ts";
import { pricingModule } from "./modules/pricing/index.ts";
import { taskModule } from "./modules/task/index.ts";
import { verificationModule } from "./modules/verification/index.ts";
import { twoFAModule } from "./modules/twofa/index.ts";
import { passkeyModule } from "./modules/passkey/index.ts";
import { panelsModule } from "./modules/panels/index.ts";
import { checkinModule } from "./modules/checkin/index.ts";
import { ratioSyncModule } from "./modules/ratio-sync/index.ts";
import { modelMetaModule } from "./modules/model-meta/index.ts";
import { prefillModule } from "./modules/prefill/index.ts";
import { docsModule } from "./modules/docs/index.ts";
import { relayJsonRoutes, relayModule } from "./relay/index.ts";
import { nativeModule } from "./relay/endpoints/native.ts";

/** Management bodies are small; the relay accepts up to config.maxBodyBytes (images, audio). */
export const API_MAX_BODY_BYTES = 2 * 1024 * 1024;

const SETUP_EXEMPT = new Set([
  "/api/setup",
  "/api/status",
  "/api/notice",
  "/api/about",
  "/api/home_page_content",
  "/api/openapi.json",
  "/api/docs",
  "/api/docs/scalar",
]);

export function createApp(deps: AppDeps) {
  let setupDone: boolean | null = null;
  const isSetupDone = async () => {
    if (setupDone) return true;
    const row = await deps.db.selectFrom("setups").select("id").limit(1).executeTakeFirst();
    setupDone = !!row;
    return setupDone;
  };

  /** The guard of every /api/ call: body size, the per-IP API rate limit, and nothing but setup before setup. */
  async function guardApi(request: Request, server: unknown): Promise<void> {
    const path = new URL(request.url).pathname;
    if (!path.startsWith("/api/")) return;
    const len = Number(request.headers.get("content-length") ?? 0);
    if (len > API_MAX_BODY_BYTES) throw new AppError(413, `request body too large (limit ${API_MAX_BODY_BYTES} bytes)`);
    const ip = clientIp(request, server as any, deps.config.trustProxy);
    await enforceLimit(deps, "api", ip);
    if (!SETUP_EXEMPT.has(path) && !(await isSetupDone())) {
      throw new AppError(403, "the system is not initialised yet: finish the setup wizard at /setup first");
    }
  }

  async function parseApiJson(request: Request): Promise<unknown> {
    const text = await request.text();
    if (text.length > API_MAX_BODY_BYTES)
      throw new AppError(413, `request body too large (limit ${API_MAX_BODY_BYTES} bytes)`);
    if (text.trim() === "") return {};
    try {
      return JSON.parse(text);
    } catch {
      throw new AppError(400, "malformed request body: expected valid JSON");
    }
  }

  const relayRoutes = relayJsonRoutes(deps);
  // The relay's JSON routes go on the server's own route table, past Elysia, unless a wrapper of every request
  // (Prometheus metrics, OpenTelemetry traces) must see them: then Elysia serves them (relay/index.ts).
  const nativeRoutes =
    deps.config.metricsEnabled || deps.config.tracing
      ? undefined
      : Object.fromEntries(
          [...relayRoutes].map(([path, route]) => [
            path,
            { POST: (request: Request, server: unknown) => route(request, server, true) },
          ]),
        );
  return (
    new Elysia({
      serve: { idleTimeout: 255, maxRequestBodySize: deps.config.maxBodyBytes, routes: nativeRoutes } as any,
    })
      .decorate("deps", deps)
      .use(metricsPlugin(deps))
      .use(tracingPlugin(deps))
      .onError({ as: "global" }, ({ code, error, request, set }) => {
        const reply = errorReply(request, error, code);
        set.status = reply.status;
        if (reply.headers) Object.assign(set.headers, reply.headers);
        return reply.body;
      })
      .onRequest((({ request, server, path }: { request: Request; server: unknown; path: string }) => {
        checkOneHost(request);
        // (Elysia's types omit `path` here, but the context carries it.)
        // Runs for every request, relay calls included: those leave on Elysia's path (a static route's own, so
        // request.url is not read again), unless it holds dot segments or escapes a URL parser would resolve.
        if (
          !path.startsWith("/api/")
          && ((path.indexOf("/.") === -1 && path.indexOf("%") === -1) || !isApiUrl(request.url))
        )
          return;
        return guardApi(request, server);
      }) as any)
      .onParse({ as: "global" }, ({ request, contentType, path }) => {
        // Management bodies without a Content-Length (chunked) are measured here instead of in onRequest. Not a
        // promise for the relay's routes, which parse their own bodies.
        if (!contentType?.startsWith("application/json") || !path.startsWith("/api/")) return;
        return parseApiJson(request);
      })
      .use(statusModule(deps))
      .use(setupModule(deps, () => (setupDone = true)))
      .use(authModule(deps))
      .use(oauthModule(deps))
      .use(customOAuthModule(deps))
      .use(userModule(deps))
      .use(optionModule(deps))
      .use(groupModule(deps))
      .use(tokenModule(deps))
      .use(tokenUsageModule(deps))
      .use(channelModule(deps))
      .use(redemptionModule(deps))
      .use(walletModule(deps))
      .use(logModule(deps))
      .use(dashboardModule(deps))
      .use(pricingModule(deps))
      .use(taskModule(deps))
      .use(verificationModule(deps))
      .use(twoFAModule(deps))
      .use(passkeyModule(deps))
      .use(panelsModule(deps))
      .use(checkinModule(deps))
      .use(ratioSyncModule(deps))
      .use(modelMetaModule(deps))
      .use(prefillModule(deps))
      .use(docsModule(deps))
      .use(nativeModule(deps))
      .use(relayModule(deps, relayRoutes))
      // Last: the console answers every GET no module claimed (SPA deep links), JSON 404 for API paths.
      .use(consolePlugin(deps))
  );
}

export type App = ReturnType<typeof createApp>;
