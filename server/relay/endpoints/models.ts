// The model list a key may use, in the shape of the SDK that asks: OpenAI's (GET /v1/models), Anthropic's
// (the same path with an anthropic-version header: the anthropic SDK's models.list/retrieve) and Gemini's
// (GET /v1beta/models, or /v1/models with a Gemini key header: the genai SDK's models.list/get).
import type { AppDeps } from "../../deps.ts";
import { AppError } from "../../http/errors.ts";
import { channelType } from "../../catalogue/index.ts";
import type { Caller } from "../auth.ts";
import { relayState } from "../state.ts";

export interface CallerModel {
  id: string;
  owner: string;
}

/** Models a caller may use: the group's enabled abilities, narrowed by the token's model limits. */
export async function callerModels(deps: AppDeps, caller: Caller): Promise<CallerModel[]> {
  const table = await relayState(deps).routing.get();
  const names = table.modelsByGroup.get(caller.group) ?? [];
  const out: CallerModel[] = [];
  for (const id of names) {
    if (caller.modelLimits && !caller.modelLimits.has(id)) continue;
    const first = table.abilities.get(`${caller.group}\n${id}`)?.[0];
    const type = first ? table.channels.get(first.channelId)?.type : undefined;
    out.push({ id, owner: (type !== undefined && channelType(type)?.kind) || "custom" });
  }
  return out;
}

export type ListShape = "openai" | "claude" | "gemini";

/** Which SDK is asking: Anthropic's sends anthropic-version, Google's its key header (or ?key=). */
export function listShape(request: Request): ListShape {
  const h = request.headers;
  if (h.get("anthropic-version")) return "claude";
  if (h.get("x-goog-api-key") || (!h.get("authorization") && new URL(request.url).searchParams.has("key")))
    return "gemini";
  return "openai";
}

/** A fixed date: the gateway does not know when an upstream published a model. */
const CREATED = 1626777600;
const CREATED_AT = new Date(CREATED * 1000).toISOString();

const EMBEDDING = /embed/i;

function openaiModel(m: CallerModel) {
  return { id: m.id, object: "model", created: CREATED, owned_by: m.owner };
}

function claudeModel(m: CallerModel) {
  return { type: "model", id: m.id, display_name: m.id, created_at: CREATED_AT };
}

/** Gemini's Model resource; the methods say what the gateway serves for it (embedding models embed, others generate). */
export function geminiModel(m: CallerModel) {
  return {
    name: `models/${m.id}`,
    baseModelId: m.id,
    version: "001",
    displayName: m.id,
    description: `${m.id} through this gateway`,
    supportedGenerationMethods: EMBEDDING.test(m.id)
      ? ["embedContent", "batchEmbedContents"]
      : ["generateContent", "streamGenerateContent", "countTokens"],
  };
}

export function modelList(models: CallerModel[], shape: ListShape): unknown {
  if (shape === "claude") {
    const data = models.map(claudeModel);
    return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  }
  if (shape === "gemini") return { models: models.map(geminiModel) };
  return { object: "list", data: models.map(openaiModel) };
}

/** One model, or a 404 in the SDK's own terms (the app's error handler writes it in the path's format). */
export function oneModel(models: CallerModel[], name: string, shape: ListShape): unknown {
  const id = name.replace(/^models\//, "");
  const hit = models.find((m) => m.id === id);
  if (!hit)
    throw new AppError(404, `the model '${id}' does not exist or you do not have access to it`, "model_not_found");
  return shape === "claude" ? claudeModel(hit) : shape === "gemini" ? geminiModel(hit) : openaiModel(hit);
}
