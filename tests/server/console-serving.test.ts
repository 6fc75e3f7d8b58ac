// The console as served by the gateway: the embedded manifest (what the binary uses) and a folder on disk
// (--console-dir), each over a small placeholder console built by the real build script.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliDecompressSync } from "node:zlib";
import { buildConsole, consoleIsStale, type BuiltFile } from "../../scripts/build-console.ts";
import {
  embeddedConsolePlugin,
  isReservedPath,
  usableManifest,
  type ConsoleManifest,
} from "../../server/http/console.ts";
import { testContext, type TestContext } from "../helpers/app.ts";

let work: string;
let out: string;
let files: BuiltFile[];
let manifest: ConsoleManifest;

/** A console shaped like the real one: HTML entry, TSX, CSS, a lazily loaded chunk. */
export function writePlaceholderConsole(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "index.html"),
    `<!doctype html><html><head><meta charset="utf-8"><title>Placeholder</title>
<link rel="stylesheet" href="./style.css"></head><body><div id="root"></div><script type="module" src="./main.tsx"></script></body></html>`,
  );
  writeFileSync(
    join(dir, "style.css"),
    `body { color: rgb(22, 93, 255); }\n`
      + Array.from({ length: 60 }, (_, i) => `.c${i} { margin: ${i}px; }`).join("\n"),
  );
  writeFileSync(
    join(dir, "main.tsx"),
    `const root = document.getElementById("root")!;
root.textContent = "placeholder console at " + location.pathname + (process.env.NODE_ENV === "production" ? " (production)" : " (development)");
import("./lazy.ts").then((m) => m.mark(root));`,
  );
  writeFileSync(
    join(dir, "lazy.ts"),
    `export function mark(el: HTMLElement) { el.dataset.lazy = "loaded"; console.log(${JSON.stringify("padding ".repeat(100))}); }`,
  );
  return join(dir, "index.html");
}

function byUrl(prefix: string, ext: string): BuiltFile {
  const f = files.find((x) => x.url.startsWith(prefix) && x.url.endsWith(ext));
  if (!f) throw new Error(`no built file ${prefix}*${ext}`);
  return f;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "sy-console-"));
  const entry = writePlaceholderConsole(join(work, "src"));
  out = join(work, "out");
  files = await buildConsole({ entry, outDir: out, manifest: join(work, "assets.gen.ts") });
  manifest = (await import(join(work, "assets.gen.ts"))).consoleAssets;
});

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("console build", () => {
  test("bundles minified production code with absolute asset URLs, code splitting and gzip copies", async () => {
    const html = await Bun.file(join(out, "index.html")).text();
    expect(html).toMatch(/src="\/assets\/index-[a-z0-9]+\.js"/);
    expect(html).toMatch(/href="\/assets\/index-[a-z0-9]+\.css"/);
    const js = await Bun.file(byUrl("/assets/index-", ".js").path).text();
    expect(js).toContain("(production)");
    expect(js).not.toContain("(development)");
    expect(js).not.toContain("process.env");
    // The lazy import became its own chunk.
    expect(files.filter((f) => f.url.endsWith(".js")).length).toBe(2);
    const css = byUrl("/assets/index-", ".css");
    expect(css.gz).toBeDefined();
    expect(Bun.gunzipSync(await Bun.file(css.gz!.path).bytes())).toEqual(await Bun.file(css.path).bytes());
    expect(new Uint8Array(brotliDecompressSync(await Bun.file(css.br!.path).bytes()))).toEqual(
      await Bun.file(css.path).bytes(),
    );
  });

  test("a stylesheet imported by a lazily loaded chunk fails the build: Bun would never load it", async () => {
    const src = join(work, "orphan");
    writePlaceholderConsole(src);
    writeFileSync(join(src, "page.css"), ".page { color: red; }");
    writeFileSync(
      join(src, "lazy.ts"),
      `import "./page.css";\nexport function mark(el: HTMLElement) { el.dataset.lazy = "loaded"; }`,
    );
    await expect(buildConsole({ entry: join(src, "index.html"), outDir: join(work, "orphan-out") })).rejects.toThrow(
      /would never be loaded/,
    );
  });

  test("the built console is stale when a source file is newer than index.html", async () => {
    const src = join(work, "src");
    expect(consoleIsStale(out, src)).toBe(false);
    const later = new Date(Date.now() + 5000);
    const { utimesSync } = await import("node:fs");
    utimesSync(join(src, "main.tsx"), later, later);
    expect(consoleIsStale(out, src)).toBe(true);
    expect(consoleIsStale(join(work, "missing"), src)).toBe(true);
  });
});

