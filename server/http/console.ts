// Serves the console, which is a single-page app: hashed assets with a year-long immutable cache, sent
// pre-compressed (brotli, else gzip, as the build wrote them) when the browser accepts it, index.html
// (no-cache) for every other GET so deep links work, and JSON 404s for unknown API, relay and asset
// paths so clients and scripts never mistake the console for an answer. Two sources: the files embedded
// in the binary (server/assets.gen.ts, written by scripts/build.ts), or a folder on disk (--console-dir /
// CONSOLE_DIR), read once at start-up into the same kind of manifest.
import { Elysia } from "elysia";
import { tryDecode } from "./paths.ts";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import type { AppDeps } from "../deps.ts";
import { errorBody, errorFormatFor } from "./errors.ts";

export interface ConsoleAsset {
  /** Path to read: /$bunfs/... inside the binary, a real path when run from source. */
  file: string;
  gz?: string;
  br?: string;
  type: string;
}
export type ConsoleManifest = Record<string, ConsoleAsset>;

async function loadEmbedded(): Promise<ConsoleManifest> {
  try {
    // The manifest is generated and gitignored; a source checkout without a build has none.
    // biome-ignore lint/suspicious/noTsIgnore: @ts-expect-error would fail once the module exists.
    // @ts-ignore: the module exists only after scripts/build.ts has run.
    const mod = await import("../assets.gen.ts");
    return usableManifest((mod.consoleAssets ?? {}) as ConsoleManifest);
  } catch {
    return {};
  }
}

/**
 * Run from source, the manifest may be older than dist/ (rebuilt since, or deleted): then it is ignored
 * rather than serving an index.html whose assets are gone. Inside the binary the files cannot go away.
 */
export function usableManifest(manifest: ConsoleManifest): ConsoleManifest {
  if (!manifest["/index.html"]) return {};
  const onDisk = Object.values(manifest)
    .flatMap((a) => [a.file, a.gz, a.br])
    .filter((f): f is string => !!f && !f.startsWith("/$bunfs/") && !f.includes("~BUN"));
  return onDisk.every((f) => existsSync(f)) ? manifest : {};
}

/** Resolved once at start-up; the binary's manifest never changes while it runs. */
export const embeddedConsole: ConsoleManifest = await loadEmbedded();

const IMMUTABLE = "public, max-age=31536000, immutable";
const RELAY_PREFIXES = ["/v1/", "/v1beta/", "/pg/", "/mj/", "/suno/", "/kling/", "/jimeng/"];
/** Paths that look like files: a miss there is a missing file, not a page of the app. */
const FILE_LIKE =
  /\.(js|mjs|css|map|png|jpe?g|gif|svg|ico|webp|avif|woff2?|ttf|otf|eot|txt|json|xml|wasm|webmanifest|gz)$/i;

/** True when a GET for this path must never be answered with index.html. */
export function isReservedPath(path: string): boolean {
  if (path === "/api" || path.startsWith("/api/")) return true;
  if (path === "/v1" || path === "/v1beta" || RELAY_PREFIXES.some((p) => path.startsWith(p))) return true;
  if (path === "/metrics" || path.startsWith("/assets/")) return true;
  return FILE_LIKE.test(path);
}

function notFound(path: string): Response {
  const format = errorFormatFor(path);
  return Response.json(errorBody(format, 404, format === "envelope" ? "not found" : `unknown route ${path}`), {
    status: 404,
  });
}

/** The encodings the request accepts (q=0 refuses one), e.g. "gzip, deflate, br;q=0.9". */
function accepted(request: Request): Set<string> {
  const out = new Set<string>();
  for (const part of (request.headers.get("accept-encoding") ?? "").toLowerCase().split(",")) {
    const [name, ...params] = part.trim().split(";");
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    if (name && !(q && Number(q.slice(2)) === 0)) out.add(name.trim());
  }
  return out;
}

