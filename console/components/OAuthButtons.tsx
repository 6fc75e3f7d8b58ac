// Third-party sign-in buttons, each shown only when the status object enables it (spec 000 §2.3, §7.2).
// GitHub, OIDC and Linux DO open the provider's authorise page with the client id and a state string.
import React, { useEffect, useRef, useState } from "react";
import { Button, Divider, Input, Message, Modal, Space } from "@arco-design/web-react";
import { IconGithub, IconWechat } from "@arco-design/web-react/icon";
import { useNavigate } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, qs } from "../api/index.ts";
import { useApp } from "../lib/app-state.tsx";
import type { SiteStatus, StoredUser } from "../lib/storage.ts";

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

export function authoriseUrl(kind: "github" | "oidc" | "linuxdo", s: SiteStatus, state: string, origin = location.origin): string {
  if (kind === "github") {
    return `https://github.com/login/oauth/authorize${qs({ client_id: s.github_client_id, state, scope: "user:email" })}`;
  }
  if (kind === "linuxdo") {
    return `https://connect.linux.do/oauth2/authorize${qs({ response_type: "code", client_id: s.linuxdo_client_id, state })}`;
  }
  const u = new URL(String(s.oidc_authorization_endpoint));
  u.searchParams.set("client_id", String(s.oidc_client_id ?? ""));
  u.searchParams.set("redirect_uri", `${origin}/oauth/oidc`);
  u.searchParams.set("response_type", "code");
  u.searchParams.set("scope", "openid profile email");
  u.searchParams.set("state", state);
  return u.toString();
}

export async function startOAuth(kind: "github" | "oidc" | "linuxdo", s: SiteStatus, aff?: string | null): Promise<void> {
  const state = await oauthState(aff);
  if (state) location.href = authoriseUrl(kind, s, state);
}

export function TelegramWidget({ bot, authUrl }: { bot: string; authUrl: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current || !bot) return;
    const s = document.createElement("script");
    s.src = "https://telegram.org/js/telegram-widget.js?22";
    s.async = true;
    s.setAttribute("data-telegram-login", bot);
    s.setAttribute("data-size", "medium");
    s.setAttribute("data-auth-url", authUrl);
    box.current.appendChild(s);
    return () => s.remove();
  }, [bot, authUrl]);
  return <div ref={box} data-testid="telegram-login" />;
}

export function OAuthButtons({ aff }: { aff?: string | null }) {
  const { t } = useTranslation();
  const { status, setUser } = useApp();
  const navigate = useNavigate();
  const [wechatOpen, setWechatOpen] = useState(false);
  const [wechatCode, setWechatCode] = useState("");
  if (!anyThirdParty(status)) return null;

  const wechatLogin = async () => {
    const r = await api.get<StoredUser>(`/api/oauth/wechat${qs({ code: wechatCode })}`);
    if (r.success && r.data) {
      setUser(r.data);
      setWechatOpen(false);
      Message.success(t("auth.loginSuccess"));
      navigate("/");
    } else Message.error(r.message);
  };

  return (
    <div className="sy-oauth">
      <Divider>{t("auth.orThirdParty")}</Divider>
      <Space wrap style={{ justifyContent: "center", width: "100%" }}>
        {status.github_oauth && (
          <Button icon={<IconGithub />} onClick={() => void startOAuth("github", status, aff)}>{t("auth.withGitHub")}</Button>
        )}
        {status.oidc_enabled && <Button onClick={() => void startOAuth("oidc", status, aff)}>{t("auth.withOIDC")}</Button>}
        {status.linuxdo_oauth && <Button onClick={() => void startOAuth("linuxdo", status, aff)}>{t("auth.withLinuxDO")}</Button>}
        {status.wechat_login && (
          <Button icon={<IconWechat />} onClick={() => setWechatOpen(true)}>{t("auth.withWeChat")}</Button>
        )}
        {status.telegram_oauth && <TelegramWidget bot={String(status.telegram_bot_name ?? "")} authUrl="/api/oauth/telegram/login" />}
      </Space>
      <Modal title={t("auth.withWeChat")} visible={wechatOpen} onOk={() => void wechatLogin()} onCancel={() => setWechatOpen(false)}>
        {status.wechat_qrcode && <img src={String(status.wechat_qrcode)} alt="" style={{ maxWidth: 200, display: "block", margin: "0 auto 12px" }} />}
        <p>{t("auth.wechatHint")}</p>
        <Input placeholder={t("auth.verificationCode")} value={wechatCode} onChange={setWechatCode} />
      </Modal>
    </div>
  );
}
