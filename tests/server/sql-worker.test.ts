// PostgreSQL and MySQL: the write-behind's transactions run on a worker thread with its own connection (Bun's
// SQL client), each slice of records (logs with their counters, debits and lease spends) committed whole or not
// at all; without a worker that can reach the database, the main connection writes as before.
import { describe, expect, test } from "bun:test";
import { openDatabase, type Database } from "../../db/index.ts";
import { startSqlWorker } from "../../server/infra/sql-worker.ts";
import { stopWorker, workerFor } from "../../server/infra/statement-worker.ts";
import { SERVER_SLICE_RECORDS, WORKER_STRIKES, WriteBehind } from "../../server/jobs/writebehind.ts";
import { storageKinds, tempDatabase, type TempDb } from "../helpers/db.ts";
import { copyStatement } from "../../db/copy.ts";

const at = Math.floor(Date.now() / 1000);
const entry = (quota: number, extraLog: Record<string, unknown> = {}) => ({
  usage: { userId: 1, username: "u", tokenId: 1, channelId: 7, model: "m", quota, tokens: 3, at },
  log: { user_id: 1, created_at: at, type: 2, content: "c", username: "u", quota, ...extraLog },
});

async function seed(db: Database) {
  await db
    .insertInto("users")
    .values({ id: 1, username: "u", password: "x", quota: 1_000_000, group: "default" } as any)
    .execute();
  await db
    .insertInto("tokens")
    .values({ id: 1, user_id: 1, key: "k".repeat(48), name: "t", created_time: at, remain_quota: 1_000_000 } as any)
    .execute();
  await db
    .insertInto("channels")
    .values({ id: 7, type: 1, key: "x", name: "c", created_time: at, models: "m", group: "default" } as any)
    .execute();
}

async function withDb(kind: "postgres" | "mysql", run: (db: Database, tmp: TempDb) => Promise<void>) {
  const tmp = await tempDatabase(kind);
  const db = await openDatabase({ kind, url: tmp.url, sqlitePath: "" });
  try {
    await seed(db);
    await run(db, tmp);
  } finally {
    await stopWorker(db);
    await db.destroy();
    await tmp.drop();
  }
}

const count = async (db: Database, table: "logs" | "quota_holds") =>
  Number(
    (
      await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as("n"))
        .executeTakeFirstOrThrow()
    ).n,
  );

