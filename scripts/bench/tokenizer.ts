// Token-counting benchmark: the gateway's encoder (server/relay/bpe.ts, through tokenizer.ts) against the
// tokenizers on npm, o200k_base, on normal text and on pathological text.
//
//   bun scripts/bench/tokenizer.ts [--timeout 20] [--only name,name] [--from DIR]
//
// Candidates that are not installed are listed as such. To measure them all without touching this
// checkout, install them in another folder and name it with --from:
//   (cd /tmp/tok && npm install tiktoken @dqbd/tiktoken gpt-tokenizer ai-tokenizer @microsoft/tiktokenizer kitoken)
//   bun scripts/bench/tokenizer.ts --from /tmp/tok
// Each candidate runs in a child process per case, so a quadratic one is stopped after --timeout seconds
// (shown as "> 20 s") and its larger cases are skipped. Normal text: MB/s of UTF-8 (best of several runs
// of at least 300 ms) and whether the count equals js-tiktoken's. Pathological text: one run, in ms.
// "countTokensNow" is the synchronous API with its cap of SYNC_STEPS (the rest is extrapolated, so its
// count of the code corpus differs from the exact one).
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};

type Count = (text: string) => number;
/** Where the optional candidates are resolved from. */
const FROM = resolve(flag("--from") ?? ROOT);
const optional = (spec: string) => import(Bun.resolveSync(spec, FROM));
const rankFile = (name: string) =>
  require(`js-tiktoken/ranks/${name}`) as {
    pat_str: string;
    special_tokens: Record<string, number>;
    bpe_ranks: string;
  };

/** A .tiktoken file ("<base64 token> <rank>" lines) for the libraries that read one. */
function tiktokenFile(): string {
  const path = join(mkdtempSync(join(tmpdir(), "tokbench-")), "o200k_base.tiktoken");
  const lines: string[] = [];
  for (const line of rankFile("o200k_base").bpe_ranks.split("\n")) {
    const parts = line.split(" ");
    for (let i = 2; i < parts.length; i++) lines.push(`${parts[i]} ${Number(parts[1]) + i - 2}`);
  }
  writeFileSync(path, lines.join("\n") + "\n");
  return path;
}

const CANDIDATES: Record<string, { pkg: string; load(): Promise<Count> }> = {
  "switchyard bpe.ts": {
    pkg: "(this repository)",
    load: async () => {
      const { o200kBase } = await import("../../server/relay/tokenizer.ts");
      const bpe = o200kBase();
      return (t) => bpe.count(t);
    },
  },
  "countTokensNow (capped)": {
    pkg: "(this repository)",
    load: async () => {
      // countTextsNow is countTokensNow without its memo of the last text (which would time a cache hit).
      const { countTextsNow, o200kBase } = await import("../../server/relay/tokenizer.ts");
      o200kBase();
      return (t) => countTextsNow([t]);
    },
  },
  "js-tiktoken": {
    pkg: "js-tiktoken",
    load: async () => {
      const { Tiktoken } = await import("js-tiktoken/lite");
      const enc = new Tiktoken(rankFile("o200k_base"));
      return (t) => enc.encode(t, [], []).length;
    },
  },
  "tiktoken (WASM)": {
    pkg: "tiktoken",
    load: async () => {
      const { get_encoding } = await optional("tiktoken");
      const enc = get_encoding("o200k_base");
      return (t) => enc.encode_ordinary(t).length;
    },
  },
  "@dqbd/tiktoken (WASM)": {
    pkg: "@dqbd/tiktoken",
    load: async () => {
      const { get_encoding } = await optional("@dqbd/tiktoken");
      const enc = get_encoding("o200k_base");
      return (t) => enc.encode_ordinary(t).length;
    },
  },
  "gpt-tokenizer": {
    pkg: "gpt-tokenizer",
    load: async () => {
      const m = await optional("gpt-tokenizer/encoding/o200k_base");
      return (t) => m.encode(t, { disallowedSpecial: new Set() }).length;
    },
  },
  "ai-tokenizer": {
    pkg: "ai-tokenizer",
    load: async () => {
      const Tokenizer = (await optional("ai-tokenizer")).default;
      const encoding = await optional("ai-tokenizer/encoding/o200k_base");
      const tok = new Tokenizer(encoding);
      return (t) => tok.count(t);
    },
  },
  "@microsoft/tiktokenizer": {
    pkg: "@microsoft/tiktokenizer",
    load: async () => {
      const { createTokenizer } = await optional("@microsoft/tiktokenizer");
      const r = rankFile("o200k_base");
      const tok = createTokenizer(tiktokenFile(), new Map(Object.entries(r.special_tokens)), r.pat_str);
      return (t) => tok.encode(t, []).length;
    },
  },
  "kitoken (WASM)": {
    pkg: "kitoken",
    load: async () => {
      const { Kitoken } = await optional("kitoken/node");
      const tok = Kitoken.from_tiktoken(readFileSync(tiktokenFile()));
      return (t) => tok.encode(t, false).length;
    },
  },
};

