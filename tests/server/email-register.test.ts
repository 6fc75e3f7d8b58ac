// POST /api/user/register with EmailVerificationEnabled: the mailed code proves the address, once.
import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import type { TestContext } from "../helpers/app.ts";
import { withMailContext } from "../helpers/mail.ts";
import { codeIn, type SmtpReceiver } from "../mocks/smtp-server.ts";
import { createApp } from "../../server/app.ts";
import { MAX_CODE_ATTEMPTS } from "../../server/modules/verification/codes.ts";

let ctx: TestContext;
let smtp: SmtpReceiver;
withMailContext({ EmailVerificationEnabled: "true" }, (c, s) => {
  ctx = c;
  smtp = s;
});
afterEach(() => void setSystemTime());

const WRONG = "verification code is wrong or expired";

/** Asks for a code as a guest and returns it from the mail. */
async function mailedCode(email: string, as: Parameters<TestContext["request"]>[2] = {}): Promise<string> {
  const n = smtp.mails.length;
  const r = await ctx.request("GET", `/api/verification?email=${encodeURIComponent(email)}`, as);
  expect(r.body.success).toBe(true);
  return codeIn(await smtp.waitFor(n + 1));
}

const register = (username: string, email: string, verification_code: string) =>
  ctx.request("POST", "/api/user/register", {
    body: { username, password: "password1", password2: "password1", email, verification_code },
  });

const userNamed = (username: string) =>
  ctx.deps.db.selectFrom("users").selectAll().where("username", "=", username).executeTakeFirst();

describe("registration with email verification", () => {
  test("the mailed code registers the account with that address", async () => {
    const code = await mailedCode("Alice@Example.com");
    const r = await register("alice", " alice@example.COM ", code);
    expect(r.body).toEqual({ success: true, message: "registered" });
    expect((await userNamed("alice"))!.email).toBe("alice@example.com");
  });

  test("a code is good for one registration only", async () => {
    const code = await mailedCode("once@example.com");
    expect((await register("once1", "once@example.com", code)).body.success).toBe(true);
    // The address is now taken, and the code is spent either way.
    const again = await register("once2", "once@example.com", code);
    expect(again.body.success).toBe(false);
    expect(await userNamed("once2")).toBeUndefined();
  });

  test("of two concurrent registrations with one code, exactly one succeeds", async () => {
    const code = await mailedCode("race@example.com");
    const results = await Promise.all([
      register("race1", "race@example.com", code),
      register("race2", "race@example.com", code),
    ]);
    expect(results.filter((r) => r.body.success)).toHaveLength(1);
    const rows = await ctx.deps.db.selectFrom("users").select("id").where("email", "=", "race@example.com").execute();
    expect(rows).toHaveLength(1);
  });

  test("a missing, wrong or other address's code is refused", async () => {
    const code = await mailedCode("bob@example.com");
    const other = code === "000000" ? "000001" : "000000";
    expect((await register("bob", "bob@example.com", "")).body).toEqual({ success: false, message: WRONG });
    expect((await register("bob", "bob@example.com", other)).body).toEqual({ success: false, message: WRONG });
    expect((await register("bob", "bobby@example.com", code)).body).toEqual({ success: false, message: WRONG });
    expect(await userNamed("bob")).toBeUndefined();
    expect((await register("bob", "bob@example.com", code)).body.success).toBe(true);
  });

  test(`after ${MAX_CODE_ATTEMPTS} wrong guesses the code is void`, async () => {
    const code = await mailedCode("guess@example.com");
    const wrong = code === "999999" ? "999998" : "999999";
    for (let i = 0; i < MAX_CODE_ATTEMPTS; i++)
      expect((await register("guesser", "guess@example.com", wrong)).body.message).toBe(WRONG);
    expect((await register("guesser", "guess@example.com", code)).body).toEqual({ success: false, message: WRONG });
  });

  test("the code expires after 3 minutes", async () => {
    const code = await mailedCode("late@example.com");
    const now = Date.now();
    setSystemTime(new Date(now + 179_000));
    const early = await mailedCode("early@example.com");
    setSystemTime(new Date(now + 181_000));
    expect((await register("late", "late@example.com", code)).body).toEqual({ success: false, message: WRONG });
    expect((await register("early", "early@example.com", early)).body.success).toBe(true);
  });

  test("a failure before the account is made (username taken) leaves the code usable", async () => {
    await ctx.user(1, { username: "carol" });
    const code = await mailedCode("carol@example.com");
    expect((await register("carol", "carol@example.com", code)).body).toEqual({
      success: false,
      message: "username is already taken",
    });
    expect((await register("carol2", "carol@example.com", code)).body.success).toBe(true);
  });

  test("an address taken after the code was sent is refused at registration", async () => {
    const code = await mailedCode("late-taken@example.com");
    await ctx.user(1, { email: "late-taken@example.com" });
    expect((await register("dave", "late-taken@example.com", code)).body).toEqual({
      success: false,
      message: "the email address is already taken",
    });
  });

  test("the site's email rules apply at registration too", async () => {
    const code = await mailedCode("eve@example.com");
    await ctx.deps.options.set("EmailDomainWhitelist", "example.org");
    await ctx.deps.options.set("EmailDomainRestrictionEnabled", "true");
    try {
      const r = await register("eve", "eve@example.com", code);
      expect(r.body.success).toBe(false);
      expect(r.body.message).toContain("whitelisted domains");
    } finally {
      await ctx.deps.options.set("EmailDomainRestrictionEnabled", "false");
    }
  });

  test("a code mailed to a logged-in user (for binding) does not register an account", async () => {
    const someone = await ctx.user(1);
    const code = await mailedCode("bindonly@example.com", { as: someone });
    expect((await register("frank", "bindonly@example.com", code)).body).toEqual({ success: false, message: WRONG });
  });

  test("another instance sharing the cache accepts a code this one mailed", async () => {
    const code = await mailedCode("shared@example.com");
    const second = createApp({ ...ctx.deps });
    const res = await second.handle(
      new Request("http://localhost/api/user/register", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          username: "grace",
          password: "password1",
          email: "shared@example.com",
          verification_code: code,
        }),
      }),
    );
    expect(await res.json()).toEqual({ success: true, message: "registered" });
  });

  test("with verification off, no code is asked and no address is stored", async () => {
    await ctx.deps.options.set("EmailVerificationEnabled", "false");
    try {
      expect((await register("heidi", "heidi@example.com", "")).body.success).toBe(true);
      expect((await userNamed("heidi"))!.email).toBe("");
    } finally {
      await ctx.deps.options.set("EmailVerificationEnabled", "true");
    }
  });
});
