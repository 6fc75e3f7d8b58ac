// POST /v1/responses (and GET/DELETE /v1/responses/{id}, POST /v1/responses/compact and
// /v1/responses/input_tokens): the OpenAI Responses API. Channels that serve it get the call as it is; the
// others answer it through chat (formats/bridge.ts). previous_response_id is honoured for the responses the
// gateway converted: it keeps each one's conversation (input and output items, per user, an hour, at most
// 1 MiB) and sends the earlier turns as input; an item_reference to one of their output items is replaced by
// the item. An id it does not keep goes on unchanged: a channel with the Responses API knows its own ids, a
// converted call refuses it with a 400.
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { AppError } from "../../http/errors.ts";
import { decodeOr400 } from "../../http/paths.ts";
import type { Caller, TokenCaller } from "../auth.ts";
import { bodyLimit, parseJsonObject, textWithin } from "../body.ts";
import { ON_RESPONSE } from "../formats/bridge.ts";
import { PREVIOUS_RESPONSE } from "../formats/responses/answer.ts";
import { convertResponsesRequest, openContent, sealContent } from "../formats/responses/request.ts";
import { countPromptTokens } from "../tokenizer.ts";
import { relay } from "./exchange.ts";

/** How long a converted response can be continued. */
export const RESPONSE_TTL_SECONDS = 3600;
/** A conversation larger than this (images inline, long histories) is not kept. */
export const RESPONSE_MAX_BYTES = 1024 * 1024;

interface Kept {
  userId: number;
  items: unknown[];
  response: Record<string, any>;
}

const keyOf = (id: string) => `responses:${id}`;
/** An output item's id → the id of the response that holds it (for item_reference). */
const itemKeyOf = (id: string) => `responses:item:${id}`;

async function kept(deps: AppDeps, caller: Caller, id: string): Promise<Kept | null> {
  const raw = await deps.cache.get(keyOf(id)).catch(() => null);
  if (!raw) return null;
  try {
    const k = JSON.parse(raw) as Kept;
    return k.userId === caller.userId ? k : null;
  } catch {
    return null;
  }
}

/** The request's input as items (a string is one user message). */
function inputItems(input: unknown): unknown[] {
  if (input == null) return [];
  if (typeof input === "string") return [{ type: "message", role: "user", content: input }];
  if (Array.isArray(input)) return input;
  throw new AppError(400, "input must be a string or an array of input items");
}

/** The text of one of the gateway's reasoning items: its summary is the upstream's whole reasoning. */
const reasoningText = (o: any) =>
  openContent(o.encrypted_content)
  ?? (Array.isArray(o.summary) ? o.summary.map((p: any) => String(p?.text ?? "")).join("") : "");

/** One output item as it is sent back as input, without the id only the gateway knows (an upstream with the
 * Responses API would look it up); reasoning sealed, so the next converted call can hand it to the upstream. */
function itemAsInput(o: any): unknown | null {
  const ns = typeof o?.namespace === "string" ? { namespace: o.namespace } : {};
  switch (o?.type) {
    case "message":
      return { type: "message", role: "assistant", content: o.content };
    case "function_call":
      return { type: "function_call", call_id: o.call_id, name: o.name, arguments: o.arguments, ...ns };
    case "custom_tool_call":
      return { type: "custom_tool_call", call_id: o.call_id, name: o.name, input: o.input, ...ns };
    case "reasoning": {
      // Sealed already when it carries thought signatures (or the client asked for encrypted content).
      if (openContent(o.encrypted_content) != null)
        return { type: "reasoning", summary: [], encrypted_content: o.encrypted_content };
      const text = reasoningText(o);
      return text ? { type: "reasoning", summary: [], encrypted_content: sealContent(text) } : null;
    }
    default:
      return null;
  }
}

function asInput(output: unknown): unknown[] {
  if (!Array.isArray(output)) return [];
  const out: unknown[] = [];
  for (const o of output) {
    const item = itemAsInput(o);
    if (item) out.push(item);
  }
  return out;
}

/**
 * The input with each item_reference to an output item of a response the gateway keeps for this user replaced
 * by that item; other references stay (a channel with the Responses API may know them). The same array when
 * there are none.
 */
async function withReferencedItems(deps: AppDeps, caller: Caller, items: unknown[]): Promise<unknown[]> {
  const refs = items.filter((i: any) => i?.type === "item_reference" && typeof i.id === "string") as { id: string }[];
  if (!refs.length) return items;
  const found = new Map<string, unknown>();
  const responses = new Map<string, Promise<Kept | null>>();
  await Promise.all(
    refs.map(async ({ id }) => {
      const responseId = await deps.cache.get(itemKeyOf(id)).catch(() => null);
      if (!responseId) return;
      if (!responses.has(responseId)) responses.set(responseId, kept(deps, caller, responseId));
      const k = await responses.get(responseId)!;
      const item = k && Array.isArray(k.response.output) ? k.response.output.find((o: any) => o?.id === id) : undefined;
      const asItem = item && itemAsInput(item);
      if (asItem) found.set(id, asItem);
    }),
  );
  return items.map((i: any) => (i?.type === "item_reference" && found.has(i.id) ? found.get(i.id) : i));
}

