// Passkeys and two-factor sign-in in real Chromium against the real server. Passkeys go through DevTools'
// virtual authenticator (a CTAP2 platform authenticator with user verification): register one on the
// personal page, sign in with it on the login page, use it to view a channel key in the channel form. Then
// TOTP is set up from the QR dialog and the password login asks for the code. Screens go to tests/artifacts/.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { buildConsole } from "../../scripts/build-console.ts";
import { ROOT_PASSWORD, testContext, type TestContext } from "../helpers/app.ts";
import { totpCode } from "../../server/modules/twofa/totp.ts";

const ROOT = resolve(import.meta.dir, "../..");
const ARTIFACTS = join(ROOT, "tests", "artifacts");

let work: string;
let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let base = "";
let browser: Browser;
let context: BrowserContext;
let page: Page;
let channelId = 0;
const pageErrors: string[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  work = mkdtempSync(join(tmpdir(), "sy-passkey-e2e-"));
  const consoleDir = join(work, "console");
  await buildConsole({ outDir: consoleDir });
  ctx = await testContext({ config: { consoleDir } as any });
  await ctx.deps.options.set("passkey.enabled", "true");
  const root = await ctx.login("root", ROOT_PASSWORD);
  const ch = await ctx.request("POST", "/api/channel/", {
    as: root,
    body: { type: 1, name: "e2e-main", key: "sk-e2e-secret-key", models: "gpt-4o" },
  });
  channelId = ch.body.data.ids[0];
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => ctx.app.handle(req) });
  // WebAuthn needs a domain as the relying party id (not an IP address): the browser opens localhost.
  base = `http://localhost:${server.port}`;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--host-resolver-rules=MAP localhost 127.0.0.1",
      "--disable-background-networking",
      "--disable-sync",
    ],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 820 }, locale: "en-US" });
  page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  server?.stop(true);
  await ctx?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("passkeys in Chromium", () => {
  test("the super admin registers a passkey on the personal page", async () => {
    await page.goto(base + "/login");
    await page.fill('input[name="username"]', "root");
    await page.fill('input[name="password"]', ROOT_PASSWORD);
    await page.locator("form").getByRole("button", { name: "Log in" }).click();
    await page.waitForURL(/\/token$/);
    await page.goto(base + "/personal");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByText("Passkey added").first().waitFor();
    await page.getByText(/Passkey 1/).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "passkey-personal.png") });
    const rows = await ctx.deps.db.selectFrom("passkey_credentials").selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(rows[0].user_id).toBe(1);
  }, 60_000);

  test("after signing out, 'Sign in with a passkey' signs in without a username", async () => {
    await context.clearCookies();
    await page.evaluate(() => localStorage.removeItem("user"));
    await page.goto(base + "/login");
    await page.getByTestId("passkey-login").click();
    await page.waitForURL(/\/token$/);
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem("user") ?? "null"));
    expect(stored.username).toBe("root");
    const row = await ctx.deps.db
      .selectFrom("passkey_credentials")
      .select(["sign_count", "last_used_at"])
      .executeTakeFirstOrThrow();
    expect(row.last_used_at).not.toBeNull();
  }, 60_000);

  test("View key in the channel form: the passkey proves it is the super admin, the key shows and the view is logged", async () => {
    await page.goto(`${base}/channel/edit/${channelId}`);
    await page.getByTestId("view-key").click();
    await page.getByRole("button", { name: "Use a passkey" }).click();
    const revealed = page.getByTestId("revealed-key");
    await revealed.waitFor();
    expect(await revealed.inputValue()).toBe("sk-e2e-secret-key");
    await page.screenshot({ path: join(ARTIFACTS, "passkey-view-key.png") });
    const logs = await ctx.deps.db.selectFrom("logs").select(["type", "content"]).where("type", "=", 3).execute();
    expect(logs.some((l) => l.content.includes("e2e-main") && !l.content.includes("sk-e2e-secret-key"))).toBe(true);
  }, 60_000);

  test("two-factor sign-in: set up with the QR code, then the password login asks for the code", async () => {
    await page.goto(base + "/personal");
    await page.getByRole("button", { name: "Set up" }).click();
    await page.getByTestId("totp-qr").waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "twofa-setup.png") });
    const secret = (await page.getByTestId("totp-secret").innerText()).trim();
    await page.fill('input[name="totp-code"]', totpCode(secret));
    await page.getByRole("button", { name: "Enable" }).click();
    await page.getByText("8 backup codes left").waitFor();

    await context.clearCookies();
    await page.evaluate(() => localStorage.removeItem("user"));
    await page.goto(base + "/login");
    await page.fill('input[name="username"]', "root");
    await page.fill('input[name="password"]', ROOT_PASSWORD);
    await page.locator("form").getByRole("button", { name: "Log in" }).click();
    await page.locator('input[name="code"]').waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "twofa-login.png") });
    await page.fill('input[name="code"]', totpCode(secret, Date.now() + 30_000));
    await page.locator("form").getByRole("button", { name: "Verify" }).click();
    await page.waitForURL(/\/token$/);
    expect(await page.evaluate(() => JSON.parse(localStorage.getItem("user") ?? "null")?.username)).toBe("root");
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
