// The console's one HTTP client (spec 000 §6–§8). Every management call goes through here so the
// user-id header, the session cookie, the 401 redirect and the transport error messages are handled
// once. Calls resolve to the server's envelope; HTTP-level failures become an envelope with
// success=false and a translated message, so a screen only ever checks `success`.
import { i18n } from "../i18n/index.ts";
import { getStoredUser, setStoredUser } from "../lib/storage.ts";
export { qs } from "./qs.ts";

export interface Envelope<T = any> {
  success: boolean;
  message: string;
  data?: T;
  /** HTTP status, 0 when the server could not be reached. */
  status: number;
  [extra: string]: unknown;
}

export const USER_ID_HEADER = "New-Api-User";
export const EXPIRED_LOGIN_PATH = "/login?expired=true";

type Navigate = (to: string) => void;
let navigate: Navigate = (to) => globalThis.location?.assign(to);

/** The router registers itself so the 401 redirect stays a client-side navigation. */
export function setNavigator(fn: Navigate): void {
  navigate = fn;
}

type Listener = () => void;
const expiredListeners = new Set<Listener>();

/**
 * Called after a 401 has cleared the stored user, before the redirect to the login page. The app state
 * subscribes here so the in-memory user is forgotten too (top bar, route guards). Returns the unsubscribe.
 */
export function onSessionExpired(fn: Listener): () => void {
  expiredListeners.add(fn);
  return () => {
    expiredListeners.delete(fn);
  };
}

/** What the server answers for an unknown /api route (server/app.ts onError, NOT_FOUND). */
const UNKNOWN_ROUTE_MESSAGE = "not found";

/** Paths whose 401 is an answer to show, not an expired session (wrong password on login). */
const NO_REDIRECT = ["/api/user/login", "/api/user/logout"];

function messageForStatus(status: number): string | null {
  if (status === 429) return i18n.t("error.tooManyRequests");
  if (status === 500) return i18n.t("error.internal");
  if (status === 405) return i18n.t("error.demoOnly");
  return null;
}

export async function request<T = any>(
  method: string,
  path: string,
  body?: unknown,
  init: RequestInit = {},
): Promise<Envelope<T>> {
  const headers: Record<string, string> = { Accept: "application/json", ...(init.headers as Record<string, string>) };
  const user = getStoredUser();
  if (user) headers[USER_ID_HEADER] = String(user.id);
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(path, {
      ...init,
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    return { success: false, message: i18n.t("error.network"), status: 0 };
  }
  if (res.status === 401 && !NO_REDIRECT.some((p) => path.startsWith(p))) {
    setStoredUser(null);
    for (const fn of [...expiredListeners]) fn();
    const here = globalThis.location?.pathname ?? "";
    if (here !== "/login") {
      navigate(EXPIRED_LOGIN_PATH);
      // The login page explains the expiry; the screen being left must not add its own error toast
      // (one per failed call) on top, so its call never settles. Nothing holds on to it once it unmounts.
      return new Promise<never>(() => {});
    }
  }
  const fixed = messageForStatus(res.status);
  let parsed: any = null;
  try {
    parsed = await res.json();
  } catch {
    parsed = null;
  }
  // A 429 that says when to retry (an account locked after failed sign-ins) keeps the server's message, which says when.
  const retryAt =
    res.status === 429 && res.headers.get("retry-after") && typeof parsed?.message === "string" && parsed.message;
  if (retryAt) return { success: false, message: translateServerMessage(retryAt), status: res.status };
  if (fixed) return { success: false, message: fixed, status: res.status };
  // The server's answer for an /api route it does not have (a feature this server leaves out, such as
  // new-api's daily check-in): say that, not a bare "not found".
  if (res.status === 404 && parsed?.message === UNKNOWN_ROUTE_MESSAGE)
    return { success: false, message: i18n.t("error.unavailable"), status: 404 };
  if (parsed && typeof parsed === "object" && "success" in parsed) {
    return { ...parsed, message: translateServerMessage(parsed.message ?? ""), status: res.status };
  }
  if (!res.ok) return { success: false, message: i18n.t("error.network"), status: res.status };
  return { success: true, message: "", data: parsed as T, status: res.status };
}

/** Server messages are English; show the translation when the dictionary knows the message. */
export function translateServerMessage(message: string): string {
  if (!message) return message;
  const key = `srv.${message}`;
  return i18n.exists(key) ? i18n.t(key) : message;
}

export const api = {
  get: <T = any>(path: string, init?: RequestInit) => request<T>("GET", path, undefined, init),
  post: <T = any>(path: string, body?: unknown) => request<T>("POST", path, body ?? {}),
  put: <T = any>(path: string, body?: unknown) => request<T>("PUT", path, body ?? {}),
  del: <T = any>(path: string) => request<T>("DELETE", path),
};

/** Builds a query string, leaving out empty values. */
