// Accounts: registration, login, administration with role levels, self-service, invites. No HTTP here.
import { sql } from "kysely";
import type { AppDeps } from "../../deps.ts";
import type { NewUser, User } from "../../../db/schema.ts";
import { nowSeconds, type Database } from "../../../db/index.ts";
import { dbTime } from "../../../db/datetime.ts";
import { AppError, badRequest, forbidden, notFound } from "../../http/errors.ts";
import { END_SESSIONS } from "../../http/auth.ts";
import {
  DEFAULT_GROUP,
  DEFAULT_ROOT_PASSWORD,
  DEFAULT_ROOT_USERNAME,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  QUOTA_PER_UNIT,
  ROLE,
  USER_STATUS,
  VERIFICATION_CODE_TTL_SECONDS,
} from "../../catalogue/index.ts";
import { hashPassword, needsRehash, passwordTooLong, verifyPasswordOf, BCRYPT_MAX_BYTES } from "./password.ts";
import { accountOfName, accountOfUser, throttledCheck } from "./signin-throttle.ts";
import { editBalance, withLeased } from "./balance.ts";
import {
  USERNAME_MSG,
  chosenUsername,
  claimingName,
  normaliseUsername,
  userBySignInName,
  usernameTaken,
} from "./username.ts";
import { parseSetting, publicUser, type UserSetting } from "./view.ts";
import { randomString } from "../../infra/random.ts";
import { notifyTokenChanged } from "../token/events.ts";
import { checkCode, consumeCode, type CodeRef } from "../verification/codes.ts";
import { EMAIL_MSG, emailPolicyError, emailTaken, isEmail, normaliseEmail } from "../verification/email.ts";

export const MSG = {
  emptyCredentials: "username and password cannot be empty",
  loginEmpty: "please enter username and password",
  passwordShort: `password length must not be less than ${PASSWORD_MIN_LENGTH}`,
  passwordLong: `password length must not be more than ${PASSWORD_MAX_LENGTH}`,
  passwordBytes: `password must not be longer than ${BCRYPT_MAX_BYTES} bytes`,
  passwordMismatch: "the two passwords do not match",
  usernameLong: USERNAME_MSG.long,
  usernameTaken: USERNAME_MSG.taken,
  badLogin: "username or password is wrong, or the user has been banned",
  registerClosed: "registration is closed by the administrator",
  passwordRegisterClosed: "registration by password is closed by the administrator; use a third-party account",
  passwordLoginClosed: "login by password is disabled by the administrator",
  banned: "user has been banned",
  defaultPassword: "you are using the default password, change it immediately",
  levelDenied: "no permission to access or change users of equal or higher level",
  adminCantMakeAdmin: "an ordinary admin cannot promote users to admin",
  rootProtected: "the super admin cannot be disabled, deleted or demoted",
  verificationWrong: "verification code is wrong or expired",
  emailInvalid: EMAIL_MSG.invalid,
} as const;

export function checkPassword(deps: AppDeps, pw: string) {
  if (pw.length < PASSWORD_MIN_LENGTH) throw badRequest(MSG.passwordShort);
  if (pw.length > PASSWORD_MAX_LENGTH) throw badRequest(MSG.passwordLong);
  if (passwordTooLong(pw, deps.config.passwordHash)) throw badRequest(MSG.passwordBytes);
}

export async function getUser(deps: AppDeps, id: number): Promise<User> {
  const u = await deps.db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst();
  if (!u) throw notFound("user not found");
  return u;
}

export interface RegisterInput {
  username: string;
  password: string;
  password2?: string;
  email?: string;
  verification_code?: string;
  aff_code?: string;
}

