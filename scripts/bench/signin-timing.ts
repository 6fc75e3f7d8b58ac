// How long a failed sign-in takes for a name nobody holds against one with a wrong password: in-process
// (app.handle(), no sockets) on a fresh SQLite database, the two kinds interleaved so the machine's load falls on
// both alike. Prints the median of each and their ratio; near 1 means the timing does not tell them apart.
//
//   bun scripts/bench/signin-timing.ts   (N=rounds, default 200)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../server/config.ts";
import { buildDeps, closeDeps } from "../../server/bootstrap.ts";
import { createApp } from "../../server/app.ts";

const rounds = Number(process.env.N ?? 200);
const dir = mkdtempSync(join(tmpdir(), "sy-signin-"));
// Throttling and per-address limits off: every attempt must reach the password check.
const config = loadConfig({
  DATA_DIR: dir,
  SESSION_SECRET: "bench",
  PORT: "0",
  NODE_ENV: "production",
  SIGNIN_MAX_FAILURES: "0",
  RATE_LIMIT_ENABLED: "false",
});
const deps = await buildDeps(config);
const app = createApp(deps);
const post = (path: string, body: unknown) =>
  app.handle(
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
await post("/api/setup", { username: "root", password: "benchpass123", confirmPassword: "benchpass123" });

async function attempt(username: string): Promise<number> {
  const t0 = performance.now();
  const r = await post("/api/user/login", { username, password: "not-the-password" });
  await r.arrayBuffer();
  if (r.status !== 400) throw new Error(`expected a refused sign-in, got ${r.status}`);
  return performance.now() - t0;
}

for (let i = 0; i < 10; i++) await Promise.all([attempt("root"), attempt("nobody")]);
const wrong: number[] = [];
const unknown: number[] = [];
for (let i = 0; i < rounds; i++) {
  if (i % 2) unknown.push(await attempt(`nobody${i}`)), wrong.push(await attempt("root"));
  else wrong.push(await attempt("root")), unknown.push(await attempt(`nobody${i}`));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const [w, u] = [median(wrong), median(unknown)];
console.log(
  `wrong password: median ${w.toFixed(2)} ms; unknown name: median ${u.toFixed(2)} ms; unknown / wrong = ${(u / w).toFixed(2)} (${rounds} each)`,
);
await closeDeps(deps);
rmSync(dir, { recursive: true, force: true });
