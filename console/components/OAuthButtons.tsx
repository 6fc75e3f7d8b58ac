// Third-party sign-in buttons, each shown only when the status object enables it (spec 000 §2.3, §7.2).
// GitHub, OIDC and Linux DO open the provider's authorise page with the client id and a state string.
import { useEffect, useRef, useState } from "react";
import { Button, Divider, Input, Message, Modal, Space } from "@arco-design/web-react";
import { IconGithub, IconWechat } from "@arco-design/web-react/icon";
import { useNavigate } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, qs } from "../api/index.ts";
import { useApp } from "../lib/app-state.tsx";
import type { SiteStatus, StoredUser } from "../lib/storage.ts";
import { landingAfterSignIn, needsSecondFactor, secondFactorState } from "../lib/signin.ts";

export function anyThirdParty(s: SiteStatus): boolean {
  return !!(s.github_oauth || s.oidc_enabled || s.linuxdo_oauth || s.wechat_login || s.telegram_oauth);
}

async function oauthState(aff?: string | null): Promise<string | null> {
  const r = await api.get<string>(`/api/oauth/state${qs({ aff: aff ?? undefined })}`);
  if (!r.success || !r.data) {
    Message.error(r.message);
    return null;
  }
  return r.data;
}

/**
 * The provider's authorise link. OIDC's redirect_uri is the configured site (ServerAddress, which the server
 * also sends when it exchanges the code), else this page's origin: never anything taken from the URL.
 */
export function authoriseUrl(
  kind: "github" | "oidc" | "linuxdo",
  s: SiteStatus,
  state: string,
  origin = String(s.server_address || location.origin),
): string {
  if (kind === "github") {
    return `https://github.com/login/oauth/authorize${qs({ client_id: s.github_client_id, state, scope: "user:email" })}`;
  }
  if (kind === "linuxdo") {
    return `https://connect.linux.do/oauth2/authorize${qs({ response_type: "code", client_id: s.linuxdo_client_id, state })}`;
  }
  const u = new URL(String(s.oidc_authorization_endpoint));
  u.searchParams.set("client_id", String(s.oidc_client_id ?? ""));
  u.searchParams.set("redirect_uri", `${origin.replace(/\/+$/, "")}/oauth/oidc`);
  u.searchParams.set("response_type", "code");
  u.searchParams.set("scope", "openid profile email");
  u.searchParams.set("state", state);
  return u.toString();
}

export async function startOAuth(
  kind: "github" | "oidc" | "linuxdo",
  s: SiteStatus,
  aff?: string | null,
): Promise<void> {
  if (kind === "oidc") {
    // The server builds OIDC's link itself: it holds the nonce and the PKCE verifier that go with the state.
    const r = await api.get<{ url: string; state: string }>(
      `/api/oauth/oidc/authorize${qs({ aff: aff ?? undefined })}`,
    );
    if (r.success && r.data?.url) location.href = r.data.url;
    else Message.error(r.message);
    return;
  }
  const state = await oauthState(aff);
  if (state) location.href = authoriseUrl(kind, s, state);
}

/** The signed fields the Telegram login widget hands to its data-onauth callback. */
export interface TelegramAuthData {
  id: number;
  first_name?: string;
  last_name?: string;
  username?: string;
  photo_url?: string;
  auth_date: number;
  hash: string;
  [k: string]: unknown;
}

let telegramCallbacks = 0;

/**
 * Telegram's login widget. With `onAuth`, the widget calls back in the page (data-onauth) with the signed
 * fields, so the console can call the JSON API itself; with `authUrl`, the widget sends the browser there.
 */
