// Turnstile and email verification cannot be switched on before their settings are filled in (spec 000 §8
// dictionary), nor left on with those settings cleared.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";

let ctx: TestContext;
let root: Session;
beforeAll(async () => {
  ctx = await testContext();
  root = await ctx.login("root", "rootpass123");
});
afterAll(() => ctx.close());

const put = async (key: string, value: string) =>
  (await ctx.request("PUT", "/api/option/", { as: root, body: { key, value } })).body;
const status = async () => (await ctx.request("GET", "/api/status")).body.data;

describe("Turnstile switch", () => {
  test("needs both keys before it goes on", async () => {
    const message = "cannot enable Turnstile: fill in the site key and secret key first";
    expect(await put("TurnstileCheckEnabled", "true")).toEqual({ success: false, message });
    expect(await put("TurnstileSiteKey", "0xSITE")).toMatchObject({ success: true });
    expect(await put("TurnstileCheckEnabled", "true")).toEqual({ success: false, message });
    expect(await put("TurnstileSecretKey", "0xSECRET")).toMatchObject({ success: true });
    expect(await put("TurnstileCheckEnabled", "true")).toMatchObject({ success: true });
    const s = await status();
    expect(s.turnstile_check).toBe(true);
    expect(s.turnstile_site_key).toBe("0xSITE");
    expect(JSON.stringify(s)).not.toContain("0xSECRET");
  });

  test("its keys cannot be cleared while it is on; off first, then they can", async () => {
    expect(await put("TurnstileSiteKey", "")).toEqual({
      success: false,
      message: "cannot clear TurnstileSiteKey while TurnstileCheckEnabled is on: turn it off first",
    });
    expect(ctx.deps.options.get("TurnstileSiteKey")).toBe("0xSITE");
    expect(await put("TurnstileSiteKey", "0xOTHER")).toMatchObject({ success: true });
    expect(await put("TurnstileCheckEnabled", "false")).toMatchObject({ success: true });
    expect(await put("TurnstileSiteKey", "")).toMatchObject({ success: true });
  });
});

describe("email verification switch", () => {
  test("needs an SMTP server and a sender address; a local relay without a password is enough", async () => {
    const message =
      "cannot enable email verification: fill in the SMTP server and a sender address (SMTPFrom or SMTPAccount) first";
    expect(await put("EmailVerificationEnabled", "true")).toEqual({ success: false, message });
    expect(await put("SMTPServer", "127.0.0.1")).toMatchObject({ success: true });
    expect(await put("EmailVerificationEnabled", "true")).toEqual({ success: false, message });
    expect(await put("SMTPFrom", "noreply@gateway.test")).toMatchObject({ success: true });
    expect(await put("EmailVerificationEnabled", "true")).toMatchObject({ success: true });
    expect((await status()).email_verification).toBe(true);
  });

  test("the SMTP server cannot be cleared while it is on; the sender may move from SMTPFrom to SMTPAccount", async () => {
    expect(await put("SMTPServer", "")).toEqual({
      success: false,
      message: "cannot clear SMTPServer while EmailVerificationEnabled is on: turn it off first",
    });
    expect(await put("SMTPAccount", "mailer@gateway.test")).toMatchObject({ success: true });
    expect(await put("SMTPFrom", "")).toMatchObject({ success: true });
    expect(await put("SMTPAccount", "")).toEqual({
      success: false,
      message: "cannot clear SMTPAccount while EmailVerificationEnabled is on: turn it off first",
    });
    expect(await put("EmailVerificationEnabled", "false")).toMatchObject({ success: true });
    expect(await put("SMTPServer", "")).toMatchObject({ success: true });
  });

  test("switching off is always allowed", async () => {
    expect(await put("EmailVerificationEnabled", "false")).toMatchObject({ success: true });
    expect(await put("TurnstileCheckEnabled", "false")).toMatchObject({ success: true });
  });
});
