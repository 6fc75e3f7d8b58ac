// Shared set-up of the browser tests: the console built once per test process, Chromium launched with
// the flags every test uses, signing a page in through the API, and the page errors a test asserts on.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { buildConsole, type BuiltFile } from "../../scripts/build-console.ts";

export const ARTIFACTS = join(resolve(import.meta.dir, "../.."), "tests", "artifacts");

let built: Promise<{ dir: string; files: BuiltFile[] }> | null = null;

/** The production console, built into a temporary folder on first use and shared by every test file. */
export function builtConsole(): Promise<{ dir: string; files: BuiltFile[] }> {
  if (!built) {
    const work = mkdtempSync(join(tmpdir(), "sy-console-build-"));
    process.once("exit", () => rmSync(work, { recursive: true, force: true }));
    const dir = join(work, "console");
    built = buildConsole({ outDir: dir }).then((files) => ({ dir, files }));
  }
  return built;
}

export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...extraArgs,
    ],
  });
}

/** Records uncaught page errors and console errors of `page` into `into`. */
export function watchErrors(page: Page, into: string[]): Page {
  page.on("pageerror", (e) => into.push(`${page.url()}: ${String(e)}`));
  page.on("console", (m) => {
    // A JSON page of the API (where a test sets local storage) has no icon: its 404 is not the console's.
    if (m.type() === "error" && !new URL(page.url()).pathname.startsWith("/api/"))
      into.push(`${page.url()}: console: ${m.text()}`);
  });
  return page;
}

/**
 * Signs `context` in as a user (the session cookie and the stored user, as the login page leaves them)
 * with the console language and theme chosen; returns an open page of it.
 */
export async function signedInPage(
  context: BrowserContext,
  base: string,
  who: { username: string; password: string } | null,
  opts: { lang?: string; theme?: "light" | "dark"; errors?: string[] } = {},
): Promise<Page> {
  const page = await context.newPage();
  if (opts.errors) watchErrors(page, opts.errors);
  await page.goto(base + "/api/status");
  await page.evaluate(
    async ({ who, lang, theme }) => {
      localStorage.setItem("i18nextLng", lang);
      localStorage.setItem("theme-mode", theme);
      if (!who) return;
      const r = await fetch("/api/user/login", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(who),
      });
      const j = await r.json();
      if (!j.success) throw new Error(`login failed: ${j.message}`);
      localStorage.setItem("user", JSON.stringify(j.data));
    },
    { who, lang: opts.lang ?? "en", theme: opts.theme ?? "light" },
  );
  return page;
}

/**
 * Follows what `page` loads from the console's server `base` (scripts, API calls; an embedded chat's other
 * site is not waited for) and answers a function that resolves once nothing has been in flight for
 * `quietMs`: the screen's code and first answers are in. Waiting for that instead of a fixed pause made the
 * console's walk through every route several times faster.
 */
export function settledWhenQuiet(page: Page, base: string): (quietMs?: number, timeoutMs?: number) => Promise<void> {
  let inFlight = 0;
  let changed = performance.now();
  const ours = (r: { url(): string }) => r.url().startsWith(base);
  const started = (r: { url(): string }) => {
    if (!ours(r)) return;
    inFlight++;
    changed = performance.now();
  };
  const ended = (r: { url(): string }) => {
    if (!ours(r)) return;
    inFlight = Math.max(0, inFlight - 1);
    changed = performance.now();
  };
  page.on("request", started);
  page.on("requestfinished", ended);
  page.on("requestfailed", ended);
  return async (quietMs = 80, timeoutMs = 5_000) => {
    const until = performance.now() + timeoutMs;
    while (performance.now() < until && (inFlight > 0 || performance.now() - changed < quietMs)) await Bun.sleep(10);
  };
}

/**
 * Opens `route` the way a user moves inside the console: through its router (no reload) once the page shows
 * the console, loading it anew otherwise. Each full load re-ran the bundle, the language and the user's data.
 */
export async function visit(page: Page, base: string, route: string): Promise<void> {
  const here = page.url();
  if (here.startsWith(base) && !new URL(here).pathname.startsWith("/api/")) {
    await page.evaluate((r) => {
      history.pushState(null, "", r);
      dispatchEvent(new PopStateEvent("popstate"));
    }, route);
  } else {
    await page.goto(base + route);
  }
}
