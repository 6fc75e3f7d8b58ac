// The browser's half of passkeys: the server's begin answers new-api's {options: {publicKey}}, the browser
// makes or uses the credential (@simplewebauthn/browser turns the JSON into WebAuthn calls and back), and
// finish gets the credential JSON. Every outcome comes back as the API client's envelope.
import { browserSupportsWebAuthn, startAuthentication, startRegistration } from "@simplewebauthn/browser";
import { api, type Envelope } from "../api/index.ts";
import { t } from "../i18n/index.ts";

export const passkeySupported = (): boolean => browserSupportsWebAuthn();

/** The user closed the browser's dialog, or the authenticator refused: a message, never a thrown error. */
function refused(e: unknown): Envelope {
  const name = (e as Error)?.name;
  const message =
    name === "NotAllowedError" || name === "AbortError"
      ? t("passkey.cancelled")
      : `${t("passkey.failed")}: ${(e as Error)?.message ?? e}`;
  return { success: false, message, status: 0 };
}

async function ceremony(beginPath: string, finishPath: string, kind: "create" | "get"): Promise<Envelope> {
  const begin = await api.post<{ options: { publicKey: any } }>(beginPath);
  if (!begin.success || !begin.data) return begin;
  let credential: unknown;
  try {
    const optionsJSON = begin.data.options.publicKey;
    credential =
      kind === "create" ? await startRegistration({ optionsJSON }) : await startAuthentication({ optionsJSON });
  } catch (e) {
    return refused(e);
  }
  return api.post(finishPath, credential);
}

/** Registers a passkey for the signed-in user. */
export const registerPasskey = () =>
  ceremony("/api/user/passkey/register/begin", "/api/user/passkey/register/finish", "create");

/** Signs in with any passkey of this site; data is the user, as for a password login. */
export const signInWithPasskey = () =>
  ceremony("/api/user/passkey/login/begin", "/api/user/passkey/login/finish", "get");

/** Secure verification with one of the user's passkeys (then POST /api/verify {method: "passkey"}). */
export async function verifyWithPasskey(): Promise<Envelope> {
  const r = await ceremony("/api/user/passkey/verify/begin", "/api/user/passkey/verify/finish", "get");
  return r.success ? api.post("/api/verify", { method: "passkey" }) : r;
}