describe("embedded manifest", () => {
  test("a manifest is used only while every file it lists exists (run from source after a rebuild or clean)", () => {
    expect(usableManifest(manifest)).toBe(manifest);
    const stale: ConsoleManifest = {
      ...manifest,
      "/assets/gone-123.js": { file: join(work, "out", "assets", "gone-123.js"), type: "text/javascript" },
    };
    expect(usableManifest(stale)).toEqual({});
    expect(usableManifest({})).toEqual({});
    // Paths inside a compiled binary are not checked on disk.
    expect(
      usableManifest({ "/index.html": { file: "/$bunfs/root/index-abc.html", type: "text/html" } })["/index.html"],
    ).toBeDefined();
  });
});

describe("reserved paths", () => {
  test("API, relay, metrics, asset and file-like paths are never answered with the app", () => {
    for (const p of [
      "/api/nope",
      "/api",
      "/v1/nope",
      "/v1beta/models/x",
      "/pg/chat/completions",
      "/mj/submit/imagine",
      "/metrics",
      "/assets/x.js",
      "/favicon.ico",
      "/robots.txt",
    ]) {
      expect(isReservedPath(p)).toBe(true);
    }
    for (const p of ["/", "/setup", "/login", "/channel/edit/3", "/console/log", "/token"])
      expect(isReservedPath(p)).toBe(false);
  });
});

