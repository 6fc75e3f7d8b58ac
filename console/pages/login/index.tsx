// Login (spec 000 §2.3, §5, §7.2): username or email and password, third-party buttons per status
// flags, optional Turnstile. Success stores the user and goes to /token.
import React, { useEffect, useState } from "react";
import { Alert, Button, Form, Input, Message, Modal } from "@arco-design/web-react";
import { Link, useNavigate, useSearchParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, qs, translateServerMessage } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import { AuthCard, fieldError } from "../../components/AuthCard.tsx";
import { OAuthButtons } from "../../components/OAuthButtons.tsx";
import { Turnstile } from "../../components/Turnstile.tsx";
import type { StoredUser } from "../../lib/storage.ts";
import { DEFAULT_ROOT_PASSWORD, DEFAULT_ROOT_USERNAME } from "../../../server/catalogue/index.ts";

/** The server's login message for an account still on the default password. */
const DEFAULT_PASSWORD_WARNING = "you are using the default password, change it immediately";

export function validateLogin(username: string, password: string): string | null {
  return username.trim() && password ? null : "login.required";
}

export default function LoginPage() {
  const { t } = useTranslation();
  const { status, setUser } = useApp();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [turnstileToken, setTurnstileToken] = useState("");
  const [loading, setLoading] = useState(false);
  const expired = params.get("expired") === "true";

  useEffect(() => {
    if (expired) Message.warning(t("login.expired"));
  }, [expired]);

  const submit = async () => {
    const problem = validateLogin(username, password);
    setError(problem);
    if (problem) return;
    if (status.turnstile_check && !turnstileToken) {
      Message.info(t("auth.turnstileWait"));
      return;
    }
    setLoading(true);
    const r = await api.post<StoredUser>(`/api/user/login${qs({ turnstile: turnstileToken })}`, { username: username.trim(), password });
    setLoading(false);
    if (!r.success || !r.data) {
      Message.error(r.message || t("login.failed"));
      return;
    }
    setUser(r.data);
    Message.success(t("auth.loginSuccess"));
    const serverWarns = r.message !== "" && r.message === translateServerMessage(DEFAULT_PASSWORD_WARNING);
    if (serverWarns || (username.trim() === DEFAULT_ROOT_USERNAME && password === DEFAULT_ROOT_PASSWORD)) {
      Modal.warning({ title: t("login.defaultPasswordTitle"), content: t("login.defaultPassword") });
    }
    navigate("/token");
  };

  const passwordLogin = status.password_login_enabled !== false;
  return (
    <AuthCard title={t("login.title")}>
      {expired && <Alert type="warning" content={t("login.expired")} style={{ marginBottom: 16 }} />}
      {passwordLogin && (
        <Form layout="vertical" onSubmit={() => void submit()}>
          <Form.Item label={t("login.username")} {...fieldError(error && !username.trim() ? t(error) : null)}>
            <Input name="username" autoComplete="username" placeholder={t("login.usernamePlaceholder")} value={username}
              onChange={(v) => { setUsername(v); if (error) setError(validateLogin(v, password)); }} />
          </Form.Item>
          <Form.Item label={t("login.password")} {...fieldError(error && !password ? t(error) : null)}>
            <Input.Password name="password" autoComplete="current-password" placeholder={t("login.passwordPlaceholder")} value={password}
              onChange={(v) => { setPassword(v); if (error) setError(validateLogin(username, v)); }} onPressEnter={() => void submit()} />
          </Form.Item>
          {status.turnstile_check && status.turnstile_site_key && (
            <Turnstile siteKey={String(status.turnstile_site_key)} onToken={setTurnstileToken} />
          )}
          <Button type="primary" long htmlType="submit" loading={loading}>{t("login.submit")}</Button>
        </Form>
      )}
      <div className="sy-auth-links">
        {!status.self_use_mode_enabled && <span>{t("login.noAccount")} <Link to="/register">{t("login.toRegister")}</Link></span>}
        <span>{t("login.forgot")} <Link to="/reset">{t("login.toReset")}</Link></span>
      </div>
      <OAuthButtons />
    </AuthCard>
  );
}
