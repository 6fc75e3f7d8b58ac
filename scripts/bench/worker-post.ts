// What handing the write-behind's slices to its database worker costs the event loop: a 256-row consume-log
// slice (17 columns, the values a single-user benchmark writes) plus its balance updates, posted to a worker
// thread as built (the statement objects, structured-cloned) and packed (server/infra/worker-protocol.ts),
// packing included; and a PostgreSQL slice of 1,000 users' calls (1,024 rows, ~3,000 balance and lease
// statements). Prints µs per log row, best of several rounds, and packed ÷ as built.
//   bun scripts/bench/worker-post.ts [--slices 1000] [--rounds 4]
import { packStatements, type WorkerStatement } from "../../server/infra/worker-protocol.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? d : Number(process.argv[i + 1]);
};
const SLICES = arg("slices", 1000);
const ROUNDS = arg("rounds", 4);
const ROWS = 256;

function slice(seed: number): WorkerStatement[] {
  const p: unknown[] = [];
  for (let i = 0; i < ROWS; i++) {
    const other = JSON.stringify({
      model_ratio: 1,
      group_ratio: 1,
      completion_ratio: 1,
      model_price: -1,
      cache_tokens: 0,
      cache_ratio: 1,
      cache_creation_tokens: 0,
      cache_creation_ratio: 1,
      frt: (seed + i) % 97,
      is_model_mapped: false,
      upstream_model_name: "bench-model",
      admin_info: { use_channel: ["1"] },
      request_path: "/v1/chat/completions",
    });
    p.push(
      1,
      1700000000 + i,
      2,
      "model ratio 1, completion ratio 1, group ratio 1",
      "bench",
      "bench-token",
      "bench-model",
      20,
      12,
      8,
      0,
      false,
      1,
      1,
      "default",
      "127.0.0.1",
      other,
    );
  }
  const w = 17;
  return [
    { sql: "insert into logs (…) values … (200 rows)", parameters: p.slice(0, 200 * w) },
    { sql: "insert into logs (…) values … (32 rows)", parameters: p.slice(200 * w, 232 * w) },
    { sql: "insert into logs (…) values … (16 rows)", parameters: p.slice(232 * w, 248 * w) },
    { sql: "insert into logs (…) values … (8 rows)", parameters: p.slice(248 * w) },
    {
      sql: 'update "users" set "quota" = "quota" - ?, "used_quota" = "used_quota" + ?, "request_count" = "request_count" + ? where "id" = ?',
      parameters: [5120, 5120, ROWS, 1],
    },
    {
      sql: 'update "tokens" set "remain_quota" = "remain_quota" - ?, "used_quota" = "used_quota" + ? where "id" = ?',
      parameters: [5120, 5120, 1],
    },
    { sql: 'update "channels" set "used_quota" = "used_quota" + ? where "id" = ?', parameters: [5120, 1] },
  ];
}

/** A PostgreSQL slice with 1,000 users calling: each call's lease row spent, its user and token charged. */
function manyUsers(seed: number): WorkerStatement[] {
  const out = slice(seed).slice(0, 4);
  for (let i = 0; i < 1000; i++) {
    out.push({
      sql: 'update "quota_holds" set "amount" = "amount" - $1 where "id" = $2',
      parameters: [i + seed, `lease-${i}`],
      gone: `lease-${i}`,
      orElse: [{ sql: 'update "users" set "quota" = "quota" - $1 where "id" = $2', parameters: [i, i] }],
    });
    out.push({
      sql: 'update "users" set "used_quota" = "used_quota" + $1, "request_count" = "request_count" + $2 where "id" = $3',
      parameters: [i, 1, i],
    });
    out.push({ sql: 'update "tokens" set "used_quota" = "used_quota" + $1 where "id" = $2', parameters: [i, i] });
  }
  return out;
}

const worker = new Worker(
  URL.createObjectURL(new Blob(["self.onmessage = () => {};"], { type: "application/javascript" })),
);
/** Each round posts slices built for it: a log row's `other` is a new string every call, and posting strings
 * the process has posted before measured cheaper than a gateway's first and only post of each. */
function run(make: (seed: number) => WorkerStatement[], round: number, packed: boolean): number {
  const slices = Array.from({ length: SLICES }, (_, i) => make(round * SLICES + i));
  Bun.gc(true);
  const t0 = performance.now();
  for (let i = 0; i < SLICES; i++) {
    const s = slices[i];
    worker.postMessage({ type: "write", id: i, statements: packed ? packStatements(s) : s });
  }
  return ((performance.now() - t0) * 1000) / SLICES / ROWS;
}

console.log(`µs of the event loop per log row to post a slice (best of ${ROUNDS} rounds of ${SLICES} slices):`);
for (const [name, make] of [
  ["one user, 256 rows", slice],
  ["1,000 users (PostgreSQL leases), 256 rows + 3,000 statements", manyUsers],
] as const) {
  const best = { plain: Infinity, packed: Infinity };
  for (let r = 0; r < ROUNDS; r++) {
    best.plain = Math.min(best.plain, run(make, 2 * r, false));
    await Bun.sleep(200);
    best.packed = Math.min(best.packed, run(make, 2 * r + 1, true));
    await Bun.sleep(200);
  }
  console.log(
    `  ${name}: as built ${best.plain.toFixed(3)} · packed ${best.packed.toFixed(3)} · packed ÷ as built ${(best.packed / best.plain).toFixed(2)}×`,
  );
}
worker.terminate();
