// `npm run build`: the release binary. Bundles the console, writes server/assets.gen.ts (the manifest that
// embeds every console file), then compiles server/main.ts with bytecode into one executable that needs
// no files beside it.
//   bun run scripts/build.ts                              → dist/switchyard for this machine (linux-x64 here)
//   bun run scripts/build.ts --target bun-linux-arm64     → dist/switchyard-linux-arm64 (also bun-linux-x64-musl,
//                                                           bun-linux-x64-baseline, bun-darwin-arm64, bun-windows-x64, ...)
//   --outfile PATH                                        → somewhere else
import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { buildConsole, CONSOLE_ENTRY, MANIFEST_PATH, ROOT } from "./build-console.ts";

export interface BuildOptions {
  /** A bun --target such as bun-linux-arm64; omitted → the machine running the build. */
  target?: string;
  outfile?: string;
  consoleEntry?: string;
  /** Where the bundled console files go before they are embedded. */
  consoleOut?: string;
  log?: (line: string) => void;
}

export function defaultOutfile(target?: string): string {
  if (!target) return join(ROOT, "dist", "switchyard");
  const name = `switchyard-${target.replace(/^bun-/, "")}`;
  return join(ROOT, "dist", target.includes("windows") ? name + ".exe" : name);
}

export async function buildBinary(opts: BuildOptions = {}): Promise<{ outfile: string; bytes: number }> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const outfile = resolve(opts.outfile ?? defaultOutfile(opts.target));
  const t0 = performance.now();
  const files = await buildConsole({
    entry: opts.consoleEntry ?? CONSOLE_ENTRY,
    outDir: opts.consoleOut,
    manifest: MANIFEST_PATH,
  });
  log(
    `console: ${files.length} files bundled and listed in ${relative(ROOT, MANIFEST_PATH)} (${Math.round(performance.now() - t0)} ms)`,
  );

  mkdirSync(dirname(outfile), { recursive: true });
  // --bytecode halves the start-up time; it needs --format=esm because main.ts uses top-level await.
  // Only --minify-syntax: Elysia reads each handler's and hook's source text (Function.toString) to decide
  // what to parse for a route, and whitespace or identifier minification hides `cookie` from it, so every
  // session route answers 500 (checked with Bun 1.4.5 / Elysia 1.4.30). The runtime is ~95% of the size anyway.
  // The token-counting, database-writing and SQLite-reading workers are entry points of their own: a worker's file must be listed to be embedded.
  const args = [
    process.execPath,
    "build",
    "--compile",
    "--minify-syntax",
    "--bytecode",
    "--format=esm",
    "./server/main.ts",
    "./server/relay/tokenizer-worker.ts",
    "./server/infra/sqlite-worker-thread.ts",
    "./server/infra/sql-worker-thread.ts",
    "./server/infra/sqlite-read-thread.ts",
    "--outfile",
    outfile,
  ];
  if (opts.target) args.push(`--target=${opts.target}`);
  const t1 = performance.now();
  const proc = Bun.spawn(args, { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0 || !existsSync(outfile)) throw new Error(`bun build --compile failed (exit ${code}):\n${out}\n${err}`);
  const bytes = statSync(outfile).size;
  log(
    `binary: ${relative(process.cwd(), outfile) || outfile} ${(bytes / 1024 / 1024).toFixed(1)} MB (${Math.round(performance.now() - t1)} ms)`,
  );
  return { outfile, bytes };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const value = (name: string) => {
    const i = args.findIndex((a) => a === name || a.startsWith(name + "="));
    if (i < 0) return undefined;
    return args[i].includes("=") ? args[i].slice(args[i].indexOf("=") + 1) : args[i + 1];
  };
  if (args.includes("--help")) {
    console.log("usage: bun run scripts/build.ts [--target bun-linux-arm64|bun-linux-x64-musl|...] [--outfile PATH]");
    process.exit(0);
  }
  try {
    await buildBinary({ target: value("--target"), outfile: value("--outfile") });
  } catch (e) {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  }
}