export async function register(deps: AppDeps, input: RegisterInput): Promise<void> {
  const o = deps.options;
  if (!registrationOpen(deps)) throw forbidden(MSG.registerClosed);
  if (!o.bool("PasswordRegisterEnabled")) throw forbidden(MSG.passwordRegisterClosed);
  const password = input.password ?? "";
  if (!normaliseUsername(input.username) || !password) throw badRequest(MSG.emptyCredentials);
  const username = chosenUsername(input.username);
  checkPassword(deps, password);
  if (input.password2 !== undefined && input.password2 !== password) throw badRequest(MSG.passwordMismatch);
  let email = "";
  let proof: CodeRef | null = null;
  if (o.bool("EmailVerificationEnabled")) {
    email = normaliseEmail(input.email);
    const refused = emailPolicyError(deps, email);
    if (refused) throw badRequest(refused);
    proof = { purpose: "register", email };
    if (!(await checkCode(deps, proof, input.verification_code, VERIFICATION_CODE_TTL_SECONDS)))
      throw badRequest(MSG.verificationWrong);
    if (await emailTaken(deps, email)) throw badRequest(EMAIL_MSG.taken);
  }
  if (await usernameTaken(deps, username)) throw badRequest(MSG.usernameTaken);
  // Spent only now, so a refusal above (a taken username) leaves the code for the next try.
  if (proof && !(await consumeCode(deps, proof, input.verification_code, VERIFICATION_CODE_TTL_SECONDS)))
    throw badRequest(MSG.verificationWrong);

  const hash = await hashPassword(password, deps.config.passwordHash);
  await claimingName(deps, username, 0, () =>
    insertSelfRegistered(deps, { username, password: hash, display_name: username, email }, input.aff_code),
  );
}

/** Registration is open to newcomers (password or third-party sign-in). */
export function registrationOpen(deps: AppDeps): boolean {
  return deps.options.bool("RegisterEnabled") && !deps.options.bool("SelfUseModeEnabled");
}

export type SelfRegisteredFields = Pick<NewUser, "username" | "password" | "display_name" | "email"> &
  Partial<Pick<NewUser, "github_id" | "oidc_id" | "wechat_id" | "telegram_id" | "linux_do_id">>;

/**
 * Inserts an account someone opened for themselves (password or third-party sign-in): the new-user quota,
 * plus the invite rewards when affCode names an inviter (unknown codes are ignored), in one transaction.
 */
export async function insertSelfRegistered(
  deps: AppDeps,
  fields: SelfRegisteredFields,
  affCode?: string | null,
): Promise<void> {
  const o = deps.options;
  let inviterId = 0;
  if (affCode) {
    const inviter = await deps.db.selectFrom("users").select("id").where("aff_code", "=", affCode).executeTakeFirst();
    if (inviter) inviterId = inviter.id;
  }
  const quota = o.number("QuotaForNewUser") + (inviterId ? o.number("QuotaForInvitee") : 0);
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .insertInto("users")
      .values({
        ...fields,
        quota,
        inviter_id: inviterId,
        role: ROLE.common,
        status: USER_STATUS.enabled,
        group: DEFAULT_GROUP,
        aff_code: randomString(8),
        ...creationTimes(),
        setting: "",
      })
      .execute();
    if (inviterId) {
      const reward = o.number("QuotaForInviter");
      await trx
        .updateTable("users")
        .set({
          aff_count: sql`aff_count + 1`,
          aff_quota: sql`aff_quota + ${reward}`,
          aff_history: sql`aff_history + ${reward}`,
        })
        .where("id", "=", inviterId)
        .execute();
    }
  });
}

/** The times a new account row carries: Switchyard's created_time and new-api's created_at, alike. */
export function creationTimes() {
  const now = nowSeconds();
  return { created_time: now, created_at: now };
}

/** A sign-in that starts a session (password, third party, passkey, the second factor): new-api's last_login_at. */
export async function recordSignIn(deps: AppDeps, user: User): Promise<void> {
  const now = nowSeconds();
  await deps.db.updateTable("users").set({ last_login_at: now }).where("id", "=", user.id).execute();
  user.last_login_at = now;
}

export async function login(
  deps: AppDeps,
  username: string,
  password: string,
): Promise<{ user: User; message: string }> {
  if (!deps.options.bool("PasswordLoginEnabled")) throw forbidden(MSG.passwordLoginClosed);
  const name = normaliseUsername(username);
  if (!name || !password) throw badRequest(MSG.loginEmpty);
  const user =
    (await userBySignInName(deps, name))
    ?? (await deps.db
      .selectFrom("users")
      .selectAll()
      .where("email", "=", name)
      .where("email", "!=", "")
      .where("deleted_at", "is", null)
      .orderBy("id")
      .executeTakeFirst());
  // One attempt against the account (or the name, when nobody holds it), checked against a dummy hash when there
  // is no password to check, so neither the answer nor its timing tells an unknown name from a wrong password.
  const account = user ? accountOfUser(user.id) : accountOfName(name);
  if (
    !(await throttledCheck(deps, account, () => verifyPasswordOf(password, user?.password, deps.config.passwordHash)))
  )
    throw badRequest(MSG.badLogin);
  if (!user) throw badRequest(MSG.badLogin);
  if (user.status !== USER_STATUS.enabled) throw forbidden(MSG.banned);
  if (needsRehash(user.password, deps.config.passwordHash) && !passwordTooLong(password, deps.config.passwordHash)) {
    const hash = await hashPassword(password, deps.config.passwordHash);
    await deps.db
      .updateTable("users")
      .set({ password: hash })
      .where("id", "=", user.id)
      .where("password", "=", user.password)
      .execute();
    user.password = hash;
  }
  const message =
    user.username === DEFAULT_ROOT_USERNAME && password === DEFAULT_ROOT_PASSWORD && user.role >= ROLE.root
      ? MSG.defaultPassword
      : "";
  return { user, message };
}

