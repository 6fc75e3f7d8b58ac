// Where cached answers live: Redis when REDIS_CONN_STRING is configured (every instance shares the entries,
// Redis expires them with EX), else the database's response_cache table (SQLite, PostgreSQL or MySQL; expired
// rows are read as absent and removed in small batches by jobs/response-cache-cleanup.ts). No copy is kept in
// process memory: an entry is a few kilobytes read once per hit, and a purge or expiry is seen at once by
// every instance.
import type { AppDeps } from "../../deps.ts";
import type { Usage } from "../providers/types.ts";
import { dialectOf } from "../../../db/dialect.ts";
import { writeOffLoop } from "../../infra/statement-worker.ts";
import { CacheUnavailableError } from "../../infra/cache.ts";

/** One stored answer, exactly as the client received it. */
export interface CachedAnswer {
  v: 1;
  /** "sse": the frames the client was sent, replayed as they are; "body": a JSON (or text) body */
  kind: "sse" | "body";
  contentType: string;
  body: string;
  /** what the original call was billed for: a hit is billed a fraction of its cost */
  usage: Usage;
  /** the model the original call was served by, and its channel (for the log) */
  upstreamModel: string;
  channelId: number;
  /** epoch milliseconds: stored, and expires */
  at: number;
  exp: number;
}

export interface AnswerStore {
  readonly kind: "redis" | "database";
  get(key: string, now: number): Promise<CachedAnswer | null>;
  put(key: string, model: string, entry: CachedAnswer): Promise<void>;
}

const REDIS_PREFIX = "rcache:";

export function answerStore(deps: AppDeps): AnswerStore {
  return deps.cache.kind === "redis" ? redisStore(deps) : databaseStore(deps);
}

/** An entry as stored: its facts as one line of JSON, then the body as it is — a large body is copied, never
 * escaped into JSON and parsed back (which cost milliseconds on the event loop for a 1 MiB answer). */
export function serialize(e: CachedAnswer): string {
  const { body, ...facts } = e;
  return JSON.stringify(facts) + "\n" + body;
}

export function parse(raw: string | null | undefined, now: number): CachedAnswer | null {
  if (!raw) return null;
  const nl = raw.indexOf("\n");
  if (nl < 0) return null;
  try {
    const facts = JSON.parse(raw.slice(0, nl)) as Omit<CachedAnswer, "body">;
    return facts?.v === 1 && facts.exp > now ? { ...facts, body: raw.slice(nl + 1) } : null;
  } catch {
    return null;
  }
}

/** What a cache call answers when Redis cannot be asked; other errors go on up. */
const skipUnavailable =
  <T>(value: T) =>
  (e: unknown): T => {
    if (e instanceof CacheUnavailableError) return value;
    throw e;
  };

function redisStore(deps: AppDeps): AnswerStore {
  return {
    kind: "redis",
    // Redis down: a miss, and the answer is not kept (the call itself goes on).
    async get(key, now) {
      return parse(await deps.cache.get(REDIS_PREFIX + key).catch(skipUnavailable(null)), now);
    },
    async put(key, _model, entry) {
      const ttl = Math.ceil((entry.exp - entry.at) / 1000);
      if (ttl > 0) await deps.cache.set(REDIS_PREFIX + key, serialize(entry), ttl).catch(skipUnavailable(undefined));
    },
  };
}

function databaseStore(deps: AppDeps): AnswerStore {
  const db = deps.db;
  const mysql = dialectOf(db) === "mysql";
  return {
    kind: "database",
    async get(key, now) {
      const row = await db
        .selectFrom("response_cache")
        .select(["entry", "expires_at"])
        .where("cache_key", "=", key)
        .executeTakeFirst();
      if (!row || Number(row.expires_at) * 1000 <= now) return null;
      return parse(row.entry, now);
    },
    async put(key, model, entry) {
      const row = {
        cache_key: key,
        model: model.slice(0, 255),
        entry: serialize(entry),
        created_at: Math.floor(entry.at / 1000),
        expires_at: Math.ceil(entry.exp / 1000),
      };
      const update = { model: row.model, entry: row.entry, created_at: row.created_at, expires_at: row.expires_at };
      const q = db.insertInto("response_cache").values(row);
      // On SQLite by the write worker: on the main connection the store waited out the worker's write lock on the
      // event loop.
      await writeOffLoop(
        db,
        mysql ? q.onDuplicateKeyUpdate(update) : q.onConflict((oc) => oc.column("cache_key").doUpdateSet(update)),
      );
    },
  };
}