/** A validator for files that are revalidated (not immutable): size and modification time. */
function etagOf(path: string): string | null {
  try {
    const s = statSync(path);
    return `W/"${s.size.toString(36)}-${Math.floor(s.mtimeMs).toString(36)}"`;
  } catch {
    return null;
  }
}

function serveAsset(request: Request, asset: ConsoleAsset, cacheControl: string): Response {
  const headers: Record<string, string> = { "content-type": asset.type, "cache-control": cacheControl };
  const etag = etagOf(asset.file);
  if (etag) {
    headers.etag = etag;
    if (request.headers.get("if-none-match") === etag) return new Response(null, { status: 304, headers });
  }
  if (asset.gz || asset.br) headers.vary = "Accept-Encoding";
  const encodings = accepted(request);
  if (asset.br && encodings.has("br")) {
    headers["content-encoding"] = "br";
    return new Response(Bun.file(asset.br), { headers });
  }
  if (asset.gz && encodings.has("gzip")) {
    headers["content-encoding"] = "gzip";
    return new Response(Bun.file(asset.gz), { headers });
  }
  return new Response(Bun.file(asset.file), { headers });
}

const NOT_BUILT_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Switchyard</title></head><body>
<h1>Switchyard</h1><p>The API is running, but this server has no console: it was started from source without a
built console. Run <code>npm start</code> (which builds it), or <code>npm run build:console</code> and start with
<code>--console-dir dist/console</code>.</p></body></html>`;

/**
 * The console from a manifest; with an empty manifest, a page explaining how to build it. Files outside
 * /assets/ (a logo, robots.txt) are cached for `rootCache`; hashed /assets/ for a year.
 */
export function embeddedConsolePlugin(manifest: ConsoleManifest = embeddedConsole, rootCache = "public, max-age=3600") {
  const index = manifest["/index.html"];
  return new Elysia().get("/*", ({ request }) => {
    const raw = new URL(request.url).pathname;
    const path = tryDecode(raw) ?? raw;
    const asset = manifest[path];
    if (asset && path !== "/index.html")
      return serveAsset(request, asset, path.startsWith("/assets/") ? IMMUTABLE : rootCache);
    if (isReservedPath(path)) return notFound(path);
    if (!index)
      return new Response(NOT_BUILT_PAGE, {
        status: 503,
        headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
      });
    return serveAsset(request, index, "no-cache");
  });
}

/** The files of a built console folder as a manifest: each file with its .br and .gz copies when present. */
export function manifestFromFolder(dir: string): ConsoleManifest {
  const root = resolve(dir);
  const walk = (d: string): string[] =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)],
    );
  const manifest: ConsoleManifest = {};
  for (const file of walk(root)) {
    if (/\.(gz|br)$/.test(file)) continue;
    const asset: ConsoleAsset = { file, type: Bun.file(file).type };
    if (existsSync(file + ".gz")) asset.gz = file + ".gz";
    if (existsSync(file + ".br")) asset.br = file + ".br";
    manifest["/" + relative(root, file).split("\\").join("/")] = asset;
  }
  return manifest;
}

/**
 * A console folder on disk (a custom build, or dist/console under `npm start`), read once at start-up:
 * served like the embedded files, except that files outside /assets/ are revalidated (no-cache, ETag).
 */
export function diskConsolePlugin(dir: string) {
  const root = resolve(dir);
  // Checked synchronously so a wrong folder stops start-up with this message, not a late rejection.
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new Error(`console folder ${root} does not exist`);
  if (!existsSync(join(root, "index.html"))) throw new Error(`console folder ${root} has no index.html`);
  return embeddedConsolePlugin(manifestFromFolder(root), "no-cache");
}

/** The console for this configuration: a folder on disk when one is configured, else the embedded files. */
export function consolePlugin(deps: AppDeps) {
  return deps.config.consoleDir ? diskConsolePlugin(deps.config.consoleDir) : embeddedConsolePlugin();
}