/** The Responses body with the earlier turns of a kept previous_response_id and the kept items it references. */
async function expanded(
  deps: AppDeps,
  caller: Caller,
  body: Record<string, any>,
): Promise<{ items: unknown[]; previous: string; changed: boolean }> {
  let items = inputItems(body.input);
  let changed = false;
  const previous = typeof body.previous_response_id === "string" ? body.previous_response_id : "";
  if (previous) {
    const before = await kept(deps, caller, previous);
    if (before) {
      items = [...before.items, ...items];
      changed = true;
      delete body.previous_response_id;
      (body as any)[PREVIOUS_RESPONSE] = previous;
    }
  }
  const resolved = await withReferencedItems(deps, caller, items);
  if (resolved !== items || changed) {
    body.input = resolved;
    changed = true;
  }
  return { items: resolved, previous, changed };
}

function modelOf(body: Record<string, any>): string {
  const model = typeof body.model === "string" ? body.model.trim() : "";
  if (!model) throw new AppError(400, "model is required");
  return model;
}

export function responsesRoute(
  deps: AppDeps,
  tokenCaller: (request: Request, server: any) => TokenCaller | Promise<TokenCaller>,
) {
  return (
    new Elysia({ name: "relay-responses" })
      .post(
        "/v1/responses",
        async ({ request, server, body: raw }) => {
          const { caller, ip } = await tokenCaller(request, server as any);
          const body = parseJsonObject(raw);
          const model = modelOf(body);
          // The client's text goes upstream as it is while the body says the same (formats/client-json.ts): not
          // after trimming the model or taking in a previous response's items. (Symbol keys are not JSON.)
          const { items, previous, changed } = await expanded(deps, caller, body);
          const same = body.model === model && typeof raw === "string" && !changed;
          body.model = model;
          if (body.store !== false) {
            (body as any)[ON_RESPONSE] = (response: Record<string, any>) => {
              const entry: Kept = {
                userId: caller.userId,
                items: [...items, ...asInput(response.output)],
                response: { ...response, previous_response_id: previous || null },
              };
              const text = JSON.stringify(entry);
              if (text.length > RESPONSE_MAX_BYTES || typeof response.id !== "string") return;
              void deps.cache.set(keyOf(response.id), text, RESPONSE_TTL_SECONDS).catch(() => {});
              for (const o of response.output ?? []) {
                if (typeof o?.id === "string")
                  void deps.cache.set(itemKeyOf(o.id), response.id, RESPONSE_TTL_SECONDS).catch(() => {});
              }
            };
          }
          return relay(deps, {
            mode: "responses",
            format: "openai",
            path: "/v1/responses",
            search: "",
            body,
            model,
            stream: body.stream === true,
            caller,
            ip,
            signal: request.signal,
            httpHeaders: request.headers,
            json: same ? { body, text: raw as string } : undefined,
          });
        },
        { parse: textWithin(bodyLimit("responses", deps.config.maxBodyBytes)) },
      )
      // Codex's compaction: served by the channels that have it, otherwise a summary written through chat.
      .post(
        "/v1/responses/compact",
        async ({ request, server, body: raw }) => {
          const { caller, ip } = await tokenCaller(request, server as any);
          const body = parseJsonObject(raw);
          const model = modelOf(body);
          const { changed } = await expanded(deps, caller, body);
          const same = body.model === model && typeof raw === "string" && !changed && body.stream !== true;
          body.model = model;
          delete body.stream;
          return relay(deps, {
            mode: "responses_compact",
            format: "openai",
            path: "/v1/responses/compact",
            search: "",
            body,
            model,
            stream: false,
            caller,
            ip,
            signal: request.signal,
            httpHeaders: request.headers,
            json: same ? { body, text: raw as string } : undefined,
          });
        },
        { parse: textWithin(bodyLimit("responses", deps.config.maxBodyBytes)) },
      )
      // An estimate with the gateway's tokenizer over the request as chat sees it (the channel is not asked, and
      // nothing is billed), like Claude's count_tokens.
      .post(
        "/v1/responses/input_tokens",
        async ({ request, server, body: raw }) => {
          const { caller } = await tokenCaller(request, server as any);
          const body = parseJsonObject(raw);
          await expanded(deps, caller, body);
          return { object: "response.input_tokens", input_tokens: await countPromptTokens(countable(body)) };
        },
        { parse: textWithin(bodyLimit("responses", deps.config.maxBodyBytes)) },
      )
      .get("/v1/responses/:id", async ({ request, server, params }) => {
        const { caller } = await tokenCaller(request, server as any);
        const id = decodeOr400(params.id);
        const hit = await kept(deps, caller, id);
        if (!hit)
          throw new AppError(
            404,
            `response '${id}' is not kept by this gateway (it keeps the responses it converts for an hour)`,
            "response_not_found",
          );
        return hit.response;
      })
      .delete("/v1/responses/:id", async ({ request, server, params }) => {
        const { caller } = await tokenCaller(request, server as any);
        const id = decodeOr400(params.id);
        if (!(await kept(deps, caller, id)))
          throw new AppError(404, `response '${id}' is not kept by this gateway`, "response_not_found");
        await deps.cache.del(keyOf(id));
        return { id, object: "response", deleted: true };
      })
  );
}

/** A Responses request as chat for counting; what chat cannot express (built-in tools) counts as its JSON text. */
function countable(body: Record<string, any>): unknown {
  try {
    const { chat } = convertResponsesRequest({
      ...body,
      model: String(body.model ?? ""),
      previous_response_id: null,
      background: null,
      conversation: null,
      prompt: null,
    } as any);
    return chat;
  } catch (e) {
    if (!(e instanceof AppError)) throw e;
    return {
      messages: [
        { role: "user", content: JSON.stringify([body.instructions ?? "", body.input ?? "", body.tools ?? []]) },
      ],
    };
  }
}
