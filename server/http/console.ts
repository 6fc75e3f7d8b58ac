// Serves the console, which is a single-page app: hashed assets with a year-long immutable cache and
// gzip when accepted, index.html (no-cache) for every other GET so deep links work, and JSON 404s for
// unknown API, relay and asset paths so clients and scripts never mistake the console for an answer.
// Two sources: the files embedded in the binary (server/assets.gen.ts, written by scripts/build.ts), or
// a folder on disk (--console-dir / CONSOLE_DIR) served with @elysiajs/static.
import { Elysia } from "elysia";
import { tryDecode } from "./paths.ts";
import { staticPlugin } from "@elysiajs/static";
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AppDeps } from "../deps.ts";
import { errorBody, errorFormatFor } from "./errors.ts";

export interface ConsoleAsset {
  /** Path to read: /$bunfs/... inside the binary, a real path when run from source. */
  file: string;
  gz?: string;
  type: string;
}
export type ConsoleManifest = Record<string, ConsoleAsset>;

async function loadEmbedded(): Promise<ConsoleManifest> {
  try {
    // The manifest is generated and gitignored; a source checkout without a build has none.
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
  const onDisk = Object.values(manifest).flatMap((a) => (a.gz ? [a.file, a.gz] : [a.file])).filter((f) => !f.startsWith("/$bunfs/") && !f.includes("~BUN"));
  return onDisk.every((f) => existsSync(f)) ? manifest : {};
}

/** Resolved once at start-up; the binary's manifest never changes while it runs. */
export const embeddedConsole: ConsoleManifest = await loadEmbedded();

const IMMUTABLE = "public, max-age=31536000, immutable";
const RELAY_PREFIXES = ["/v1/", "/v1beta/", "/pg/", "/mj/", "/suno/", "/kling/", "/jimeng/"];
/** Paths that look like files: a miss there is a missing file, not a page of the app. */
const FILE_LIKE = /\.(js|mjs|css|map|png|jpe?g|gif|svg|ico|webp|avif|woff2?|ttf|otf|eot|txt|json|xml|wasm|webmanifest|gz)$/i;

/** True when a GET for this path must never be answered with index.html. */
export function isReservedPath(path: string): boolean {
  if (path === "/api" || path.startsWith("/api/")) return true;
  if (path === "/v1" || path === "/v1beta" || RELAY_PREFIXES.some((p) => path.startsWith(p))) return true;
  if (path === "/metrics" || path.startsWith("/assets/")) return true;
  return FILE_LIKE.test(path);
}

function notFound(path: string): Response {
  const format = errorFormatFor(path);
  return Response.json(errorBody(format, 404, format === "envelope" ? "not found" : `unknown route ${path}`), { status: 404 });
}

function acceptsGzip(request: Request): boolean {
  return /\bgzip\b/i.test(request.headers.get("accept-encoding") ?? "");
}

function serveAsset(request: Request, asset: ConsoleAsset, cacheControl: string): Response {
  const headers: Record<string, string> = { "content-type": asset.type, "cache-control": cacheControl };
  if (asset.gz) headers.vary = "Accept-Encoding";
  if (asset.gz && acceptsGzip(request)) {
    headers["content-encoding"] = "gzip";
    return new Response(Bun.file(asset.gz), { headers });
  }
  return new Response(Bun.file(asset.file), { headers });
}

const NOT_BUILT_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Switchyard</title></head><body>
<h1>Switchyard</h1><p>The API is running, but this server has no console: it was started from source without a
built console. Run <code>npm start</code> (which builds it), or <code>npm run build:console</code> and start with
<code>--console-dir dist/console</code>.</p></body></html>`;

/** The console from the embedded manifest; with an empty manifest, a page explaining how to build it. */
export function embeddedConsolePlugin(manifest: ConsoleManifest = embeddedConsole) {
  const index = manifest["/index.html"];
  return new Elysia().get("/*", ({ request }) => {
    const raw = new URL(request.url).pathname;
    const path = tryDecode(raw) ?? raw;
    const asset = manifest[path];
    if (asset && path !== "/index.html") return serveAsset(request, asset, path.startsWith("/assets/") ? IMMUTABLE : "public, max-age=3600");
    if (isReservedPath(path)) return notFound(path);
    if (!index) return new Response(NOT_BUILT_PAGE, { status: 503, headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } });
    return serveAsset(request, index, "no-cache");
  });
}

/**
 * A console folder on disk (a custom build, or dist/console under `npm start`). Its files are registered
 * as exact routes by @elysiajs/static (ETag revalidation; /assets/ immutable because our build hashes
 * those names); the fallback below gives index.html to every other page path.
 */
export function diskConsolePlugin(dir: string): Promise<Elysia> {
  const root = resolve(dir);
  const indexPath = join(root, "index.html");
  // Checked synchronously so a wrong folder stops start-up with this message, not a late rejection.
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new Error(`console folder ${root} does not exist`);
  if (!existsSync(indexPath)) throw new Error(`console folder ${root} has no index.html`);
  return buildDiskConsole(root, indexPath);
}

// The static plugins are awaited here and handed over as one promise: Elysia 1.4 loops forever when a
// plugin that itself holds two pending plugins is mounted on another instance.
async function buildDiskConsole(root: string, indexPath: string): Promise<Elysia> {
  const app = new Elysia();
  if (existsSync(join(root, "assets"))) {
    app.use(await staticPlugin({
      assets: join(root, "assets"), prefix: "/assets", alwaysStatic: true, silent: true, ignorePatterns: [/\.gz$/],
      headers: { "Cache-Control": IMMUTABLE },
    }));
  }
  app.use(await staticPlugin({
    assets: root, prefix: "", alwaysStatic: true, silent: true, indexHTML: false,
    // index.html is served by the fallback (no-cache); /assets/ by the instance above.
    ignorePatterns: [/[\\/]index\.html$/, new RegExp(`^${escapeRegExp(join(root, "assets"))}[\\\\/]`), /\.gz$/],
    headers: { "Cache-Control": "no-cache" },
  }));
  return app.get("/*", ({ request }) => {
    const path = new URL(request.url).pathname;
    if (isReservedPath(path)) return notFound(path);
    return new Response(Bun.file(indexPath), { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" } });
  }) as unknown as Elysia;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The console for this configuration: a folder on disk when one is configured, else the embedded files. */
export function consolePlugin(deps: AppDeps) {
  return deps.config.consoleDir ? diskConsolePlugin(deps.config.consoleDir) : embeddedConsolePlugin();
}
