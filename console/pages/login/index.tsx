// Login (spec 000 §2.3, §5, §7.2): username or email and password, third-party buttons per status
// flags, optional Turnstile, "sign in with a passkey" when passkeys are on. A user with two-factor
// sign-in on then gives the authenticator's code (or a backup code). Success stores the user and goes to /token.
import { useEffect, useState } from "react";
import { Alert, Button, Form, Input, Message, Modal, Typography } from "@arco-design/web-react";
import { IconSafe } from "@arco-design/web-react/icon";
import { Link, useLocation, useNavigate, useSearchParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, qs, translateServerMessage } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import { AuthCard, fieldError } from "../../components/AuthCard.tsx";
import { OAuthButtons } from "../../components/OAuthButtons.tsx";
import { Turnstile } from "../../components/Turnstile.tsx";
import type { StoredUser } from "../../lib/storage.ts";
import { landingAfterSignIn, needsSecondFactor } from "../../lib/signin.ts";
import { passkeySupported, signInWithPasskey } from "../../lib/passkey.ts";
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
  // A pending sign-in waiting for its two-factor code: from this form, or handed over by a third-party sign-in.
  const handedOver = (useLocation().state as { flow_token?: string } | null)?.flow_token ?? null;
  const [pending, setPending] = useState<string | null>(handedOver);
  const [code, setCode] = useState("");

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
    const r = await api.post<StoredUser>(`/api/user/login${qs({ turnstile: turnstileToken })}`, {
      username: username.trim(),
      password,
    });
    setLoading(false);
    if (!r.success || !r.data) {
      Message.error(r.message || t("login.failed"));
      return;
    }
    if (needsSecondFactor(r.data)) {
      setPending(r.data.flow_token);
      return;
    }
    const serverWarns = r.message !== "" && r.message === translateServerMessage(DEFAULT_PASSWORD_WARNING);
    signedIn(r.data, serverWarns || (username.trim() === DEFAULT_ROOT_USERNAME && password === DEFAULT_ROOT_PASSWORD));
  };

  const signedIn = (user: StoredUser, defaultPassword = false) => {
    setUser(user);
    Message.success(t("auth.loginSuccess"));
    if (defaultPassword) Modal.warning({ title: t("login.defaultPasswordTitle"), content: t("login.defaultPassword") });
    navigate(landingAfterSignIn(user, "/token"));
  };

  /** The second step: the authenticator's code (or a backup code) for the pending sign-in. */
  const submitCode = async () => {
    if (!code.trim()) {
      Message.warning(t("twofa.codeRequired"));
      return;
    }
    setLoading(true);
    const r = await api.post<StoredUser>("/api/user/login/2fa", { code: code.trim(), flow_token: pending });
    setLoading(false);
    if (!r.success || !r.data) {
      Message.error(r.message || t("login.failed"));
      return;
    }
    signedIn(r.data);
  };

  const passkey = async () => {
    const r = await signInWithPasskey();
    if (!r.success || !r.data) Message.error(r.message);
    else signedIn(r.data as StoredUser);
  };

  if (pending) {
    return (
      <AuthCard title={t("twofa.loginTitle")}>
        <Form layout="vertical" onSubmit={() => void submitCode()}>
          <Typography.Paragraph>{t("twofa.loginHint")}</Typography.Paragraph>
          <Form.Item label={t("twofa.code")}>
            <Input
              name="code"
              autoFocus
              autoComplete="one-time-code"
              placeholder={t("twofa.codePlaceholder")}
              value={code}
              onChange={setCode}
              onPressEnter={() => void submitCode()}
            />
          </Form.Item>
          <Button type="primary" long htmlType="submit" loading={loading}>
            {t("twofa.verify")}
          </Button>
          <Button
            type="text"
            long
            style={{ marginTop: 8 }}
            onClick={() => {
              setPending(null);
              setCode("");
            }}
          >
            {t("twofa.back")}
          </Button>
        </Form>
      </AuthCard>
    );
  }

  const passwordLogin = status.password_login_enabled !== false;
  return (
    <AuthCard title={t("login.title")}>
      {expired && <Alert type="warning" content={t("login.expired")} style={{ marginBottom: 16 }} />}
      {passwordLogin && (
        <Form layout="vertical" onSubmit={() => void submit()}>
          <Form.Item label={t("login.username")} {...fieldError(error && !username.trim() ? t(error) : null)}>
            <Input
              name="username"
              autoComplete="username"
              placeholder={t("login.usernamePlaceholder")}
              value={username}
              onChange={(v) => {
                setUsername(v);
                if (error) setError(validateLogin(v, password));
              }}
            />
          </Form.Item>
          <Form.Item label={t("login.password")} {...fieldError(error && !password ? t(error) : null)}>
            <Input.Password
              name="password"
              autoComplete="current-password"
              placeholder={t("login.passwordPlaceholder")}
              value={password}
              onChange={(v) => {
                setPassword(v);
                if (error) setError(validateLogin(username, v));
              }}
              onPressEnter={() => void submit()}
            />
          </Form.Item>
          {status.turnstile_check && status.turnstile_site_key && (
            <Turnstile siteKey={String(status.turnstile_site_key)} onToken={setTurnstileToken} />
          )}
          <Button type="primary" long htmlType="submit" loading={loading}>
            {t("login.submit")}
          </Button>
        </Form>
      )}
      {!!status.passkey_login && passkeySupported() && (
        <Button
          long
          style={{ marginTop: 12 }}
          icon={<IconSafe />}
          onClick={() => void passkey()}
          data-testid="passkey-login"
        >
          {t("passkey.signIn")}
        </Button>
      )}
      <div className="sy-auth-links">
        {!status.self_use_mode_enabled && (
          <span>
            {t("login.noAccount")} <Link to="/register">{t("login.toRegister")}</Link>
          </span>
        )}
        <span>
          {t("login.forgot")} <Link to="/reset">{t("login.toReset")}</Link>
        </span>
      </div>
      <OAuthButtons />
    </AuthCard>
  );
}
