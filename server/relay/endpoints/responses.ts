// POST /v1/responses (and GET/DELETE /v1/responses/{id}): the OpenAI Responses API. Channels that serve it
// get the call as it is; the others answer it through chat (formats/bridge.ts). previous_response_id is
// honoured for the responses the gateway converted: it keeps each one's conversation (input and output items,
// per user, an hour, at most 1 MiB) and sends the earlier turns as input. An id it does not keep goes on
// unchanged: a channel with the Responses API knows its own ids, a converted call refuses it with a 400.
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { AppError } from "../../http/errors.ts";
import { decodeOr400 } from "../../http/paths.ts";
import type { Caller, TokenCaller } from "../auth.ts";
import { bodyLimit, parseJsonObject, textWithin } from "../body.ts";
import { ON_RESPONSE } from "../formats/bridge.ts";
import { PREVIOUS_RESPONSE } from "../formats/responses/answer.ts";
import { relay } from "./exchange.ts";

/** How long a converted response can be continued. */
export const RESPONSE_TTL_SECONDS = 3600;
/** A conversation larger than this (images inline, long histories) is not kept. */
export const RESPONSE_MAX_BYTES = 1024 * 1024;

interface Kept { userId: number; items: unknown[]; response: Record<string, any> }

const keyOf = (id: string) => `responses:${id}`;

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

/** Output items as they are sent back as input, without the ids only the gateway knows (an upstream with the
 * Responses API would look them up); reasoning items carry nothing a converted call can use. */
function asInput(output: unknown): unknown[] {
  if (!Array.isArray(output)) return [];
  const out: unknown[] = [];
  for (const o of output) {
    if (o?.type === "message") out.push({ type: "message", role: "assistant", content: o.content });
    else if (o?.type === "function_call") out.push({ type: "function_call", call_id: o.call_id, name: o.name, arguments: o.arguments });
  }
  return out;
}

export function responsesRoute(deps: AppDeps, tokenCaller: (request: Request, server: any) => TokenCaller | Promise<TokenCaller>) {
  return new Elysia({ name: "relay-responses" })
    .post("/v1/responses", async ({ request, server, body: raw }) => {
      const { caller, ip } = await tokenCaller(request, server as any);
      const body = parseJsonObject(raw);
      const model = typeof body.model === "string" ? body.model.trim() : "";
      if (!model) throw new AppError(400, "model is required");
      // The client's text goes upstream as it is while the body says the same (formats/client-json.ts): not
      // after trimming the model or taking in a previous response's items. (Symbol keys are not JSON.)
      let same = body.model === model && typeof raw === "string";
      body.model = model;
      let items = inputItems(body.input);
      const previous = typeof body.previous_response_id === "string" ? body.previous_response_id : "";
      if (previous) {
        const before = await kept(deps, caller, previous);
        if (before) {
          items = [...before.items, ...items];
          body.input = items;
          same = false;
          delete body.previous_response_id;
          (body as any)[PREVIOUS_RESPONSE] = previous;
        }
      }
      if (body.store !== false) {
        (body as any)[ON_RESPONSE] = (response: Record<string, any>) => {
          const entry: Kept = { userId: caller.userId, items: [...items, ...asInput(response.output)], response: { ...response, previous_response_id: previous || null } };
          const text = JSON.stringify(entry);
          if (text.length <= RESPONSE_MAX_BYTES && typeof response.id === "string") {
            void deps.cache.set(keyOf(response.id), text, RESPONSE_TTL_SECONDS).catch(() => {});
          }
        };
      }
      return relay(deps, {
        mode: "responses", format: "openai", path: "/v1/responses", search: "", body, model, stream: body.stream === true, caller, ip, signal: request.signal,
        json: same ? { body, text: raw as string } : undefined,
      });
    }, { parse: textWithin(bodyLimit("responses", deps.config.maxBodyBytes)) })
    .get("/v1/responses/:id", async ({ request, server, params }) => {
      const { caller } = await tokenCaller(request, server as any);
      const id = decodeOr400(params.id);
      const hit = await kept(deps, caller, id);
      if (!hit) throw new AppError(404, `response '${id}' is not kept by this gateway (it keeps the responses it converts for an hour)`, "response_not_found");
      return hit.response;
    })
    .delete("/v1/responses/:id", async ({ request, server, params }) => {
      const { caller } = await tokenCaller(request, server as any);
      const id = decodeOr400(params.id);
      if (!(await kept(deps, caller, id))) throw new AppError(404, `response '${id}' is not kept by this gateway`, "response_not_found");
      await deps.cache.del(keyOf(id));
      return { id, object: "response", deleted: true };
    });
}