// ---- administration -------------------------------------------------------------------------------

export interface ListQuery {
  page: number;
  size: number;
  offset: number;
  keyword?: string;
  group?: string;
}

export async function listUsers(deps: AppDeps, q: ListQuery) {
  let base = deps.db.selectFrom("users");
  if (q.keyword) {
    const kw = q.keyword.trim();
    const like = `%${kw}%`;
    base = base.where((eb) => {
      const ors = [eb("username", "like", like), eb("email", "like", like), eb("display_name", "like", like)];
      if (/^\d+$/.test(kw)) ors.push(eb("id", "=", Number(kw)));
      return eb.or(ors);
    });
  }
  if (q.group) base = base.where("group", "=", q.group);
  const [{ n }] = await base.select((eb) => eb.fn.countAll<number>().as("n")).execute();
  const rows = await base.selectAll().orderBy("id", "desc").limit(q.size).offset(q.offset).execute();
  return { items: (await withLeased(deps, rows)).map(publicUser), page: q.page, page_size: q.size, total: Number(n) };
}

/** Only the super admin may act on an equal level (itself); everyone else only on lower levels. */
function assertLower(actor: User, target: User) {
  if (actor.role <= target.role && actor.role < ROLE.root) throw forbidden(MSG.levelDenied);
}

export async function getUserAsAdmin(deps: AppDeps, actor: User, id: number) {
  const target = await getUser(deps, id);
  assertLower(actor, target);
  return publicUser((await withLeased(deps, [target]))[0]);
}

export interface CreateUserInput {
  username: string;
  password: string;
  display_name?: string;
  role?: number;
}

export async function createUser(deps: AppDeps, actor: User, input: CreateUserInput): Promise<void> {
  const password = input.password ?? "";
  if (!normaliseUsername(input.username) || !password) throw badRequest(MSG.emptyCredentials);
  const username = chosenUsername(input.username);
  checkPassword(deps, password);
  const role = input.role ?? ROLE.common;
  if (role >= actor.role) throw forbidden(MSG.levelDenied);
  if (await usernameTaken(deps, username)) throw badRequest(MSG.usernameTaken);
  const hash = await hashPassword(password, deps.config.passwordHash);
  await claimingName(deps, username, 0, () =>
    deps.db
      .insertInto("users")
      .values({
        username,
        password: hash,
        display_name: input.display_name?.trim() || username,
        role,
        status: USER_STATUS.enabled,
        group: DEFAULT_GROUP,
        aff_code: randomString(8),
        quota: deps.options.number("QuotaForNewUser"),
        ...creationTimes(),
        setting: "",
      })
      .execute(),
  );
}

export interface UpdateUserInput {
  id: number;
  username?: string;
  display_name?: string;
  password?: string;
  email?: string;
  quota?: number;
  group?: string;
  role?: number;
  remark?: string;
}

