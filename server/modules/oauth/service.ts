// Accounts behind third-party sign-in, the same for every provider: find the user holding the provider's
// id, register one when registration is open (username like one-api's github_<n>), or bind the id to the
// signed-in user. No HTTP here.
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { AppError, badRequest, forbidden } from "../../http/errors.ts";
import { USER_STATUS } from "../../catalogue/index.ts";
import { randomString } from "../../infra/random.ts";
import { MSG as USER_MSG, insertSelfRegistered, registrationOpen } from "../user/service.ts";
import { normaliseUsername, usernameProblem, usernameTaken } from "../user/username.ts";
import type { ExternalIdentity } from "./model.ts";

export type Provider = "github" | "oidc" | "linuxdo" | "wechat" | "telegram";

type ProviderColumn = "github_id" | "oidc_id" | "linux_do_id" | "wechat_id" | "telegram_id";

export interface ProviderInfo {
  label: string;
  column: ProviderColumn;
  /** The option that switches sign-in (and binding) with this provider on. */
  enabledOption: string;
  usernamePrefix: string;
  /** Display name when the provider gives none (one-api's wording). */
  fallbackName: string;
}

export const PROVIDERS: Record<Provider, ProviderInfo> = {
  github: {
    label: "GitHub",
    column: "github_id",
    enabledOption: "GitHubOAuthEnabled",
    usernamePrefix: "github_",
    fallbackName: "GitHub User",
  },
  oidc: {
    label: "OIDC",
    column: "oidc_id",
    enabledOption: "oidc.enabled",
    usernamePrefix: "oidc_",
    fallbackName: "OIDC User",
  },
  linuxdo: {
    label: "Linux DO",
    column: "linux_do_id",
    enabledOption: "LinuxDOOAuthEnabled",
    usernamePrefix: "linuxdo_",
    fallbackName: "Linux DO User",
  },
  wechat: {
    label: "WeChat",
    column: "wechat_id",
    enabledOption: "WeChatAuthEnabled",
    usernamePrefix: "wechat_",
    fallbackName: "WeChat User",
  },
  telegram: {
    label: "Telegram",
    column: "telegram_id",
    enabledOption: "TelegramOAuthEnabled",
    usernamePrefix: "telegram_",
    fallbackName: "Telegram User",
  },
};

export const MSG = {
  disabled: (p: Provider) => `the administrator has not enabled sign-in with ${PROVIDERS[p].label}`,
  boundElsewhere: (p: Provider) => `this ${PROVIDERS[p].label} account is already bound to another user`,
  deleted: "this account has been deleted",
  busy: "this account is already being signed in, try again in a moment",
} as const;

/** Column widths of the users table (db/migrations/tables.ts). */
const MAX = { display_name: 64, email: 255, providerId: 64, oidcId: 128 } as const;
const REGISTER_LOCK_SECONDS = 30;

export function assertProviderEnabled(deps: AppDeps, p: Provider): void {
  if (!deps.options.bool(PROVIDERS[p].enabledOption)) throw forbidden(MSG.disabled(p));
}

function checkIdentity(p: Provider, identity: ExternalIdentity): void {
  const max = p === "oidc" ? MAX.oidcId : MAX.providerId;
  if (!identity.id) throw new AppError(502, `${PROVIDERS[p].label} did not say who signed in, try again later`);
  if (identity.id.length > max)
    throw new AppError(502, `${PROVIDERS[p].label} answered an account id longer than ${max} characters`);
}

/** Every account holding the id, deleted ones included (one-api's check is unscoped too). */
function holders(deps: AppDeps, p: Provider, id: string): Promise<User[]> {
  return deps.db.selectFrom("users").selectAll().where(PROVIDERS[p].column, "=", id).orderBy("id").execute();
}

async function byUsername(deps: AppDeps, username: string): Promise<User | undefined> {
  return deps.db.selectFrom("users").selectAll().where("username", "=", username).executeTakeFirst();
}