export function TelegramWidget({
  bot,
  authUrl,
  onAuth,
}: {
  bot: string;
  authUrl?: string;
  onAuth?: (user: TelegramAuthData) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const handler = useRef(onAuth);
  handler.current = onAuth;
  const withCallback = !!onAuth;
  useEffect(() => {
    if (!box.current || !bot) return;
    const s = document.createElement("script");
    s.src = "https://telegram.org/js/telegram-widget.js?22";
    s.async = true;
    s.setAttribute("data-telegram-login", bot);
    s.setAttribute("data-size", "medium");
    s.setAttribute("data-request-access", "write");
    // The widget evaluates data-onauth as code with `user` in scope, so it needs a global function.
    const name = `__switchyardTelegramAuth${++telegramCallbacks}`;
    const g = globalThis as unknown as Record<string, unknown>;
    if (withCallback) {
      g[name] = (user: TelegramAuthData) => handler.current?.(user);
      s.setAttribute("data-onauth", `${name}(user)`);
    } else if (authUrl) s.setAttribute("data-auth-url", authUrl);
    box.current.appendChild(s);
    return () => {
      s.remove();
      delete g[name];
    };
  }, [bot, authUrl, withCallback]);
  return <div ref={box} data-testid="telegram-login" />;
}

/**
 * The widget's fields as the query of GET /api/oauth/telegram/login (spec 000 §7.2). Every field is passed
 * on unchanged: the server checks the hash over all of them, so none may be added or dropped.
 */
export function telegramQuery(user: TelegramAuthData): string {
  const fields: Record<string, string | number | undefined> = {};
  for (const [k, v] of Object.entries(user))
    if (v !== undefined && v !== null && typeof v !== "object") fields[k] = v as string | number;
  return qs(fields);
}

export function OAuthButtons({ aff }: { aff?: string | null }) {
  const { t } = useTranslation();
  const { status, setUser } = useApp();
  const navigate = useNavigate();
  const [wechatOpen, setWechatOpen] = useState(false);
  const [wechatCode, setWechatCode] = useState("");
  if (!anyThirdParty(status)) return null;

  const telegramLogin = async (tg: TelegramAuthData) => {
    const r = await api.get<StoredUser>(`/api/oauth/telegram/login${telegramQuery(tg)}`);
    if (r.success && needsSecondFactor(r.data)) navigate("/login", secondFactorState(r.data));
    else if (r.success && r.data) {
      setUser(r.data);
      Message.success(t("auth.loginSuccess"));
      navigate(landingAfterSignIn(r.data, "/"));
    } else Message.error(r.message);
  };

  const wechatLogin = async () => {
    const r = await api.get<StoredUser>(`/api/oauth/wechat${qs({ code: wechatCode })}`);
    if (r.success && needsSecondFactor(r.data)) {
      setWechatOpen(false);
      navigate("/login", secondFactorState(r.data));
    } else if (r.success && r.data) {
      setUser(r.data);
      setWechatOpen(false);
      Message.success(t("auth.loginSuccess"));
      navigate(landingAfterSignIn(r.data, "/"));
    } else Message.error(r.message);
  };

  return (
    <div className="sy-oauth">
      <Divider>{t("auth.orThirdParty")}</Divider>
      <Space wrap style={{ justifyContent: "center", width: "100%" }}>
        {status.github_oauth && (
          <Button icon={<IconGithub />} onClick={() => void startOAuth("github", status, aff)}>
            {t("auth.withGitHub")}
          </Button>
        )}
        {status.oidc_enabled && (
          <Button onClick={() => void startOAuth("oidc", status, aff)}>{t("auth.withOIDC")}</Button>
        )}
        {status.linuxdo_oauth && (
          <Button onClick={() => void startOAuth("linuxdo", status, aff)}>{t("auth.withLinuxDO")}</Button>
        )}
        {status.wechat_login && (
          <Button icon={<IconWechat />} onClick={() => setWechatOpen(true)}>
            {t("auth.withWeChat")}
          </Button>
        )}
        {status.telegram_oauth && (
          <TelegramWidget bot={String(status.telegram_bot_name ?? "")} onAuth={(u) => void telegramLogin(u)} />
        )}
      </Space>
      <Modal
        title={t("auth.withWeChat")}
        visible={wechatOpen}
        onOk={() => void wechatLogin()}
        onCancel={() => setWechatOpen(false)}
      >
        {status.wechat_qrcode && (
          <img
            src={String(status.wechat_qrcode)}
            alt=""
            style={{ maxWidth: 200, display: "block", margin: "0 auto 12px" }}
          />
        )}
        <p>{t("auth.wechatHint")}</p>
        <Input placeholder={t("auth.verificationCode")} value={wechatCode} onChange={setWechatCode} />
      </Modal>
    </div>
  );
}