describe("embedded console", () => {
  const handle = (path: string, headers: Record<string, string> = {}) =>
    embeddedConsolePlugin(manifest).handle(new Request("http://localhost" + path, { headers }));

  test("index.html for the root and for deep links, never cached", async () => {
    for (const path of ["/", "/index.html", "/channel/edit/3", "/setup"]) {
      const res = await handle(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(res.headers.get("cache-control")).toBe("no-cache");
      expect(await res.text()).toContain('<div id="root">');
    }
  });

  test("hashed assets: immutable for a year, brotli or gzip only when accepted, bytes identical to the build", async () => {
    const js = byUrl("/assets/index-", ".js");
    const plain = await handle(js.url);
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-type")).toContain("javascript");
    expect(plain.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(new Uint8Array(await plain.arrayBuffer())).toEqual(await Bun.file(js.path).bytes());

    const css = byUrl("/assets/index-", ".css");
    const original = await Bun.file(css.path).bytes();
    const zipped = await handle(css.url, { "accept-encoding": "gzip, deflate" });
    expect(zipped.headers.get("content-encoding")).toBe("gzip");
    expect(zipped.headers.get("vary")).toBe("Accept-Encoding");
    expect(zipped.headers.get("content-type")).toContain("text/css");
    const body = new Uint8Array(await zipped.arrayBuffer());
    expect(body.length).toBe(css.gz!.size);
    expect(Bun.gunzipSync(body)).toEqual(original);

    // Brotli is smaller and preferred when the browser offers it; "br;q=0" refuses it.
    const br = await handle(css.url, { "accept-encoding": "gzip, deflate, br, zstd" });
    expect(br.headers.get("content-encoding")).toBe("br");
    const brBody = new Uint8Array(await br.arrayBuffer());
    expect(brBody.length).toBe(css.br!.size);
    expect(brBody.length).toBeLessThan(css.gz!.size);
    expect(new Uint8Array(brotliDecompressSync(brBody))).toEqual(original);
    expect((await handle(css.url, { "accept-encoding": "gzip, br;q=0" })).headers.get("content-encoding")).toBe("gzip");
  });

  test("unknown API, relay and asset paths get JSON 404s in the caller's format", async () => {
    const api = await handle("/api/nope");
    expect(api.status).toBe(404);
    expect(await api.json()).toEqual({ success: false, message: "not found" });
    const relay = await handle("/v1/nope");
    expect(relay.status).toBe(404);
    expect((await relay.json()).error.message).toBe("unknown route /v1/nope");
    const gemini = await handle("/v1beta/nope");
    expect((await gemini.json()).error.status).toBe("NOT_FOUND");
    for (const path of ["/assets/missing-123.js", "/favicon.ico"]) {
      const res = await handle(path);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toContain("application/json");
    }
  });

  test("without a built console the app explains how to build one, and API 404s stay JSON", async () => {
    const app = embeddedConsolePlugin({});
    const page = await app.handle(new Request("http://localhost/"));
    expect(page.status).toBe(503);
    expect(await page.text()).toContain("npm start");
    const api = await app.handle(new Request("http://localhost/api/nope"));
    expect(api.status).toBe(404);
    expect((await api.json()).success).toBe(false);
  });
});

describe("console from a folder on disk (--console-dir)", () => {
  let ctx: TestContext;
  beforeAll(async () => {
    writeFileSync(join(out, "robots.txt"), "User-agent: *\nDisallow: /api/\n");
    ctx = await testContext({ config: { consoleDir: out } });
    await ctx.app.modules;
  });
  afterAll(() => ctx.close());

  test("deep links get index.html with no-cache; the API still answers", async () => {
    for (const path of ["/", "/channel/edit/3", "/login"]) {
      const res = await ctx.request("GET", path);
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control")).toBe("no-cache");
      expect(String(res.body)).toContain('<div id="root">');
    }
    const status = await ctx.request("GET", "/api/status");
    expect(status.status).toBe(200);
    expect(status.body.success).toBe(true);
  });

  test("files are served from the folder: hashed assets immutable with an ETag, other files revalidated", async () => {
    const js = byUrl("/assets/index-", ".js");
    const res = await ctx.request("GET", js.url);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(res.headers.get("etag")).toBeTruthy();
    expect(res.body).toBe(await Bun.file(js.path).text());
    const robots = await ctx.request("GET", "/robots.txt");
    expect(robots.status).toBe(200);
    expect(robots.body).toContain("Disallow: /api/");
    expect(robots.headers.get("cache-control")).toBe("no-cache");
    // Revalidation: the same ETag back is a 304 without a body.
    const again = await ctx.request("GET", "/robots.txt", {
      headers: { "if-none-match": robots.headers.get("etag")! },
    });
    expect(again.status).toBe(304);
  });

  test("the build's brotli and gzip copies are served from the folder too", async () => {
    const css = byUrl("/assets/index-", ".css");
    const res = await ctx.app.handle(
      new Request("http://localhost" + css.url, { headers: { "accept-encoding": "gzip, br" } }),
    );
    expect(res.headers.get("content-encoding")).toBe("br");
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect((await res.arrayBuffer()).byteLength).toBe(css.br!.size);
    // The copies are not pages of their own.
    expect((await ctx.request("GET", css.url + ".gz")).status).toBe(404);
  });

  test("unknown API and asset paths are JSON 404s", async () => {
    for (const path of ["/api/nope", "/assets/missing-1.js", "/missing.png"]) {
      const res = await ctx.request("GET", path);
      expect(res.status).toBe(404);
      expect(res.body.success).toBe(false);
    }
    // The relay claims /v1/* itself; whatever it answers, it is an OpenAI error body and never the app.
    const relay = await ctx.request("GET", "/v1/nope");
    expect(relay.status).toBeGreaterThanOrEqual(400);
    expect(relay.body.error.message).toContain("/v1/nope");
  });

  test("a folder without index.html is refused at start-up with a clear message", async () => {
    const empty = join(work, "empty");
    mkdirSync(empty, { recursive: true });
    await expect(testContext({ config: { consoleDir: empty } })).rejects.toThrow(/has no index\.html/);
    await expect(testContext({ config: { consoleDir: join(work, "nowhere") } })).rejects.toThrow(/does not exist/);
  });
});