/**
 * Signs in with a provider account: the user holding its id, or a new user when registration is open.
 * Refuses deleted and banned accounts. affCode (from the state) names the inviter of a new user.
 */
export async function signIn(deps: AppDeps, p: Provider, identity: ExternalIdentity, affCode = ""): Promise<User> {
  checkIdentity(p, identity);
  let user = await existing(deps, p, identity.id);
  if (!user) {
    if (!registrationOpen(deps)) throw forbidden(USER_MSG.registerClosed);
    // Two callbacks for one new account at once (a double click) must not register it twice.
    const lock = `oauth:register:${p}:${identity.id}`;
    if (!(await deps.cache.setNx(lock, "1", REGISTER_LOCK_SECONDS))) throw new AppError(409, MSG.busy);
    try {
      user = (await existing(deps, p, identity.id)) ?? (await register(deps, p, identity, affCode));
    } finally {
      await deps.cache.del(lock);
    }
  }
  if (user.status !== USER_STATUS.enabled) throw forbidden(USER_MSG.banned);
  return user;
}

async function existing(deps: AppDeps, p: Provider, id: string): Promise<User | undefined> {
  const rows = await holders(deps, p, id);
  if (rows.length === 0) return undefined;
  const live = rows.find((u) => !u.deleted_at);
  if (!live) throw forbidden(MSG.deleted);
  return live;
}

async function register(deps: AppDeps, p: Provider, identity: ExternalIdentity, affCode: string): Promise<User> {
  const info = PROVIDERS[p];
  const display_name = (identity.displayName.trim() || info.fallbackName).slice(0, MAX.display_name);
  // An address another account already uses would make login by email ambiguous; leave it out.
  let email = identity.email.trim().slice(0, MAX.email);
  if (email && (await deps.db.selectFrom("users").select("id").where("email", "=", email).executeTakeFirst()))
    email = "";
  for (let attempt = 0; attempt < 5; attempt++) {
    const username = await candidateUsername(deps, info, identity, attempt);
    try {
      await insertSelfRegistered(
        deps,
        { username, password: "", display_name, email, [info.column]: identity.id },
        affCode,
      );
    } catch (e) {
      // Someone took the name between the check and the insert: try another; anything else is real.
      if (await usernameTaken(deps, username)) continue;
      throw e;
    }
    const user = await byUsername(deps, username);
    if (user) return user;
  }
  throw new AppError(503, "could not find a free username for the new account, try again");
}

async function candidateUsername(
  deps: AppDeps,
  info: ProviderInfo,
  identity: ExternalIdentity,
  attempt: number,
): Promise<string> {
  // A provider's suggestion is used only when it is a name one could choose here, and free.
  const suggested = normaliseUsername(identity.username);
  if (attempt === 0 && suggested && !usernameProblem(suggested) && !(await usernameTaken(deps, suggested)))
    return suggested;
  const row = await deps.db
    .selectFrom("users")
    .select((eb) => eb.fn.max("id").as("m"))
    .executeTakeFirst();
  const base = `${info.usernamePrefix}${Number(row?.m ?? 0) + 1}`;
  if (attempt === 0 && !(await usernameTaken(deps, base))) return base;
  return `${base}_${randomString(4).toLowerCase()}`;
}

/** Binds the provider account to `me`; refused when another account (even a deleted one) holds it. */
export async function bind(deps: AppDeps, me: User, p: Provider, identity: ExternalIdentity): Promise<User> {
  checkIdentity(p, identity);
  const column = PROVIDERS[p].column;
  if ((await holders(deps, p, identity.id)).some((u) => u.id !== me.id)) throw badRequest(MSG.boundElsewhere(p));
  await deps.db
    .updateTable("users")
    .set({ [column]: identity.id })
    .where("id", "=", me.id)
    .execute();
  return deps.db.selectFrom("users").selectAll().where("id", "=", me.id).executeTakeFirstOrThrow();
}
