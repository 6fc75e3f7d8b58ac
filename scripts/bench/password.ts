// Milliseconds per password hash and per verify at candidate bcrypt costs, and for the argon2id opt-in, on this
// machine. A sign-in pays one verify; the cost in server/modules/user/password.ts is chosen from these figures.
//
//   bun scripts/bench/password.ts   (N=hashes per candidate, default 8)
import { ARGON2ID, BCRYPT_COST } from "../../server/modules/user/password.ts";

const n = Number(process.env.N ?? 8);
type Opts = Parameters<typeof Bun.password.hash>[1];

async function measure(label: string, opts: Opts) {
  const hashes: string[] = [];
  let t = performance.now();
  for (let i = 0; i < n; i++) hashes.push(await Bun.password.hash(`bench-password-${i}`, opts));
  const hashMs = (performance.now() - t) / n;
  t = performance.now();
  for (let i = 0; i < n; i++)
    if (!(await Bun.password.verify(`bench-password-${i}`, hashes[i]))) throw new Error("verify failed");
  const verifyMs = (performance.now() - t) / n;
  console.log(
    `${label.padEnd(22)} hash ${hashMs.toFixed(1).padStart(7)} ms   verify ${verifyMs.toFixed(1).padStart(7)} ms`,
  );
}

console.log(`${n} hashes each; the configured bcrypt cost is ${BCRYPT_COST}`);
for (const cost of [10, 11, 12, 13]) await measure(`bcrypt cost ${cost}`, { algorithm: "bcrypt", cost });
await measure("argon2id 19 MiB t=2", ARGON2ID);
