// Temporary databases for storage tests: SQLite always; PostgreSQL and MySQL when PG_DSN / MYSQL_DSN are set.
import postgres from "postgres";
import { createConnection } from "mysql2/promise";
import type { Dialect } from "../../db/index.ts";

export interface TempDb {
  kind: Dialect;
  url: string;
  sqlitePath: string;
  drop(): Promise<void>;
}

export function storageKinds(): Dialect[] {
  const kinds: Dialect[] = ["sqlite"];
  if (process.env.PG_DSN) kinds.push("postgres");
  if (process.env.MYSQL_DSN) kinds.push("mysql");
  return kinds;
}

const rand = () => Math.random().toString(36).slice(2, 10);

export async function tempDatabase(kind: Dialect): Promise<TempDb> {
  if (kind === "sqlite") return { kind, url: "", sqlitePath: ":memory:", drop: async () => {} };
  const name = `sy_test_${rand()}`;
  if (kind === "postgres") {
    const admin = postgres(process.env.PG_DSN!, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    const url = new URL(process.env.PG_DSN!);
    url.pathname = "/" + name;
    return {
      kind,
      url: url.toString(),
      sqlitePath: "",
      drop: async () => {
        const a = postgres(process.env.PG_DSN!, { max: 1, onnotice: () => {} });
        await a.unsafe(`drop database if exists ${name} with (force)`);
        await a.end();
      },
    };
  }
  const conn = await createConnection(process.env.MYSQL_DSN!);
  await conn.query(`create database ${name}`);
  await conn.end();
  const url = new URL(process.env.MYSQL_DSN!);
  url.pathname = "/" + name;
  return {
    kind,
    url: url.toString(),
    sqlitePath: "",
    drop: async () => {
      const c = await createConnection(process.env.MYSQL_DSN!);
      await c.query(`drop database if exists ${name}`);
      await c.end();
    },
  };
}
