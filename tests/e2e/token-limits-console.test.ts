// Per-token limits in the console as an operator meets them in Chromium, against the real
// server: a token's rpm, tpm, calls in flight and daily budget set in the token drawer are saved and shown again
// after a reload, in the list's row on a 1280 px screen (the common laptop) and in the row's details on a
// phone, where the label sits beside the first limit. Screens: tests/artifacts/token-limits-*.png.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { ARTIFACTS, builtConsole, launchChromium, signedInPage } from "../helpers/browser.ts";
import { startServer, stopServer, type Running } from "../helpers/server-process.ts";

const ROOT_USER = { username: "root", password: "rootpass123" };
let work = "";
let server: Running;
let browser: Browser;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "sy-token-limits-"));
  const { dir } = await builtConsole();
  server = await startServer(join(work, "data"), { CONSOLE_DIR: dir, SESSION_SECRET: "token-limits-console" });
  const setup = await fetch(`${server.base}/api/setup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...ROOT_USER, confirmPassword: ROOT_USER.password }),
  }).then((r) => r.json());
  if (!setup.success) throw new Error(setup.message);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await stopServer(server);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("token limits in the console (Chromium)", () => {
  test("set in the drawer, saved, shown in the 1280 px list's row and again in the drawer after a reload; on a phone in the row's details", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await signedInPage(context, server.base, ROOT_USER, { lang: "en" });
      await page.goto(`${server.base}/token`);
      await page.getByText("Add token", { exact: true }).click();
      const drawer = page.locator(".arco-drawer");
      await drawer.locator('input[placeholder="A name for this token"]').fill("agent");
      for (const [id, v] of [
        ["limit-rpm", "3"],
        ["limit-tpm", "100000"],
        ["limit-concurrency", "2"],
        ["limit-budget", "500000"],
      ]) {
        const input = drawer.locator(`[data-testid=${id}] input`);
        await input.fill(v);
        await input.blur();
      }
      await drawer.getByText("Daily", { exact: true }).click();
      await drawer.getByText("Submit", { exact: true }).click();
      await drawer.waitFor({ state: "detached" });

      await page.reload();
      const row = page.locator("tr", { hasText: "agent" }).first();
      // In the row itself, not one tap away in its details.
      const usage = row.getByTestId("token-limit-usage");
      await usage.waitFor();
      expect(await usage.innerText()).toBe("0/3 requests/min\n0/100000 tokens/min\n0/2 in flight\n$0.00/$1.00 Daily");
      await page.screenshot({ path: join(ARTIFACTS, "token-limits-1280-en.png") });

      await row.getByRole("button", { name: "Edit" }).click();
      const values = await page
        .locator("[data-testid=token-limits] [data-testid^=limit-] input")
        .evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value));
      expect(values).toEqual(["3", "100000", "2", "500000"]);
      expect(await page.locator("[data-testid=budget-period] .arco-radio-checked").innerText()).toBe("Daily");

      // A phone: the limits step into the row's details, their label beside the first of them.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto(`${server.base}/token`);
      const phoneRow = page.locator("tr", { hasText: "agent" }).first();
      await phoneRow.locator(".arco-table-expand-icon-cell button").click();
      const details = page.getByTestId("row-details").first();
      const block = details.getByTestId("token-limit-usage");
      await block.waitFor();
      const label = details.getByText("Limits (used/limit)");
      const [lb, bb] = [await label.boundingBox(), await block.boundingBox()];
      expect(Math.abs(lb!.y - bb!.y)).toBeLessThan(6);
      await page.screenshot({ path: join(ARTIFACTS, "token-limits-390-en.png"), fullPage: true });
    } finally {
      await context.close();
    }
  }, 60_000);
});
