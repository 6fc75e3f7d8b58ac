// Two-factor sign-in rules, on the service (TOTP drift, one use per code, lockout, backup codes) and on
// the HTTP routes new-api's console calls (setup, enable, login with a code, disable, verify).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { timeMillis } from "../../db/datetime.ts";
import {
  LOCKOUT_SECONDS,
  MAX_FAILED_ATTEMPTS,
  matchingStep,
  newBackupCodes,
  normaliseBackupCode,
  numericCode,
  otpauthUri,
  stepAt,
  totpCode,
} from "../../server/modules/twofa/totp.ts";
import * as twofa from "../../server/modules/twofa/service.ts";

const STEP_MS = 30_000;
/** Tests that hash and check many bcrypt backup codes (cost 10, ~60 ms each) on a busy 2-core machine. */
const BCRYPT_HEAVY_MS = 30_000;

describe("TOTP and backup code rules (no storage)", () => {
  test("RFC 6238 SHA-1 test vectors, truncated to six digits", () => {
    const secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"; // base32 of "12345678901234567890"
    expect(totpCode(secret, 59_000)).toBe("287082");
    expect(totpCode(secret, 1_111_111_109_000)).toBe("081804");
    expect(totpCode(secret, 2_000_000_000_000)).toBe("279037");
  });

  test("a code is accepted one step either side of now, not two", () => {
    const secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP";
    const now = 1_700_000_015_000;
    for (const drift of [-1, 0, 1])
      expect(matchingStep(secret, totpCode(secret, now + drift * STEP_MS), now)).toBe(stepAt(now) + drift);
    for (const drift of [-2, 2]) expect(matchingStep(secret, totpCode(secret, now + drift * STEP_MS), now)).toBeNull();
    expect(matchingStep(secret, "000000", now) === null || totpCode(secret, now) === "000000").toBe(true);
  });

  test("codes are six digits, spaces allowed; backup codes are XXXX-XXXX in any case or dashing", () => {
    expect(numericCode(" 123 456 ")).toBe("123456");
    expect(numericCode("12345")).toBeNull();
    expect(numericCode("12345a")).toBeNull();
    expect(normaliseBackupCode("abcd-ef12")).toBe("ABCD-EF12");
    expect(normaliseBackupCode("ABCDEF12")).toBe("ABCD-EF12");
    expect(normaliseBackupCode("ABCD-EF1")).toBeNull();
    const codes = newBackupCodes();
    expect(codes).toHaveLength(8);
    expect(new Set(codes).size).toBe(8);
    for (const c of codes) expect(c).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
  });

  test("the otpauth URI names the issuer and account, SHA-1, 6 digits, 30 s", () => {
    const uri = otpauthUri("JBSWY3DPEHPK3PXP", "My Gateway", "alice");
    expect(uri.startsWith("otpauth://totp/")).toBe(true);
    const u = new URL(uri);
    expect(decodeURIComponent(u.pathname)).toContain("alice");
    expect(Object.fromEntries(u.searchParams)).toMatchObject({
      secret: "JBSWY3DPEHPK3PXP",
      issuer: "My Gateway",
      algorithm: "SHA1",
      digits: "6",
      period: "30",
    });
  });
});