export async function updateUser(deps: AppDeps, actor: User, input: UpdateUserInput): Promise<void> {
  const target = await getUser(deps, input.id);
  if (target.deleted_at) throw badRequest("user has been deleted");
  assertLower(actor, target);
  if (input.role !== undefined && input.role !== target.role) {
    if (target.role >= ROLE.root && input.role < target.role) throw forbidden(MSG.rootProtected);
    if (input.role >= actor.role) throw forbidden(actor.role >= ROLE.root ? MSG.levelDenied : MSG.adminCantMakeAdmin);
  }
  const patch: Record<string, unknown> = {};
  // The console sends the name back with every edit: the stored one, even one the rules would refuse now, is no rename.
  if (
    input.username !== undefined
    && input.username.trim() !== target.username
    && normaliseUsername(input.username) !== target.username
  ) {
    const u = chosenUsername(input.username);
    if (await usernameTaken(deps, u, target.id)) throw badRequest(MSG.usernameTaken);
    patch.username = u;
  }
  if (input.display_name !== undefined) patch.display_name = input.display_name.trim() || target.username;
  if (input.password) {
    checkPassword(deps, input.password);
    patch.password = await hashPassword(input.password, deps.config.passwordHash);
  }
  if (input.email !== undefined) {
    if (input.email && !isEmail(input.email)) throw badRequest(MSG.emailInvalid);
    patch.email = input.email;
  }
  // The balance as the admin saw it includes what leases hold; the console sends it back with every edit, and an
  // unchanged value must not become an edit.
  const [shown] = input.quota !== undefined ? await withLeased(deps, [target]) : [target];
  if (input.quota !== undefined && input.quota !== Number(shown.quota)) {
    if (!Number.isSafeInteger(input.quota)) throw badRequest("quota must be an integer");
    patch.quota = input.quota;
  }
  if (input.group !== undefined) {
    if (!input.group.trim()) throw badRequest("group cannot be empty");
    patch.group = input.group.trim();
  }
  if (input.role !== undefined) patch.role = input.role;
  if (Object.keys(patch).length === 0) return;
  const endsSessions = patch.password !== undefined || (patch.role !== undefined && patch.role !== target.role);
  const write = (db: Database = deps.db) =>
    db
      .updateTable("users")
      .set(endsSessions ? { ...patch, ...END_SESSIONS } : patch)
      .where("id", "=", target.id)
      .execute();
  // A new balance is set absolutely: the leases holding part of the old one are given back first (balance.ts).
  const run = async () =>
    void (patch.quota !== undefined ? await editBalance(deps, { userId: target.id }, write) : await write());
  await (typeof patch.username === "string" ? claimingName(deps, patch.username, target.id, run) : run());
  await notifyTokenChanged(deps, { userId: target.id });
}

export type ManageAction = "promote" | "demote" | "disable" | "enable" | "delete";

export async function manageUser(deps: AppDeps, actor: User, id: number, action: ManageAction) {
  const target = await getUser(deps, id);
  if (target.deleted_at) throw badRequest("user has been deleted");
  if (target.role >= ROLE.root && action !== "promote" && action !== "enable") throw forbidden(MSG.rootProtected);
  if (actor.role <= target.role) throw forbidden(MSG.levelDenied);
  const patch: Record<string, unknown> = {};
  switch (action) {
    case "disable":
      patch.status = USER_STATUS.disabled;
      break;
    case "enable":
      if (target.status === USER_STATUS.unenablable) throw badRequest("this user cannot be enabled");
      patch.status = USER_STATUS.enabled;
      break;
    case "delete":
      patch.deleted_at = dbTime(deps.db, Date.now());
      break;
    case "promote":
      if (actor.role < ROLE.root) throw forbidden(MSG.adminCantMakeAdmin);
      if (target.role >= ROLE.admin) throw badRequest("the user is already an admin");
      patch.role = ROLE.admin;
      break;
    case "demote":
      if (target.role === ROLE.common) throw badRequest("the user is already an ordinary user");
      patch.role = ROLE.common;
      break;
    default:
      throw badRequest("invalid action: use promote, demote, disable, enable or delete");
  }
  // Every manage action changes what the user may do, so sessions signed before it end.
  await deps.db
    .updateTable("users")
    .set({ ...patch, ...END_SESSIONS })
    .where("id", "=", id)
    .execute();
  await notifyTokenChanged(deps, { userId: id });
  const after = await getUser(deps, id);
  return { status: after.status, role: after.role };
}

// ---- self service --------------------------------------------------------------------------------

export interface UpdateSelfInput {
  display_name?: string;
  username?: string;
  original_password?: string;
  password?: string;
}

export async function updateSelf(deps: AppDeps, me: User, input: UpdateSelfInput): Promise<void> {
  const patch: Record<string, unknown> = {};
  if (input.password !== undefined && input.password !== "") {
    if (!input.original_password) throw badRequest("the original password is required");
    const original = input.original_password;
    if (
      !(await throttledCheck(deps, accountOfUser(me.id), () =>
        verifyPasswordOf(original, me.password, deps.config.passwordHash),
      ))
    )
      throw badRequest("the original password is wrong");
    if (input.original_password === input.password)
      throw badRequest("the new password must differ from the original one");
    checkPassword(deps, input.password);
    patch.password = await hashPassword(input.password, deps.config.passwordHash);
  }
  if (input.display_name !== undefined) patch.display_name = input.display_name.trim() || me.username;
  if (
    input.username !== undefined
    && input.username.trim() !== me.username
    && normaliseUsername(input.username) !== me.username
  ) {
    const u = chosenUsername(input.username);
    if (await usernameTaken(deps, u, me.id)) throw badRequest(MSG.usernameTaken);
    patch.username = u;
  }
  if (Object.keys(patch).length === 0) return;
  const write = () =>
    deps.db
      .updateTable("users")
      .set(patch.password ? { ...patch, ...END_SESSIONS } : patch)
      .where("id", "=", me.id)
      .execute();
  await (typeof patch.username === "string" ? claimingName(deps, patch.username, me.id, write) : write());
}

