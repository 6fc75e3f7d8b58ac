// Relay routes: the OpenAI-compatible API under /v1 (sk- tokens), the task relays (task-routes.ts) and the console playground under /pg
// (session). Bodies are read here, unparsed by Elysia, so the hot path parses JSON exactly once.
import { Elysia } from "elysia";
import type { AppDeps } from "../deps.ts";
import { AppError } from "../http/errors.ts";
import { authPlugin } from "../http/auth.ts";
import { clientIp } from "../http/ratelimit.ts";
import { decodeOr400 } from "../http/paths.ts";
import { ROLE } from "../catalogue/index.ts";
import type { RelayMode } from "./providers/types.ts";
import { settingFlag, tokenCallerOf, type Caller } from "./auth.ts";
import { relay } from "./endpoints/exchange.ts";
import { relayState } from "./state.ts";
import { listsModule } from "./lists.ts";
import { bodyLimit, parseJsonObject, textWithin } from "./body.ts";
import type { ClientJson } from "./formats/client-json.ts";
import { plainRoute, type PlainRoute } from "./plain-route.ts";
import { claudeMessagesRoute, GEMINI_ROUTES, geminiRoute } from "./endpoints/native.ts";
import { taskRoutesModule } from "./task-routes.ts";
import { callerModels, listShape, modelList, oneModel } from "./endpoints/models.ts";
import { balanceModule } from "./endpoints/balance.ts";
import { responsesRoute } from "./endpoints/responses.ts";
import { realtimeModule } from "./endpoints/realtime.ts";

const ROUTES: [string, RelayMode][] = [
  ["/v1/chat/completions", "chat"],
  ["/v1/completions", "completions"],
  ["/v1/embeddings", "embeddings"],
  ["/v1/moderations", "moderations"],
  ["/v1/images/generations", "images"],
  ["/v1/images/edits", "image_edits"],
  ["/v1/audio/speech", "audio_speech"],
  ["/v1/audio/transcriptions", "audio_transcription"],
  ["/v1/audio/translations", "audio_translation"],
  ["/v1/rerank", "rerank"],
];

/** Models these routes fall back to when the client names none (OpenAI's own defaults). */
const DEFAULT_MODEL: Partial<Record<RelayMode, string>> = {
  moderations: "omni-moderation-latest",
  images: "dall-e-2",
  image_edits: "dall-e-2",
};

const MULTIPART: ReadonlySet<RelayMode> = new Set(["audio_transcription", "audio_translation", "image_edits"]);

/** `json`: the client's text and its parse, while nothing has changed the parse (see RelayRequest.json). */
export interface ParsedBody {
  body: any;
  model: string;
  stream: boolean;
  json?: ClientJson;
}

/**
 * An OpenAI chat body's max_tokens / max_completion_tokens of 0 taken as absent, as OpenAI's SDKs and
 * new-api send none for "no limit": forwarded it would be refused upstream, converted it would ask for
 * nothing. Says whether the body changed.
 */
export function dropZeroMaxTokens(body: Record<string, unknown>): boolean {
  let changed = false;
  for (const key of ["max_tokens", "max_completion_tokens"]) {
    if (body[key] === 0) {
      delete body[key];
      changed = true;
    }
  }
  return changed;
}

/** Turns the body Elysia read (text for JSON routes, fields for multipart) into the relay's request. */
export function readBody(raw: unknown, mode: RelayMode): ParsedBody {
  if (MULTIPART.has(mode)) {
    if (!raw || typeof raw !== "object")
      throw new AppError(400, "expected a multipart/form-data body with a file and a model");
    const form = new FormData();
    for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
      for (const item of Array.isArray(v) ? v : [v]) form.append(k, item instanceof Blob ? item : String(item));
    }
    const model = String(form.get("model") ?? "").trim() || DEFAULT_MODEL[mode] || "";
    if (!model) throw new AppError(400, "model is required");
    if (!form.get("model")) form.set("model", model);
    return { body: form, model, stream: false };
  }
  const body = parseJsonObject(raw);
  const model = typeof body.model === "string" && body.model.trim() ? body.model.trim() : (DEFAULT_MODEL[mode] ?? "");
  if (!model) throw new AppError(400, "model is required");
  const zeroDropped = mode === "chat" && dropZeroMaxTokens(body);
  if (body.model !== model || zeroDropped) {
    body.model = model;
    return { body, model, stream: body.stream === true };
  }
  return { body, model, stream: body.stream === true, json: typeof raw === "string" ? { body, text: raw } : undefined };
}

function notImplemented(request: Request): never {
  throw new AppError(501, `${new URL(request.url).pathname} is not implemented by this gateway`, "not_implemented");
}

/**
 * The relay's JSON routes of the OpenAI format (every route of ROUTES but the multipart uploads), Claude's
 * /v1/messages and Gemini's POST /v1beta/models/* and /v1/models/*, each a plain handler that reads its own
 * body and answers its own errors (relay/plain-route.ts).
 * The app serves them twice over: from the server's native route table (createApp's `serve.routes`), where a
 * call skips Elysia's per-request context, hooks and response mapping (hot-path rule 11),
 * and as Elysia routes, which app.handle() and a server with a request wrapper (metrics, tracing) go through.
 * Either way the same function answers.
 */