/** The texts, made once by the parent (files may change while the benchmark runs) and read by every child. */
const CORPUS = flag("--corpus") ?? mkdtempSync(join(tmpdir(), "tokbench-corpus-"));

function text(name: string): string {
  return readFileSync(join(CORPUS, encodeURIComponent(name)), "utf8");
}

function makeText(name: string): string {
  const random = (n: number, alphabet: string) => {
    let seed = 7;
    let s = "";
    for (let i = 0; i < n; i++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      s += alphabet[seed % alphabet.length];
    }
    return s;
  };
  const code = () =>
    readdirSync(join(ROOT, "server/relay"))
      .filter((f) => f.endsWith(".ts"))
      .sort()
      .map((f) => readFileSync(join(ROOT, "server/relay", f), "utf8"))
      .join("\n");
  const docs = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((e) =>
        e.isDirectory()
          ? docs(join(dir, e.name))
          : e.name.endsWith(".md")
            ? [readFileSync(join(dir, e.name), "utf8")]
            : [],
      );
  const cases: Record<string, () => string> = {
    "English (README.md, docs/)": () =>
      [readFileSync(join(ROOT, "README.md"), "utf8"), ...docs(join(ROOT, "docs"))].join("\n\n"),
    "Chinese (console/i18n/zh.ts)": () => readFileSync(join(ROOT, "console/i18n/zh.ts"), "utf8"),
    "code (server/relay/*.ts)": code,
    "'a' x 1,000": () => "a".repeat(1000),
    "'a' x 16,000": () => "a".repeat(16_000),
    "'a' x 100,000": () => "a".repeat(100_000),
    "'a' x 3 MiB": () => "a".repeat(3 * 1024 * 1024),
    "'中' x 100,000": () => "中".repeat(100_000),
    "base64 x 1 MiB": () => random(1024 * 1024, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
    "a-z run x 100,000": () => random(100_000, "abcdefghijklmnopqrstuvwxyz"),
  };
  return cases[name]!();
}

const NORMAL = ["English (README.md, docs/)", "Chinese (console/i18n/zh.ts)", "code (server/relay/*.ts)"];
/** Growing sizes of one kind: after a timeout the larger ones are skipped. */
const PATHOLOGICAL = [
  ["'a' x 1,000", "'a' x 16,000", "'a' x 100,000", "'a' x 3 MiB"],
  ["'中' x 100,000"],
  ["base64 x 1 MiB"],
  ["a-z run x 100,000"],
];

interface Result {
  loadMs?: number;
  ms?: number;
  mbps?: number;
  tokens?: number;
  error?: string;
}

async function child(candidate: string, cases: string[], normal: boolean): Promise<void> {
  const t0 = performance.now();
  let count: Count;
  try {
    count = await CANDIDATES[candidate]!.load();
  } catch (e) {
    console.log(JSON.stringify({ error: String((e as Error).message ?? e).split("\n")[0] }));
    return;
  }
  const loadMs = performance.now() - t0;
  for (const name of cases) {
    const t = text(name);
    if (!normal) {
      const s = performance.now();
      const tokens = count(t);
      console.log(JSON.stringify({ loadMs, ms: performance.now() - s, tokens }));
      continue;
    }
    const bytes = Buffer.byteLength(t);
    const tokens = count(t);
    let best = Infinity;
    for (let round = 0; round < 5; round++) {
      let runs = 0;
      const s = performance.now();
      while (performance.now() - s < 300) {
        count(t);
        runs++;
      }
      best = Math.min(best, (performance.now() - s) / runs);
    }
    console.log(JSON.stringify({ loadMs, ms: best, mbps: bytes / 1e6 / (best / 1000), tokens }));
  }
}

async function run(candidate: string, cases: string[], normal: boolean, timeoutS: number): Promise<(Result | null)[]> {
  const proc = Bun.spawn(
    [
      process.execPath,
      import.meta.path,
      "--child",
      candidate,
      "--cases",
      JSON.stringify(cases),
      "--from",
      FROM,
      "--corpus",
      CORPUS,
      ...(normal ? ["--normal"] : []),
    ],
    {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const timer = setTimeout(() => proc.kill(), timeoutS * 1000 * (normal ? 3 : 1));
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  clearTimeout(timer);
  const lines = out
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Result);
  if (lines[0]?.error) return cases.map(() => lines[0]!);
  return cases.map((_, i) => lines[i] ?? null);
}

function installed(pkg: string): boolean {
  if (pkg.startsWith("(")) return true;
  try {
    Bun.resolveSync(`${pkg}/package.json`, FROM);
    return true;
  } catch {
    return false;
  }
}

async function main() {
  const timeoutS = Number(flag("--timeout") ?? 20);
  const only = flag("--only")?.split(",");
  const names = Object.keys(CANDIDATES).filter((n) => !only || only.includes(n));
  for (const name of [...NORMAL, ...PATHOLOGICAL.flat()])
    writeFileSync(join(CORPUS, encodeURIComponent(name)), makeText(name));
  const reference = (await run("js-tiktoken", NORMAL, false, 60)).map((r) => r?.tokens);
  const rows: string[][] = [];
  for (const name of names) {
    const { pkg } = CANDIDATES[name]!;
    if (!installed(pkg)) {
      rows.push([name, `not installed (${pkg}; see --from)`]);
      continue;
    }
    const row = [name];
    const normal = await run(name, NORMAL, true, timeoutS);
    const loadMs = normal.find((r) => r?.loadMs !== undefined)?.loadMs;
    row.push(normal[0]?.error ? `failed: ${normal[0].error}` : loadMs !== undefined ? `${Math.round(loadMs)}` : "?");
    normal.forEach((r, i) => {
      if (!r || r.error) return row.push("-");
      const exact = r.tokens === reference[i] ? "" : ` (≠ ${r.tokens} vs ${reference[i]})`;
      row.push(`${r.mbps!.toFixed(1)} MB/s${exact}`);
    });
    if (normal[0]?.error) {
      rows.push(row);
      continue;
    }
    for (const group of PATHOLOGICAL) {
      let stopped = false;
      for (const c of group) {
        if (stopped) {
          row.push("skipped");
          continue;
        }
        const [r] = await run(name, [c], false, timeoutS);
        if (!r || r.error) {
          row.push(`> ${timeoutS} s`);
          stopped = true;
        } else row.push(r.ms! < 10 ? `${r.ms!.toFixed(1)} ms` : `${Math.round(r.ms!)} ms`);
      }
    }
    rows.push(row);
    console.error(`${name} done`);
  }
  const header = ["candidate", "load ms", ...NORMAL, ...PATHOLOGICAL.flat()];
  console.log(`| ${header.join(" | ")} |`);
  console.log(`|${header.map(() => "---").join("|")}|`);
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
  rmSync(CORPUS, { recursive: true, force: true });
}

if (args.includes("--child")) await child(flag("--child")!, JSON.parse(flag("--cases")!), args.includes("--normal"));
else await main();
