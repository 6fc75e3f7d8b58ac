// Default model names per channel type (spec 000 §7.4): GET /api/models answers a map of channel type →
// model names, which is cached locally under `models`. The channel form fills its defaults from the
// freshest map it has: the server's answer, else the cached copy, else the catalogue built into the console.
import { api } from "../../api/index.ts";
import { KEYS, readJson, writeJson } from "../../lib/storage.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../server/catalogue/models.ts";

export type TypeModels = Record<string, readonly string[]>;

function isTypeModels(v: unknown): v is TypeModels {
  return (
    !!v
    && typeof v === "object"
    && !Array.isArray(v)
    && Object.values(v as object).every((list) => Array.isArray(list) && list.every((m) => typeof m === "string"))
  );
}

/** The map cached by the last successful GET /api/models, or the built-in catalogue. */
export function cachedTypeModels(): TypeModels {
  const cached = readJson<unknown>(KEYS.models, null);
  return isTypeModels(cached) && Object.keys(cached).length ? cached : DEFAULT_CHANNEL_MODELS;
}

/** Asks the server, caches a good answer under `models`; when the call fails the cache or the catalogue answers. */
export async function loadTypeModels(): Promise<TypeModels> {
  const r = await api.get<TypeModels>("/api/models");
  if (r.success && isTypeModels(r.data) && Object.keys(r.data).length) {
    writeJson(KEYS.models, r.data);
    return r.data;
  }
  return cachedTypeModels();
}

/** A type's default models; a type the map does not know falls back to the catalogue. */
export function defaultModelsFor(map: TypeModels, type: number): string[] {
  return [...(map[String(type)] ?? DEFAULT_CHANNEL_MODELS[type] ?? [])];
}

export const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);