export async function deleteSelf(deps: AppDeps, me: User): Promise<void> {
  if (me.role >= ROLE.root) throw forbidden("the super admin account cannot be deleted");
  await deps.db
    .updateTable("users")
    .set({ deleted_at: dbTime(deps.db, Date.now()), access_token: null })
    .where("id", "=", me.id)
    .execute();
  await notifyTokenChanged(deps, { userId: me.id });
}

export async function generateAccessToken(deps: AppDeps, me: User): Promise<string> {
  const token = randomString(32);
  await deps.db.updateTable("users").set({ access_token: token }).where("id", "=", me.id).execute();
  return token;
}

export async function affCode(deps: AppDeps, me: User): Promise<string> {
  if (me.aff_code) return me.aff_code;
  const code = randomString(8);
  await deps.db.updateTable("users").set({ aff_code: code }).where("id", "=", me.id).execute();
  return code;
}

/** Moves pending invite earnings to the balance in one conditional statement (no double spend). */
export async function affTransfer(deps: AppDeps, me: User, quota: number): Promise<void> {
  const min = deps.options.number("QuotaPerUnit", QUOTA_PER_UNIT);
  if (!Number.isSafeInteger(quota) || quota < min) throw badRequest(`minimum transfer amount is ${min}`);
  const res = await deps.db
    .updateTable("users")
    .set({ aff_quota: sql`aff_quota - ${quota}`, quota: sql`quota + ${quota}` })
    .where("id", "=", me.id)
    .where("aff_quota", ">=", quota)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw badRequest("insufficient invite earnings");
}

export async function updateSetting(deps: AppDeps, me: User, input: UserSetting): Promise<void> {
  const next: UserSetting = { ...parseSetting(me.setting) };
  if (input.notify_type !== undefined) {
    if (input.notify_type !== "email" && input.notify_type !== "webhook")
      throw badRequest("notify_type must be email or webhook");
    next.notify_type = input.notify_type;
  }
  if (input.quota_warning_threshold !== undefined) {
    const n = Number(input.quota_warning_threshold);
    if (!Number.isFinite(n) || n < 0) throw badRequest("quota_warning_threshold must be a non-negative number");
    next.quota_warning_threshold = n;
  }
  if (input.webhook_url !== undefined) next.webhook_url = input.webhook_url.trim();
  if (input.webhook_secret !== undefined) {
    // It becomes an Authorization header: a line break would add header lines of the user's choosing.
    if (/[\x00-\x1f\x7f]/.test(input.webhook_secret))
      throw badRequest("the webhook secret must not contain line breaks or other control characters");
    next.webhook_secret = input.webhook_secret;
  }
  if (input.notification_email !== undefined) {
    const e = input.notification_email.trim();
    if (e && !isEmail(e)) throw badRequest(MSG.emailInvalid);
    next.notification_email = e;
  }
  if (input.accept_unset_model_ratio_model !== undefined)
    next.accept_unset_model_ratio_model = !!input.accept_unset_model_ratio_model;
  if (input.record_ip_log !== undefined) next.record_ip_log = !!input.record_ip_log;
  if (next.notify_type === "webhook") {
    if (!next.webhook_url) throw badRequest("webhook URL is required for webhook notifications");
    let url: URL;
    try {
      url = new URL(next.webhook_url);
    } catch {
      throw badRequest("webhook URL is not a valid URL");
    }
    if (url.protocol !== "https:") throw badRequest("webhook URL must use https");
  }
  await deps.db
    .updateTable("users")
    .set({ setting: JSON.stringify(next) })
    .where("id", "=", me.id)
    .execute();
  await notifyTokenChanged(deps, { userId: me.id });
}

export async function groups(deps: AppDeps): Promise<string[]> {
  return Object.keys(deps.options.json<Record<string, number>>("GroupRatio", {}));
}

export { AppError };
