import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, normaliseDsn, parseFlags } from "../../server/config.ts";

describe("configuration", () => {
  test("SQL_DSN chooses the database", () => {
    expect(normaliseDsn("")).toEqual({ kind: "sqlite", url: "" });
    expect(normaliseDsn("postgres://u:p@h:5432/db")).toEqual({ kind: "postgres", url: "postgres://u:p@h:5432/db" });
    expect(normaliseDsn("postgresql://u@h/db").kind).toBe("postgres");
    expect(normaliseDsn("mysql://root@127.0.0.1:3306/oneapi")).toEqual({
      kind: "mysql",
      url: "mysql://root@127.0.0.1:3306/oneapi",
    });
    // one-api style Go DSN
    expect(normaliseDsn("root:s3cr@t@tcp(localhost:3306)/oneapi?parseTime=true")).toEqual({
      kind: "mysql",
      url: "mysql://root:s3cr%40t@localhost:3306/oneapi",
    });
    expect(() => normaliseDsn("oracle://x")).toThrow(/SQL_DSN/);
  });

  test("defaults, env and flags", () => {
    const dir = mkdtempSync(join(tmpdir(), "sy-cfg-"));
    const c = loadConfig({ DATA_DIR: dir });
    expect(c.port).toBe(3000);
    expect(c.database.kind).toBe("sqlite");
    expect(c.database.sqlitePath).toBe(join(dir, "switchyard.db"));
    expect(c.redisUrl).toBeNull();
    expect(c.syncFrequencySeconds).toBe(60);
    const c2 = loadConfig(
      {
        DATA_DIR: dir,
        PORT: "8080",
        SQL_DSN: "postgres://x@y/z",
        REDIS_CONN_STRING: "redis://r:6379",
        SYNC_FREQUENCY: "5",
      },
      parseFlags(["--port", "9000"]),
    );
    expect(c2.port).toBe(9000);
    expect(c2.database).toMatchObject({ kind: "postgres", url: "postgres://x@y/z" });
    expect(c2.redisUrl).toBe("redis://r:6379");
    expect(c2.syncFrequencySeconds).toBe(5);
    expect(parseFlags(["--help"]).help).toBe(true);
    expect(parseFlags(["--version"]).version).toBe(true);
    expect(parseFlags(["--port=1234", "--data-dir", "/x"])).toMatchObject({ port: 1234, dataDir: "/x" });
  });

  test("a generated SESSION_SECRET is persisted so restarts keep sessions", () => {
    const dir = mkdtempSync(join(tmpdir(), "sy-secret-"));
    const a = loadConfig({ DATA_DIR: dir });
    const b = loadConfig({ DATA_DIR: dir });
    expect(a.sessionSecretGenerated).toBe(true);
    expect(a.sessionSecret).toHaveLength(64);
    expect(b.sessionSecret).toBe(a.sessionSecret);
    expect(readFileSync(join(dir, ".session_secret"), "utf8")).toBe(a.sessionSecret);
    const c = loadConfig({ DATA_DIR: dir, SESSION_SECRET: "given" });
    expect(c.sessionSecret).toBe("given");
    expect(c.sessionSecretGenerated).toBe(false);
  });
});
