// The write-behind's transactions cross to the database worker packed (each SQL text once, parameters in one
// flat list): what the worker unpacks is exactly what the main thread built, statement for statement.
import { expect, test } from "bun:test";
import { packStatements, unpackStatements, type WorkerStatement } from "../../server/infra/worker-protocol.ts";

const U = 'update "users" set "quota" = "quota" + $1 where "id" = $2';
const T = 'update "tokens" set "remain_quota" = "remain_quota" + $1 where "id" = $2';

test("pack → structured clone → unpack gives back every statement, its orElse and gone tag, and nothing else", () => {
  const list: WorkerStatement[] = [
    {
      sql: "insert into logs (a, b, c) values (?, ?, ?), (?, ?, ?)",
      parameters: [1, "x", null, 2, "line\nbreak ☃", true],
    },
    { sql: U, parameters: [-5, 1] },
    { sql: T, parameters: [], orElse: [] },
    {
      sql: 'update "quota_holds" set "amount" = "amount" - $1 where "id" = $2',
      parameters: [7, "lease-a"],
      gone: "lease-a",
      orElse: [
        { sql: T, parameters: [-7, 3] },
        { sql: U, parameters: [-7, 4] },
      ],
    },
    { sql: U, parameters: [0, 9], gone: "" },
    {
      sql: "update quota_data set count = count + 1",
      parameters: [],
      orElse: [{ sql: "insert into quota_data (n) values (?)", parameters: [Number.MAX_SAFE_INTEGER] }],
    },
  ];
  const packed = structuredClone(packStatements(list));
  // Each text crosses once however many statements use it.
  expect(packed.texts.filter((t) => t === U).length).toBe(1);
  expect(packed.texts.length).toBe(6);
  const back = unpackStatements(packed);
  // An empty orElse carries nothing, so it comes back absent, which the workers treat alike.
  expect(back).toEqual(list.map((s) => (s.orElse?.length === 0 ? { sql: s.sql, parameters: s.parameters } : s)));
  expect(back[4].gone).toBe("");
  expect("gone" in back[1]).toBe(false);
  expect(unpackStatements(packStatements([]))).toEqual([]);
});

test("a statement's COPY form (PostgreSQL's log rows) crosses with it; statements without one come back without", () => {
  const copy = { sql: 'copy "logs" ("a", "b") from stdin', width: 2 };
  const list: WorkerStatement[] = [
    { sql: "insert into logs (a, b) values ($1, $2), ($3, $4)", parameters: [1, "x", 2, "y"], copy },
    { sql: "insert into logs (a, b) values ($1, $2)", parameters: [3, "z"], copy },
    { sql: U, parameters: [-5, 1] },
  ];
  const back = unpackStatements(structuredClone(packStatements(list)));
  expect(back).toEqual(list);
  expect("copy" in back[2]).toBe(false);
});

test("a slice's worth of statements (3,000, most sharing three texts) round-trips in order", () => {
  const list: WorkerStatement[] = [];
  for (let i = 0; i < 1000; i++) {
    list.push({ sql: T, parameters: [-i, i] });
    list.push({ sql: U, parameters: [i, i, -i, i] });
    list.push({
      sql: 'update "quota_holds" set "amount" = "amount" - $1 where "id" = $2',
      parameters: [i, `lease-${i}`],
      gone: `lease-${i}`,
      orElse: [{ sql: U, parameters: [-i, i] }],
    });
  }
  const packed = structuredClone(packStatements(list));
  expect(packed.texts.length).toBe(3);
  expect(unpackStatements(packed)).toEqual(list);
});

test("every kind of parameter crosses as it was: numbers, strings short and long, null, booleans and the rest", () => {
  const long = "x".repeat(65) + "☃";
  const bytes = new Uint8Array([1, 2, 3]);
  const list: WorkerStatement[] = [
    {
      sql: "insert into t values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      parameters: [0, -0, 1.5, -7, Number.MAX_SAFE_INTEGER, NaN, "", "short", long, null, true, false],
    },
    {
      sql: "insert into u values (?, ?, ?, ?)",
      parameters: [12345678901234567890n, bytes, undefined, "short"],
      orElse: [{ sql: "x", parameters: [long, "short", 3] }],
    },
  ];
  const packed = structuredClone(packStatements(list));
  const back = unpackStatements(packed);
  expect(back).toEqual(list);
  expect(Object.is(back[0].parameters[1], -0)).toBe(true);
  expect(back[1].parameters[0]).toBe(12345678901234567890n);
  expect(back[1].parameters[1]).toEqual(bytes);
  expect(back[1].parameters).toHaveLength(4);
  // A short string crosses once however often it occurs; a long one each time.
  expect(packed.strings.filter((s) => s === "short")).toHaveLength(1);
  expect(packed.strings.filter((s) => s === long)).toHaveLength(2);
});

test("a log slice's repeated columns (content, username, token, model, group, IP) cross once, each row's own values in order", () => {
  const rows = 256;
  const parameters: unknown[] = [];
  for (let i = 0; i < rows; i++) {
    parameters.push(
      i,
      "model ratio 1, completion ratio 1, group ratio 1",
      "alice",
      "tok",
      "gpt-4o",
      "default",
      "127.0.0.1",
      JSON.stringify({ frt: i, admin_info: { use_channel: ["1"] } }),
      i % 2 === 0,
    );
  }
  const list: WorkerStatement[] = [{ sql: "insert into logs values ...", parameters }];
  const packed = structuredClone(packStatements(list));
  expect(packed.strings.length).toBe(6 + rows);
  expect(unpackStatements(packed)).toEqual(list);
});
