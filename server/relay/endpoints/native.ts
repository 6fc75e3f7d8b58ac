// The native entry points: Claude's POST /v1/messages and Gemini's POST
// /v1beta/models/{model}:generateContent|:streamGenerateContent (also under /v1/models/...). They
// authenticate like every relay route (x-api-key, x-goog-api-key, ?key= or Bearer) and run the one
// exchange endpoint (endpoints/exchange.ts) with the client's format; errors come back as Claude or Gemini error bodies (the app's
// error handler picks the format from the path).
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { AppError } from "../../http/errors.ts";
import { decodeOr400 } from "../../http/paths.ts";
import { tokenCallerOf } from "../auth.ts";
import { relay } from "./exchange.ts";
import { countPromptTokens } from "../tokenizer.ts";
import { claudeRequestToOpenAI } from "../formats/claude/client.ts";
import { geminiRequestToOpenAI } from "../formats/gemini/client.ts";
import { bodyLimit, parseJsonObject, textWithin } from "../body.ts";
import { plainRoute, type PlainRoute } from "../plain-route.ts";
import { geminiEmbedTexts } from "../formats/gemini/client.ts";
import { callerModels, modelList, oneModel } from "./models.ts";

/**
 * The Claude Messages checks routing and billing need, made before any channel is chosen. Roles, content
 * blocks and fields are not judged here: a Claude channel takes the body as sent (its API decides on what is
 * newer than this code), and a conversion refuses, naming the field, what it has no counterpart for
 * (formats/claude/client.ts).
 */
export function checkClaudeBody(body: Record<string, any>): string {
  const model = typeof body.model === "string" ? body.model.trim() : "";
  if (!model) throw new AppError(400, "model: Field required");
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw new AppError(400, "messages: Field required");
  for (const [i, m] of body.messages.entries()) {
    if (!m || typeof m !== "object" || typeof m.role !== "string" || !m.role)
      throw new AppError(400, `messages.${i}.role: Field required`);
  }
  if (body.max_tokens !== undefined && (!Number.isInteger(body.max_tokens) || body.max_tokens < 1)) {
    throw new AppError(400, "max_tokens: Input should be a positive integer");
  }
  return model;
}

export function checkGeminiBody(body: Record<string, any>): void {
  if (!Array.isArray(body.contents) || body.contents.length === 0)
    throw new AppError(400, "* GenerateContentRequest.contents: contents is not specified");
  for (const [i, c] of body.contents.entries()) {
    if (!c || !Array.isArray(c.parts))
      throw new AppError(400, `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty`);
  }
}

/**
 * A body as the tokenizer counts it (count_tokens, countTokens: an estimate, no upstream): converted to chat, or,
 * where the conversion has no counterpart for something only the client's own API has (a block, role, field or
 * tool), `asIs` — the body's text as it stands.
 */
function countable(convert: () => unknown, asIs: () => unknown): unknown {
  try {
    return convert();
  } catch (e) {
    if (!(e instanceof AppError)) throw e;
    return asIs();
  }
}

const GEMINI_ACTIONS = new Set([
  "generateContent",
  "streamGenerateContent",
  "countTokens",
  "embedContent",
  "batchEmbedContents",
]);
const EMBED_ACTIONS = new Set(["embedContent", "batchEmbedContents"]);

