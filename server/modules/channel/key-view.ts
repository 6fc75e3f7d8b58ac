// POST /api/channel/{id}/key: the one way to read a channel's key. Only the super admin, only after a fresh
// proof (the account password or a two-factor code in the body, or a secure verification of this session
// within the last minutes: POST /api/verify), and every view is written to the logs as a manage entry that
// names the channel, never the key. Every other channel read leaves the key out.
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { AppError, forbidden } from "../../http/errors.ts";
import { LOG_TYPE, ROLE } from "../../catalogue/index.ts";
import { writeLog } from "../log/write.ts";
import { isTwoFAEnabled, verifySecondFactor } from "../twofa/service.ts";
import { checkOwnPassword } from "../twofa/index.ts";
import { verifiedUntil } from "../twofa/secure.ts";
import { getChannel } from "./service.ts";

export const KEY_MSG = {
  rootOnly: "only the super admin can view channel keys",
  verificationRequired: "secure verification required: enter your password or two-factor code",
} as const;

export interface KeyProof {
  password?: string;
  code?: string;
  /** the caller's session (twofa/secure.ts sessionTag), null for access tokens */
  sessionTag: string | null;
}

export async function viewChannelKey(
  deps: AppDeps,
  actor: User,
  id: number,
  proof: KeyProof,
): Promise<{ key: string }> {
  if (actor.role < ROLE.root) throw forbidden(KEY_MSG.rootOnly);
  const channel = await getChannel(deps, id);
  let method: string;
  if (proof.password) {
    await checkOwnPassword(deps, actor, proof.password);
    method = "password";
  } else if (proof.code && (await isTwoFAEnabled(deps, actor.id))) {
    await verifySecondFactor(deps, actor.id, proof.code);
    method = "2fa";
  } else if (await verifiedUntil(deps, actor.id, proof.sessionTag)) {
    method = "verified session";
  } else {
    throw new AppError(403, KEY_MSG.verificationRequired, "VERIFICATION_REQUIRED");
  }
  await writeLog(deps.db, {
    user_id: actor.id,
    username: actor.username,
    type: LOG_TYPE.manage,
    channel_id: channel.id,
    content: `viewed the key of channel #${channel.id} (${channel.name}), verified by ${method}`,
  });
  return { key: channel.key };
}
