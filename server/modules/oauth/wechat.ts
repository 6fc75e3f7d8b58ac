// WeChat through a one-api WeChat server (github.com/songquanpeng/wechat-server): the user types the code
// the official account sent them; WeChatServerAddress/api/wechat/user?code= answers {success, message,
// data: openid} to a caller presenting WeChatServerToken in Authorization.
import type { AppDeps } from "../../deps.ts";
import { badRequest } from "../../http/errors.ts";
import { MSG as USER_MSG } from "../user/service.ts";
import type { ExternalIdentity } from "./model.ts";
import { callProvider, refused } from "./upstream.ts";

const LABEL = "the WeChat server";

export async function wechatIdentity(deps: AppDeps, code: string): Promise<ExternalIdentity> {
  if (!code) throw badRequest("please enter the verification code");
  const base = deps.options.get("WeChatServerAddress").replace(/\/+$/, "");
  const r = await callProvider(LABEL, `${base}/api/wechat/user?code=${encodeURIComponent(code)}`, {
    headers: { authorization: deps.options.get("WeChatServerToken"), accept: "application/json" },
  });
  if (r.body?.success !== true) throw refused(LABEL, r);
  const openid = r.body.data;
  if (typeof openid !== "string" || !openid) throw badRequest(USER_MSG.verificationWrong);
  return { id: openid, displayName: "", email: "" };
}