/** "gemini-2.5-flash:streamGenerateContent" → model and method. */
export function geminiTarget(tail: string): { model: string; action: string; stream: boolean } {
  const decoded = decodeOr400(tail);
  const at = decoded.lastIndexOf(":");
  const model = at > 0 ? decoded.slice(0, at).replace(/^models\//, "") : "";
  const action = at > 0 ? decoded.slice(at + 1) : "";
  if (!model || !GEMINI_ACTIONS.has(action)) {
    throw new AppError(
      action ? 501 : 404,
      action ? `method ${action} is not supported by this gateway` : `unknown Gemini route models/${decoded}`,
    );
  }
  return { model, action, stream: action === "streamGenerateContent" };
}

/** Claude's POST /v1/messages as a plain route (relay/index.ts relayJsonRoutes serves it). */
export function claudeMessagesRoute(deps: AppDeps): PlainRoute {
  const caller = tokenCallerOf(deps);
  return plainRoute(bodyLimit("native", deps.config.maxBodyBytes), async (request, server, text, socket) => {
    // A cached token answers at once (relay/index.ts relayJsonRoutes): no suspension for it.
    const found = caller(request, server, socket);
    const { caller: who, ip } = found instanceof Promise ? await found : found;
    const body = parseJsonObject(text);
    const model = checkClaudeBody(body);
    const beta = request.headers.get("anthropic-beta");
    // Only the beta SDK's ?beta=true means anything to Anthropic (providers/claude); the rest of a query is dropped.
    const search = request.url.includes("beta=") ? betaSearch(request.url) : "";
    return relay(deps, {
      mode: "chat",
      format: "claude",
      path: "/v1/messages",
      search,
      body,
      model,
      stream: body.stream === true,
      caller: who,
      ip,
      incoming: request,
      headers: beta ? { "anthropic-beta": beta } : undefined,
      httpHeaders: request.headers,
      json: { body, text },
    });
  });
}

function betaSearch(url: string): string {
  return new URL(url).searchParams.get("beta") === "true" ? "?beta=true" : "";
}

/** The POST routes of Gemini's API (relay/index.ts relayJsonRoutes serves them); the model and method follow the prefix. */
export const GEMINI_ROUTES = ["/v1beta/models/*", "/v1/models/*"];

/** Gemini's generateContent, streamGenerateContent, countTokens and embeddings as one plain route. */
export function geminiRoute(deps: AppDeps): PlainRoute {
  const caller = tokenCallerOf(deps);
  return plainRoute(bodyLimit("native", deps.config.maxBodyBytes), async (request, server, text, socket) => {
    const url = new URL(request.url);
    // The path after /v1beta/models/ or /v1/models/, as sent (geminiTarget decodes it).
    const tail = url.pathname.slice(url.pathname.indexOf("/models/") + "/models/".length);
    const { model, action, stream } = geminiTarget(tail);
    const found = caller(request, server, socket);
    const { caller: who, ip } = found instanceof Promise ? await found : found;
    const body = parseJsonObject(text);
    // countTokens may wrap the request: {"generateContentRequest": {...}}.
    if (action === "countTokens") {
      const inner =
        body.generateContentRequest && typeof body.generateContentRequest === "object"
          ? body.generateContentRequest
          : body;
      checkGeminiBody(inner);
      return {
        totalTokens: await countPromptTokens(
          countable(
            () => geminiRequestToOpenAI(inner, model, false),
            () => inner,
          ),
        ),
      };
    }
    if (EMBED_ACTIONS.has(action)) {
      // Checked here so a bad body costs nothing; embeddings are served by Gemini and OpenAI-format channels.
      if (
        action === "batchEmbedContents" ? !Array.isArray(body.requests) || body.requests.length === 0 : !body.content
      ) {
        throw new AppError(
          400,
          action === "batchEmbedContents"
            ? "* BatchEmbedContentsRequest.requests: requests is required"
            : "* EmbedContentRequest.content: content is required",
        );
      }
      geminiEmbedTexts(body);
      return relay(deps, {
        mode: "embeddings",
        format: "gemini",
        path: url.pathname,
        search: url.search,
        body,
        model,
        stream: false,
        caller: who,
        ip,
        signal: request.signal,
        httpHeaders: request.headers,
      });
    }
    checkGeminiBody(body);
    return relay(deps, {
      mode: "chat",
      format: "gemini",
      path: url.pathname,
      search: url.search,
      body,
      model,
      stream,
      caller: who,
      ip,
      incoming: request,
      httpHeaders: request.headers,
      json: { body, text },
    });
  });
}

export function nativeModule(deps: AppDeps) {
  const caller = tokenCallerOf(deps);

  // Claude and Gemini requests carry images and documents: the server-wide MAX_BODY_BYTES.
  const parse = textWithin(bodyLimit("native", deps.config.maxBodyBytes));
  return (
    new Elysia({ name: "relay-native" })
      // An estimate with the gateway's tokenizer (the channel is not asked, and nothing is billed).
      .post(
        "/v1/messages/count_tokens",
        async ({ request, server, body: raw }) => {
          await caller(request, server);
          const body = parseJsonObject(raw);
          checkClaudeBody(body);
          const asIs = () => ({
            messages: [{ role: "system", content: body.system ?? "" }, ...body.messages],
            tools: body.tools,
          });
          return { input_tokens: await countPromptTokens(countable(() => claudeRequestToOpenAI(body as any), asIs)) };
        },
        { parse },
      )
      // genai's models.list / models.get: the key's models as Gemini Model resources.
      .get("/v1beta/models", async ({ request, server }) =>
        modelList(await callerModels(deps, (await caller(request, server)).caller), "gemini"),
      )
      .get("/v1beta/models/*", async ({ request, server, params }) => {
        const models = await callerModels(deps, (await caller(request, server)).caller);
        return oneModel(models, decodeOr400((params as Record<string, string>)["*"] ?? ""), "gemini");
      })
  );
}
