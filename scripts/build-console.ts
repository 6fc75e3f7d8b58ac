// Bundles the React console for production: minified, code-split, production React, absolute asset
// URLs (so deep links such as /channel/edit/3 load /assets/... and not channel/edit/assets/...),
// text files pre-compressed with brotli and gzip because Bun.serve compresses nothing by itself. Arco is
// imported per component (scripts/arco-imports.ts), and every stylesheet must reach index.html: Bun does
// not load the CSS of a lazily imported chunk, so a page importing its own .css is refused here.
// `bun run scripts/build-console.ts [--out DIR]` builds console/index.html into dist/console.
// scripts/build.ts also asks for server/assets.gen.ts, the manifest that embeds the files in the binary.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { brotliCompressSync, constants as zlib } from "node:zlib";
import { arcoImportsPlugin } from "./arco-imports.ts";

export const ROOT = resolve(import.meta.dir, "..");
export const CONSOLE_SRC = join(ROOT, "console");
export const CONSOLE_ENTRY = join(CONSOLE_SRC, "index.html");
export const CONSOLE_OUT = join(ROOT, "dist", "console");
export const MANIFEST_PATH = join(ROOT, "server", "assets.gen.ts");

/** Compressing tiny or already-compressed files costs more on the wire (headers) than it saves. */
const COMPRESSIBLE = /\.(js|mjs|css|html|svg|json|txt|map|wasm)$/i;
const MIN_GZIP_BYTES = 512;

export interface BuiltFile {
  /** URL path, e.g. "/assets/index-e208bq66.js" */
  url: string;
  path: string;
  type: string;
  size: number;
  gz?: { path: string; size: number };
  br?: { path: string; size: number };
}

export interface BuildConsoleOptions {
  entry?: string;
  outDir?: string;
  /** Where to write the TypeScript manifest that embeds the files; omitted → no manifest. */
  manifest?: string;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );
}

export async function buildConsole(opts: BuildConsoleOptions = {}): Promise<BuiltFile[]> {
  const entry = resolve(opts.entry ?? CONSOLE_ENTRY);
  const outDir = resolve(opts.outDir ?? CONSOLE_OUT);
  if (!existsSync(entry)) throw new Error(`console entry ${entry} does not exist`);
  rmSync(outDir, { recursive: true, force: true });
  const result = await Bun.build({
    entrypoints: [entry],
    outdir: outDir,
    target: "browser",
    minify: true,
    splitting: true,
    publicPath: "/",
    plugins: [arcoImportsPlugin(dirname(entry))],
    define: { "process.env.NODE_ENV": '"production"' },
    naming: { entry: "[name].[ext]", chunk: "assets/[name]-[hash].[ext]", asset: "assets/[name]-[hash].[ext]" },
  });
  if (!result.success) {
    throw new Error(`console build failed:\n${result.logs.map((l) => String(l)).join("\n")}`);
  }
  if (!existsSync(join(outDir, "index.html"))) throw new Error(`console build produced no index.html in ${outDir}`);
  const html = await Bun.file(join(outDir, "index.html")).text();
  const orphans = result.outputs
    .map((o) => relative(outDir, o.path).split("\\").join("/"))
    .filter((p) => p.endsWith(".css") && !html.includes(`/${p}`));
  if (orphans.length) {
    throw new Error(
      `console build: ${orphans.join(", ")} would never be loaded (CSS imported by a lazily loaded page); import it from console/main.tsx`,
    );
  }

  const files: BuiltFile[] = [];
  for (const path of walk(outDir).sort()) {
    const data = await Bun.file(path).bytes();
    const file: BuiltFile = {
      url: "/" + relative(outDir, path).split("\\").join("/"),
      path,
      type: Bun.file(path).type,
      size: data.length,
    };
    if (COMPRESSIBLE.test(path) && data.length >= MIN_GZIP_BYTES) {
      const gz = Bun.gzipSync(data, { level: 9 });
      if (gz.length < data.length) {
        await Bun.write(path + ".gz", gz);
        file.gz = { path: path + ".gz", size: gz.length };
      }
      const br = brotliCompressSync(data, {
        params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: data.length },
      });
      if (br.length < data.length) {
        await Bun.write(path + ".br", br);
        file.br = { path: path + ".br", size: br.length };
      }
    }
    files.push(file);
  }
  if (opts.manifest) writeManifest(files, resolve(opts.manifest));
  return files;
}

/**
 * The manifest imports every file `with { type: "file" }`: `bun build --compile` then embeds the bytes
 * and the import yields a /$bunfs path; run from source, it yields the path on disk.
 */
export function writeManifest(files: BuiltFile[], manifestPath: string): void {
  const dir = dirname(manifestPath);
  const spec = (p: string) => {
    const r = relative(dir, p).split("\\").join("/");
    return JSON.stringify(r.startsWith(".") ? r : "./" + r);
  };
  const imports: string[] = [];
  const entries: string[] = [];
  files.forEach((f, i) => {
    imports.push(`import f${i} from ${spec(f.path)} with { type: "file" };`);
    if (f.gz) imports.push(`import f${i}gz from ${spec(f.gz.path)} with { type: "file" };`);
    if (f.br) imports.push(`import f${i}br from ${spec(f.br.path)} with { type: "file" };`);
    entries.push(
      `  ${JSON.stringify(f.url)}: { file: f${i}, ${f.gz ? `gz: f${i}gz, ` : ""}${f.br ? `br: f${i}br, ` : ""}type: ${JSON.stringify(f.type)} },`,
    );
  });
  const text = [
    "// @ts-nocheck: generated by scripts/build-console.ts; tsc would type the .html import as an HTML bundle.",
    ...imports,
    "",
    "export const consoleAssets: Record<string, { file: string; gz?: string; br?: string; type: string }> = {",
    ...entries,
    "};",
    "",
  ].join("\n");
  mkdirSync(dir, { recursive: true });
  writeFileSync(manifestPath, text);
}

/** Newest modification time (ms) of the console sources, or 0 when there are none. */
export function newestSourceMtime(srcDir = CONSOLE_SRC): number {
  if (!existsSync(srcDir)) return 0;
  return Math.max(0, ...walk(srcDir).map((p) => statSync(p).mtimeMs));
}

/** True when the built console is missing or older than any console source file. */
export function consoleIsStale(outDir = CONSOLE_OUT, srcDir = CONSOLE_SRC): boolean {
  const index = join(outDir, "index.html");
  if (!existsSync(index)) return true;
  return newestSourceMtime(srcDir) > statSync(index).mtimeMs;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const outFlag = args.indexOf("--out");
  const outDir = outFlag >= 0 ? args[outFlag + 1] : CONSOLE_OUT;
  const started = performance.now();
  const files = await buildConsole({ outDir });
  const kib = (n: number) => (n / 1024).toFixed(1) + " KiB";
  for (const f of files)
    console.log(
      `  ${f.url.padEnd(40)} ${kib(f.size).padStart(11)}${f.gz ? `  gzip ${kib(f.gz.size)}` : ""}${f.br ? `  br ${kib(f.br.size)}` : ""}`,
    );
  console.log(
    `console built into ${relative(process.cwd(), outDir) || "."} in ${Math.round(performance.now() - started)} ms`,
  );
}
