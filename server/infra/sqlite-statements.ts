// Compiled statements kept per SQL text for a worker thread's own SQLite connection (the write worker's and the
// reader's): both run the same few texts again and again, and compiling one costs more than running it.
import type { Database, Statement } from "bun:sqlite";

export interface StatementCache {
  prepared(sql: string): Statement;
  /** Finalizes every kept statement (before the connection closes). */
  clear(): void;
}

/** Past `size` distinct texts the cache starts over. */
export function statementCache(db: () => Database, size: number): StatementCache {
  const statements = new Map<string, Statement>();
  const clear = () => {
    for (const s of statements.values()) s.finalize();
    statements.clear();
  };
  return {
    prepared(sql) {
      let st = statements.get(sql);
      if (!st) {
        if (statements.size >= size) clear();
        st = db().prepare(sql);
        statements.set(sql, st);
      }
      return st;
    },
    clear,
  };
}