for (const kind of storageKinds().filter((k) => k !== "sqlite") as ("postgres" | "mysql")[]) {
  describe(`the write-behind on ${kind}`, () => {
    test("commits its slices on the worker: logs (any Unicode), counters, rollups and lease spends, exactly; a lease row found gone is charged to the balances", async () => {
      await withDb(kind, async (db, tmp) => {
        const worker = startSqlWorker(db, tmp.url)!;
        let transactions = 0;
        const write = worker.write.bind(worker);
        worker.write = (statements) => (transactions++, write(statements));
        // Two lease rows holding quota that left the balances when they were topped up; "b" is gone by the
        // time the calls it paid for are written (another instance refunded it as abandoned).
        await db
          .insertInto("quota_holds")
          .values([
            { id: "a", user_id: 1, token_id: 1, amount: 50_000, instance: "i", created_at: at, renewed_at: at },
          ] as any)
          .execute();
        const writer = new WriteBehind(db, 0, { enabled: () => true, intervalMs: () => 0 });
        const gone: string[][] = [];
        writer.onLeasesCommitted = (_spends, g) => gone.push([...g]);
        const n = SERVER_SLICE_RECORDS + 17;
        const text = "naïve 日本語 🙂 \\ ' \" %s $1 ?";
        for (let i = 0; i < n; i++)
          writer.settled({ lease: { id: "a" }, userId: 1, tokenId: 1, amount: 10 }, 3, entry(3, { content: text }));
        writer.settled({ lease: { id: "b" }, userId: 1, tokenId: 1, amount: 10 }, 7, entry(7));
        await writer.flush(true);
        expect(transactions).toBe(2);
        expect(workerFor(db)).toBe(worker);
        expect(await count(db, "logs")).toBe(n + 1);
        const logs = await db.selectFrom("logs").select(["content", "quota"]).where("quota", "=", 3).limit(1).execute();
        expect(logs).toEqual([{ content: text, quota: 3 }]);
        // The first slice spent 3 × 1,024 from lease "a"; the second 3 × 17 from "a" and 7 from the gone "b",
        // which is charged to the token and the user instead.
        expect(
          Number(
            (await db.selectFrom("quota_holds").select("amount").where("id", "=", "a").executeTakeFirstOrThrow())
              .amount,
          ),
        ).toBe(50_000 - 3 * n);
        expect(gone).toEqual([[], ["b"]]);
        const user = await db
          .selectFrom("users")
          .select(["quota", "used_quota", "request_count"])
          .where("id", "=", 1)
          .executeTakeFirstOrThrow();
        expect([user.quota, user.used_quota, user.request_count].map(Number)).toEqual([
          1_000_000 - 7,
          3 * n + 7,
          n + 1,
        ]);
        const token = await db
          .selectFrom("tokens")
          .select(["remain_quota", "used_quota"])
          .where("id", "=", 1)
          .executeTakeFirstOrThrow();
        expect([token.remain_quota, token.used_quota].map(Number)).toEqual([1_000_000 - 7, 3 * n + 7]);
        expect(
          Number(
            (await db.selectFrom("channels").select("used_quota").where("id", "=", 7).executeTakeFirstOrThrow())
              .used_quota,
          ),
        ).toBe(3 * n + 7);
        const rollup = await db.selectFrom("quota_data").select(["count", "quota", "token_used"]).execute();
        expect(rollup.map((r) => [r.count, r.quota, r.token_used].map(Number))).toEqual([
          [n + 1, 3 * n + 7, 3 * (n + 1)],
        ]);
        // A second flush adds to the same rollup row (update, not a second insert).
        writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 0, entry(0));
        await writer.flush(true);
        expect((await db.selectFrom("quota_data").select("count").execute()).map((r) => Number(r.count))).toEqual([
          n + 2,
        ]);
      });
    });

    test("a slice of many users' calls (hundreds of statements sent together) commits every balance exactly; one refused in the middle rolls it all back", async () => {
      await withDb(kind, async (db, tmp) => {
        startSqlWorker(db, tmp.url);
        const USERS = 200;
        for (let id = 2; id <= USERS; id++) {
          await db
            .insertInto("users")
            .values({ id, username: `u${id}`, password: "x", quota: 1_000_000, group: "default" } as any)
            .execute();
          await db
            .insertInto("tokens")
            .values({
              id,
              user_id: id,
              key: `k${id}`.padEnd(48, "k"),
              name: "t",
              created_time: at,
              remain_quota: 1_000_000,
            } as any)
            .execute();
        }
        // Even users pay from a lease row; odd users' rows are gone (refunded elsewhere): charged to their balances.
        for (let id = 2; id <= USERS; id += 2)
          await db
            .insertInto("quota_holds")
            .values({
              id: `l${id}`,
              user_id: id,
              token_id: id,
              amount: 1_000,
              instance: "i",
              created_at: at,
              renewed_at: at,
            } as any)
            .execute();
        const writer = new WriteBehind(db, 0, { enabled: () => true, intervalMs: () => 0 });
        const gone: string[] = [];
        writer.onLeasesCommitted = (_spends, g) => gone.push(...g);
        const settle = (id: number, quota: number) =>
          writer.settled({ lease: { id: `l${id}` }, userId: id, tokenId: id, amount: 10 }, quota, {
            usage: { userId: id, username: `u${id}`, tokenId: id, channelId: 7, model: "m", quota, tokens: 1, at },
            log: { user_id: id, created_at: at, type: 2, content: "c", username: `u${id}`, quota },
          });
        for (let id = 2; id <= USERS; id++) settle(id, id);
        await writer.flush(true);
        expect(gone.sort()).toEqual(Array.from({ length: USERS / 2 - 1 }, (_, i) => `l${2 * i + 3}`).sort());
        const balances = async () =>
          (
            await db
              .selectFrom("users")
              .innerJoin("tokens", "tokens.user_id", "users.id")
              .select(["users.id", "users.quota", "users.used_quota", "tokens.remain_quota"])
              .where("users.id", ">=", 2)
              .orderBy("users.id")
              .execute()
          ).map((r) => [Number(r.id), Number(r.quota), Number(r.used_quota), Number(r.remain_quota)]);
        const expected = Array.from({ length: USERS - 1 }, (_, i) => {
          const id = i + 2;
          const charged = id % 2 === 1 ? id : 0;
          return [id, 1_000_000 - charged, id, 1_000_000 - charged];
        });
        expect(await balances()).toEqual(expected);
        const leases = await db.selectFrom("quota_holds").select(["id", "amount"]).orderBy("id").execute();
        expect(leases.length).toBe(USERS / 2);
        for (const l of leases) expect(Number(l.amount)).toBe(1_000 - Number(l.id.slice(1)));
        expect(await count(db, "logs")).toBe(USERS - 1);
        // A second slice, one of whose updates the database refuses (user 150's used_quota would overflow): the
        // whole slice rolls back, on the worker and on the main connection, and stays queued with its records.
        await db
          .updateTable("users")
          .set({ used_quota: "9223372036854775807" as any })
          .where("id", "=", 150)
          .execute();
        for (let id = 2; id <= USERS; id++) settle(id, 1);
        await expect(writer.flush(true)).rejects.toThrow();
        await db.updateTable("users").set({ used_quota: 150 }).where("id", "=", 150).execute();
        expect(await balances()).toEqual(expected);
        expect(await count(db, "logs")).toBe(USERS - 1);
        await writer.flush(true);
        expect(await balances()).toEqual(
          expected.map(([id, q, used, r]) => (id % 2 === 1 ? [id, q - 1, used + 1, r - 1] : [id, q, used + 1, r])),
        );
        expect(await count(db, "logs")).toBe(2 * (USERS - 1));
      });
    });

    if (kind === "postgres") {
      test("log rows go as COPY: text COPY reads specially (tab, newline, CR, backslash, \\N, \\.) and empty and boolean values read back exactly", async () => {
        await withDb(kind, async (db, tmp) => {
          const worker = startSqlWorker(db, tmp.url)!;
          const sent: boolean[] = [];
          const write = worker.write.bind(worker);
          worker.write = (statements) => (sent.push(statements.some((st) => st.copy)), write(statements));
          const writer = new WriteBehind(db, 0, { enabled: () => false, intervalMs: () => 0 });
          const texts = [
            "tab\there",
            "line\nbreak",
            "cr\rlf\r\n",
            "back\\slash \\t",
            "\\N",
            "\\.",
            "",
            "naïve 日本語 🙂",
          ];
          for (const [i, t] of texts.entries()) {
            writer.settled(
              { lease: null, userId: 1, tokenId: 1, amount: 0 },
              1,
              entry(1, {
                content: t,
                token_name: t,
                other: JSON.stringify({ t }),
                is_stream: i % 2 === 0,
                created_at: at + i,
              }),
            );
          }
          // A row without some columns (an error log): their defaults apply, as with the INSERT.
          writer.log({ user_id: 1, created_at: at + 100, type: 5, content: "failed", username: "u", quota: 0 } as any);
          await writer.flush();
          expect(sent).toEqual([true]);
          const rows = await db
            .selectFrom("logs")
            .select(["content", "token_name", "other", "is_stream", "prompt_tokens"])
            .orderBy("created_at")
            .execute();
          expect(
            rows.slice(0, texts.length).map((r) => [r.content, r.token_name, r.other, Boolean(r.is_stream)]),
          ).toEqual(texts.map((t, i) => [t, t, JSON.stringify({ t }), i % 2 === 0]));
          expect(rows[texts.length]).toMatchObject({ content: "failed", token_name: "", prompt_tokens: 0 });
        });
      });

      test("the worker sends a log statement's rows as its COPY (its INSERT text is not run), and as the INSERT when a value has no COPY text", async () => {
        await withDb(kind, async (db, tmp) => {
          const worker = startSqlWorker(db, tmp.url)!;
          const columns = ["user_id", "created_at", "type", "content", "username", "quota"];
          const copy = { sql: copyStatement("logs", columns), width: columns.length };
          // Two statements of one COPY text go as one COPY; the INSERT texts are not SQL at all.
          await worker.write([
            { sql: "not an insert", parameters: [1, at, 2, "first", "u", 5, 1, at, 2, "second", "u", 6], copy },
            { sql: "not an insert either", parameters: [1, at, 2, "third", "u", 7], copy },
            { sql: 'update "users" set "quota" = "quota" - $1 where "id" = $2', parameters: [18, 1] },
          ]);
          expect(
            (await db.selectFrom("logs").select("content").orderBy("quota").execute()).map((r) => r.content),
          ).toEqual(["first", "second", "third"]);
          expect(
            Number((await db.selectFrom("users").select("quota").where("id", "=", 1).executeTakeFirstOrThrow()).quota),
          ).toBe(1_000_000 - 18);
          // A value COPY text is not written for here (bytes): that statement runs as its INSERT.
          const insert = `insert into "logs" (${columns.map((c) => `"${c}"`).join(", ")}) values ($1, $2, $3, convert_from($4, 'UTF8'), $5, $6)`;
          await worker.write([
            { sql: insert, parameters: [1, at, 2, new TextEncoder().encode("bytes"), "u", 8], copy },
          ]);
          expect(await count(db, "logs")).toBe(4);
          // A COPY the server refuses rolls the transaction back whole.
          await expect(
            worker.write([
              { sql: "x", parameters: [1, at, 2, "kept?", "u", "not a number"], copy },
              { sql: 'update "users" set "quota" = "quota" - $1 where "id" = $2', parameters: [1, 1] },
            ]),
          ).rejects.toThrow();
          expect(await count(db, "logs")).toBe(4);
          expect(
            Number((await db.selectFrom("users").select("quota").where("id", "=", 1).executeTakeFirstOrThrow()).quota),
          ).toBe(1_000_000 - 18);
        });
      });
    }

    test("a slice that fails is rolled back whole and stays queued with its records; the one before it is committed", async () => {
      await withDb(kind, async (db, tmp) => {
        startSqlWorker(db, tmp.url);
        const writer = new WriteBehind(db, 0, { enabled: () => false, intervalMs: () => 0 });
        for (let i = 0; i < SERVER_SLICE_RECORDS; i++)
          writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 2, entry(2));
        // The second slice holds a log the database refuses.
        writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 5, entry(5, { no_such_column: 1 }));
        writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 5, entry(5));
        await expect(writer.flush()).rejects.toThrow();
        expect(workerFor(db)).not.toBeNull();
        expect(
          Number((await db.selectFrom("users").select("quota").where("id", "=", 1).executeTakeFirstOrThrow()).quota),
        ).toBe(1_000_000 - 2 * SERVER_SLICE_RECORDS);
        expect(await count(db, "logs")).toBe(SERVER_SLICE_RECORDS);
        expect(writer.unsettled("user", 1)).toBe(10);
        expect(writer.backlog()).toBeGreaterThan(0);
      });
    });

    test("a slice the worker cannot commit is written on the main connection at once; a worker that keeps failing where the main connection succeeds is retired", async () => {
      await withDb(kind, async (db, tmp) => {
        const worker = startSqlWorker(db, tmp.url)!;
        let attempts = 0;
        // As through a pooler that refuses the worker's statements: every transaction on it fails.
        worker.write = async () => {
          attempts++;
          throw new Error("prepared statement does not exist");
        };
        const writer = new WriteBehind(db, 0, { enabled: () => false, intervalMs: () => 0 });
        for (let round = 1; round <= WORKER_STRIKES; round++) {
          for (let i = 0; i < 10; i++) writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 1, entry(1));
          await writer.flush();
          expect(await count(db, "logs")).toBe(10 * round);
          expect(workerFor(db)).toBe(round < WORKER_STRIKES ? worker : null);
        }
        expect(attempts).toBe(WORKER_STRIKES);
        // Retired: the next flush does not try it again.
        writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 1, entry(1));
        await writer.flush();
        expect(attempts).toBe(WORKER_STRIKES);
        expect(
          Number((await db.selectFrom("users").select("quota").where("id", "=", 1).executeTakeFirstOrThrow()).quota),
        ).toBe(1_000_000 - (10 * WORKER_STRIKES + 1));
        expect(writer.unsettled("user", 1)).toBe(0);
      });
    });

    test("a worker that cannot reach the database gives way: the write-behind writes on the main connection, nothing lost", async () => {
      await withDb(kind, async (db, tmp) => {
        const bad = new URL(tmp.url);
        bad.pathname = "/sy_no_such_database";
        const worker = startSqlWorker(db, bad.toString())!;
        const writer = new WriteBehind(db, 0, { enabled: () => false, intervalMs: () => 0 });
        for (let i = 0; i < 300; i++) writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 1, entry(1));
        // A flush posted to the worker before it reported the failure is written on the main connection.
        await writer.flush();
        expect(worker.alive).toBe(false);
        expect(workerFor(db)).toBeNull();
        expect(
          Number((await db.selectFrom("users").select("quota").where("id", "=", 1).executeTakeFirstOrThrow()).quota),
        ).toBe(1_000_000 - 300);
        expect(await count(db, "logs")).toBe(300);
        expect(writer.unsettled("user", 1)).toBe(0);
      });
    });
  });
}