export function relayJsonRoutes(deps: AppDeps): Map<string, PlainRoute> {
  const tokenCaller = tokenCallerOf(deps);
  const routes = new Map<string, PlainRoute>();
  for (const [path, mode] of ROUTES) {
    if (MULTIPART.has(mode)) continue;
    routes.set(
      path,
      plainRoute(bodyLimit(mode, deps.config.maxBodyBytes), async (request, server, text, fromSocket) => {
        // A cached token answers at once: awaiting it anyway would suspend this handler on every call.
        const who = tokenCaller(request, server, fromSocket);
        const { caller, ip, socket } = who instanceof Promise ? await who : who;
        const { body, model, stream, json } = readBody(text, mode);
        // The client's signal only when asked for (exchange.ts LISTEN_AFTER_MS): creating it has a cost.
        return relay(deps, {
          mode,
          format: "openai",
          path,
          search: "",
          body,
          model,
          stream,
          caller,
          ip,
          incoming: request,
          httpHeaders: request.headers,
          socket,
          json,
        });
      }),
    );
  }
  routes.set("/v1/messages", claudeMessagesRoute(deps));
  const gemini = geminiRoute(deps);
  for (const path of GEMINI_ROUTES) routes.set(path, gemini);
  return routes;
}

/** `jsonRoutes`: relayJsonRoutes(deps), made once by createApp for both ways of serving them. */
export function relayModule(deps: AppDeps, jsonRoutes = relayJsonRoutes(deps)) {
  relayState(deps);
  const tokenCaller = tokenCallerOf(deps);

  let app = new Elysia({ name: "relay" }) as any;
  for (const [path, route] of jsonRoutes) {
    // The route reads its own body: a parser that reads nothing (Elysia's "none" still falls back to its JSON
    // parser after the app's global one).
    app = app.post(path, ({ request, server }: { request: Request; server: any }) => route(request, server), {
      parse: () => null,
    });
  }
  for (const [path, mode] of ROUTES) {
    if (!MULTIPART.has(mode)) continue;
    app = app.post(
      path,
      async ({ request, server, body: raw }: { request: Request; server: any; body: unknown }) => {
        const { caller, ip, socket } = await tokenCaller(request, server);
        const { body, model, stream } = readBody(raw, mode);
        return relay(deps, {
          mode,
          format: "openai",
          path,
          search: "",
          body,
          model,
          stream,
          caller,
          ip,
          signal: request.signal,
          httpHeaders: request.headers,
          socket,
        });
      },
      { parse: "formdata" },
    );
  }
  return (
    (app as Elysia)
      // The OpenAI Responses API: previous_response_id kept for the responses the gateway converts.
      .use(responsesRoute(deps, tokenCaller))
      // In the asking SDK's shape: OpenAI's, Anthropic's (anthropic-version) or Gemini's (its key header).
      .get("/v1/models", async ({ request, server }) => {
        const { caller } = await tokenCaller(request, server);
        return modelList(await callerModels(deps, caller), listShape(request));
      })
      .get("/v1/models/:model", async ({ request, server, params }) => {
        const { caller } = await tokenCaller(request, server);
        return oneModel(await callerModels(deps, caller), decodeOr400(params.model), listShape(request));
      })
      .use(balanceModule(deps))
      .use(realtimeModule(deps))
      // The task relays: /mj, /suno and /v1/videos (submit → poll → settle).
      .use(taskRoutesModule(deps))
      // GET is registered on its own so it outranks the console's GET /* fallback.
      .get("/v1/*", ({ request }) => notImplemented(request))
      .all("/v1/*", ({ request }) => notImplemented(request))
      .use(playgroundModule(deps))
      .use(listsModule(deps))
  );
}

/** The console's chat: the logged-in user pays directly, in a group they may use. */
function playgroundModule(deps: AppDeps) {
  return new Elysia({ prefix: "/pg" }).use(authPlugin(deps)).post(
    "/chat/completions",
    async ({ user, body, request, server }) => {
      const b = { ...parseJsonObject(body) };
      const group = typeof b.group === "string" && b.group ? b.group : user.group;
      delete b.group;
      dropZeroMaxTokens(b);
      const usable = deps.options.json<Record<string, string>>("UserUsableGroups", {});
      if (group !== user.group && !(group in usable))
        throw new AppError(403, `you may not use group ${group}`, "group_not_allowed");
      const model = typeof b.model === "string" ? b.model.trim() : "";
      if (!model) throw new AppError(400, "model is required");
      const caller: Caller = {
        userId: user.id,
        username: user.username,
        role: user.role,
        group,
        userGroup: user.group,
        tokenId: 0,
        tokenName: "playground",
        unlimited: false,
        modelLimits: null,
        pinnedChannel: null,
        acceptUnsetModel: settingFlag(user.setting, "accept_unset_model_ratio_model"),
        recordIp: settingFlag(user.setting, "record_ip_log"),
        userQuota: Number(user.quota),
        tokenQuota: null,
        userSetting: user.setting,
      };
      const ip = clientIp(request, server as any, deps.config.trustProxy);
      return relay(deps, {
        mode: "chat",
        format: "openai",
        path: "/pg/chat/completions",
        search: "",
        body: b,
        model,
        stream: b.stream === true,
        caller,
        ip,
        signal: request.signal,
      });
    },
    { role: ROLE.common, parse: textWithin(bodyLimit("chat", deps.config.maxBodyBytes)) },
  );
}