for (const kind of storageKinds()) {
  describe(`two-factor sign-in [${kind}]`, () => {
    let ctx: TestContext;
    beforeAll(async () => {
      ctx = await testContext({ kind });
    });
    afterAll(() => ctx.close());

    const userRow = async (s: Session) =>
      ctx.deps.db.selectFrom("users").selectAll().where("id", "=", s.id).executeTakeFirstOrThrow();
    const row = (id: number) =>
      ctx.deps.db.selectFrom("two_fas").selectAll().where("user_id", "=", id).executeTakeFirstOrThrow();
    /** A user with 2FA enabled through the service; answers its secret and backup codes. */
    const enrolled = async () => {
      const s = await ctx.user(1);
      const u = await userRow(s);
      const setup = await twofa.setupTwoFA(ctx.deps, u);
      await twofa.enableTwoFA(ctx.deps, u, totpCode(setup.secret));
      // The enabling code's step is spent; tests use later steps from here on.
      return { s, u, ...setup };
    };
    const message = (p: Promise<unknown>) =>
      p.then(
        () => "accepted",
        (e) => e.message as string,
      );

    test("setup is pending until a code confirms it; the enabling code cannot be used again", async () => {
      const s = await ctx.user(1);
      const u = await userRow(s);
      const setup = await twofa.setupTwoFA(ctx.deps, u);
      expect(setup.secret).toMatch(/^[A-Z2-7]{32}$/);
      expect(setup.qr_code_data).toContain(`secret=${setup.secret}`);
      expect(await twofa.twoFAStatus(ctx.deps, u.id)).toEqual({ enabled: false, locked: false });
      expect(await message(twofa.verifySecondFactor(ctx.deps, u.id, totpCode(setup.secret)))).toBe(
        twofa.MSG.notEnabled,
      );
      expect(
        await message(twofa.enableTwoFA(ctx.deps, u, "000000" === totpCode(setup.secret) ? "111111" : "000000")),
      ).toBe(twofa.MSG.wrongCode);
      const code = totpCode(setup.secret);
      await twofa.enableTwoFA(ctx.deps, u, code);
      expect(await twofa.twoFAStatus(ctx.deps, u.id)).toEqual({
        enabled: true,
        locked: false,
        backup_codes_remaining: 8,
      });
      expect(await message(twofa.verifySecondFactor(ctx.deps, u.id, code))).toBe(twofa.MSG.wrongCode);
      expect(await message(twofa.setupTwoFA(ctx.deps, u))).toBe(twofa.MSG.alreadyEnabled);
    });

    test("a code works once; after a later step's code, an earlier step's code is refused", async () => {
      const { u, secret } = await enrolled();
      const next = totpCode(secret, Date.now() + STEP_MS);
      expect(await twofa.verifySecondFactor(ctx.deps, u.id, next)).toBe("totp");
      expect(await message(twofa.verifySecondFactor(ctx.deps, u.id, next))).toBe(twofa.MSG.wrongCode);
      expect(await message(twofa.verifySecondFactor(ctx.deps, u.id, totpCode(secret)))).toBe(twofa.MSG.wrongCode);
      expect((await row(u.id)).last_step).toBe(stepAt(Date.now() + STEP_MS));
    });

    test("two instances racing with the same code: exactly one wins", async () => {
      const { u, secret } = await enrolled();
      const code = totpCode(secret, Date.now() + STEP_MS);
      const results = await Promise.all([1, 2, 3].map(() => message(twofa.verifySecondFactor(ctx.deps, u.id, code))));
      expect(results.filter((r) => r === "accepted")).toHaveLength(1);
    });

    test(`${MAX_FAILED_ATTEMPTS} wrong codes lock every code for ${LOCKOUT_SECONDS} s; a right code after the lock clears the count`, async () => {
      const { u, secret, backup_codes } = await enrolled();
      const right = totpCode(secret, Date.now() + STEP_MS);
      const wrong = right === "123456" ? "654321" : "123456";
      for (let i = 1; i < MAX_FAILED_ATTEMPTS; i++)
        expect(await message(twofa.verifySecondFactor(ctx.deps, u.id, wrong))).toBe(twofa.MSG.wrongCode);
      expect(await message(twofa.verifySecondFactor(ctx.deps, u.id, wrong))).toContain("locked until");
      const locked = await row(u.id);
      expect(locked.failed_attempts).toBe(MAX_FAILED_ATTEMPTS);
      const until = timeMillis(locked.locked_until)!;
      expect(Math.abs(until - (Date.now() + LOCKOUT_SECONDS * 1000))).toBeLessThan(10_000);
      expect(await message(twofa.verifySecondFactor(ctx.deps, u.id, right))).toContain("locked until");
      expect(await message(twofa.verifySecondFactor(ctx.deps, u.id, backup_codes[0]))).toContain("locked until");
      expect((await twofa.twoFAStatus(ctx.deps, u.id)).locked).toBe(true);
      // The lock runs out (moved into the past here): the right code is accepted and the count starts over.
      await ctx.deps.db
        .updateTable("two_fas")
        .set({ locked_until: kind === "sqlite" ? "2000-01-01 00:00:00" : new Date(946684800000) })
        .where("user_id", "=", u.id)
        .execute();
      expect(await twofa.verifySecondFactor(ctx.deps, u.id, right)).toBe("totp");
      expect(await row(u.id)).toMatchObject({ failed_attempts: 0, locked_until: null });
    });

    test(
      "backup codes are stored as bcrypt hashes, work once each, typed in any case; regenerating voids the old ones",
      async () => {
        const { u, secret, backup_codes } = await enrolled();
        const stored = await ctx.deps.db
          .selectFrom("two_fa_backup_codes")
          .selectAll()
          .where("user_id", "=", u.id)
          .execute();
        expect(stored).toHaveLength(8);
        for (const r of stored) {
          expect(r.code_hash).toMatch(/^\$2[aby]\$10\$/);
          expect(backup_codes.some((c) => r.code_hash.includes(c) || r.code_hash.includes(c.replace("-", "")))).toBe(
            false,
          );
        }
        expect(await twofa.verifySecondFactor(ctx.deps, u.id, backup_codes[0].toLowerCase().replace("-", ""))).toBe(
          "backup",
        );
        expect(await message(twofa.verifySecondFactor(ctx.deps, u.id, backup_codes[0]))).toBe(twofa.MSG.wrongCode);
        expect((await twofa.twoFAStatus(ctx.deps, u.id)).backup_codes_remaining).toBe(7);
        // Regenerating needs an authenticator code, not a backup code.
        expect(await message(twofa.regenerateBackupCodes(ctx.deps, u, backup_codes[1]))).toBe(twofa.MSG.wrongCode);
        const fresh = await twofa.regenerateBackupCodes(ctx.deps, u, totpCode(secret, Date.now() + STEP_MS));
        expect(fresh).toHaveLength(8);
        expect(await message(twofa.verifySecondFactor(ctx.deps, u.id, backup_codes[2]))).toBe(twofa.MSG.wrongCode);
        expect(await twofa.verifySecondFactor(ctx.deps, u.id, fresh[0])).toBe("backup");
      },
      BCRYPT_HEAVY_MS,
    );

    test(
      "a backup code hashed by new-api (Go bcrypt, $2a$) is accepted",
      async () => {
        const { u } = await enrolled();
        const goHash = (await Bun.password.hash("QWER-TY12", { algorithm: "bcrypt", cost: 10 })).replace(
          /^\$2b\$/,
          "$2a$",
        );
        await ctx.deps.db
          .insertInto("two_fa_backup_codes")
          .values({
            user_id: u.id,
            code_hash: goHash,
            is_used: false,
            used_at: null,
            created_at: null,
            deleted_at: null,
          })
          .execute();
        expect(await twofa.verifySecondFactor(ctx.deps, u.id, "qwer-ty12")).toBe("backup");
      },
      BCRYPT_HEAVY_MS,
    );

    test(
      "disable needs a code and removes the secret and the backup codes",
      async () => {
        const { u, backup_codes } = await enrolled();
        expect(await message(twofa.disableTwoFA(ctx.deps, u, ""))).toBe(twofa.MSG.codeRequired);
        await twofa.disableTwoFA(ctx.deps, u, backup_codes[3]);
        expect(await twofa.twoFAStatus(ctx.deps, u.id)).toEqual({ enabled: false, locked: false });
        expect(
          await ctx.deps.db.selectFrom("two_fa_backup_codes").select("id").where("user_id", "=", u.id).execute(),
        ).toEqual([]);
      },
      BCRYPT_HEAVY_MS,
    );
  });
}
