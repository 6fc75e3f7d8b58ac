// Registration (spec 000 §2.4, §5, §7.2). Hidden in self-use mode. With email verification on, an
// email and a code are required; the send-code button counts down 30 seconds before a resend.
import { useEffect, useState } from "react";
import { Alert, Button, Form, Input, Message } from "@arco-design/web-react";
import { Link, useNavigate, useSearchParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, qs } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import { useCountdown } from "../../lib/hooks.ts";
import { AuthCard, fieldError } from "../../components/AuthCard.tsx";
import { OAuthButtons } from "../../components/OAuthButtons.tsx";
import { Turnstile } from "../../components/Turnstile.tsx";
import { KEYS, readString, writeString } from "../../lib/storage.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, USERNAME_MAX_LENGTH } from "../../../server/catalogue/index.ts";

export const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const RESEND_SECONDS = 30;

export interface RegisterForm {
  username: string;
  password: string;
  password2: string;
  email: string;
  code: string;
}
export type RegisterErrors = Partial<Record<keyof RegisterForm, string>>;

/** Returns i18n keys of the problems per field. */
export function validateRegister(f: RegisterForm, emailVerification: boolean): RegisterErrors {
  const e: RegisterErrors = {};
  if (!f.username.trim()) e.username = "register.required";
  else if (f.username.trim().length > USERNAME_MAX_LENGTH) e.username = "register.usernameTooLong";
  if (!f.password) e.password = "register.required";
  else if (f.password.length < PASSWORD_MIN_LENGTH) e.password = "register.passwordShort";
  else if (f.password.length > PASSWORD_MAX_LENGTH) e.password = "register.passwordLong";
  if (f.password2 !== f.password) e.password2 = "register.mismatch";
  if (emailVerification) {
    if (!EMAIL_RE.test(f.email.trim())) e.email = "register.emailInvalid";
    if (!f.code.trim()) e.code = "register.codeRequired";
  }
  return e;
}

export default function RegisterPage() {
  const { t } = useTranslation();
  const { status } = useApp();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [form, setForm] = useState<RegisterForm>({ username: "", password: "", password2: "", email: "", code: "" });
  const [errors, setErrors] = useState<RegisterErrors>({});
  const [touched, setTouched] = useState(false);
  const [turnstileToken, setTurnstileToken] = useState("");
  const [loading, setLoading] = useState(false);
  const [sending, setSending] = useState(false);
  const countdown = useCountdown(RESEND_SECONDS);
  const emailVerification = !!status.email_verification;

  useEffect(() => {
    const aff = params.get("aff");
    if (aff) writeString(KEYS.affCode, aff);
  }, [params]);

  const set = (k: keyof RegisterForm) => (v: string) => {
    const next = { ...form, [k]: v };
    setForm(next);
    if (touched) setErrors(validateRegister(next, emailVerification));
  };

  const needTurnstile = () => {
    if (status.turnstile_check && !turnstileToken) {
      Message.info(t("auth.turnstileWait"));
      return true;
    }
    return false;
  };

  const sendCode = async () => {
    const email = form.email.trim();
    if (!email) return;
    if (!EMAIL_RE.test(email)) {
      setErrors({ ...errors, email: "register.emailInvalid" });
      return;
    }
    if (needTurnstile()) return;
    setSending(true);
    const r = await api.get(`/api/verification${qs({ email, turnstile: turnstileToken })}`);
    setSending(false);
    if (r.success) {
      Message.success(t("register.codeSent"));
      countdown.start();
    } else Message.error(r.message);
  };

  const submit = async () => {
    setTouched(true);
    const e = validateRegister(form, emailVerification);
    setErrors(e);
    if (Object.keys(e).length) return;
    if (needTurnstile()) return;
    setLoading(true);
    const r = await api.post(`/api/user/register${qs({ turnstile: turnstileToken })}`, {
      username: form.username.trim(),
      password: form.password,
      password2: form.password2,
      email: emailVerification ? form.email.trim() : "",
      verification_code: form.code.trim(),
      aff_code: readString(KEYS.affCode) ?? "",
    });
    setLoading(false);
    if (r.success) {
      Message.success(t("register.success"));
      navigate("/login");
    } else Message.error(r.message);
  };

  if (status.self_use_mode_enabled || status.register_enabled === false) {
    return (
      <AuthCard title={t("register.title")}>
        <Alert type="warning" content={t("register.closed")} />
        <div className="sy-auth-links">
          <Link to="/login">{t("register.toLogin")}</Link>
        </div>
      </AuthCard>
    );
  }

  const err = (k: keyof RegisterForm) =>
    fieldError(errors[k] ? t(errors[k]!, { min: PASSWORD_MIN_LENGTH, max: USERNAME_MAX_LENGTH }) : null);
  return (
    <AuthCard title={t("register.title")}>
      <Form layout="vertical" onSubmit={() => void submit()}>
        <Form.Item label={t("register.username")} {...err("username")}>
          <Input
            name="username"
            placeholder={t("register.usernamePlaceholder", { max: USERNAME_MAX_LENGTH })}
            value={form.username}
            onChange={set("username")}
          />
        </Form.Item>
        <Form.Item label={t("register.password")} {...err("password")}>
          <Input.Password
            name="password"
            placeholder={t("register.passwordPlaceholder", { min: PASSWORD_MIN_LENGTH, max: PASSWORD_MAX_LENGTH })}
            value={form.password}
            onChange={set("password")}
          />
        </Form.Item>
        <Form.Item label={t("register.password2")} {...err("password2")}>
          <Input.Password name="password2" value={form.password2} onChange={set("password2")} />
        </Form.Item>
        {emailVerification && (
          <>
            <Form.Item label={t("register.email")} {...err("email")}>
              <Input
                name="email"
                value={form.email}
                onChange={set("email")}
                addAfter={
                  <Button
                    type="text"
                    size="mini"
                    data-testid="send-code"
                    disabled={countdown.left > 0 || sending}
                    loading={sending}
                    onClick={() => void sendCode()}
                  >
                    {countdown.left > 0 ? t("register.resend", { n: countdown.left }) : t("register.sendCode")}
                  </Button>
                }
              />
            </Form.Item>
            <Form.Item label={t("register.code")} {...err("code")}>
              <Input name="code" value={form.code} onChange={set("code")} />
            </Form.Item>
          </>
        )}
        {status.turnstile_check && status.turnstile_site_key && (
          <Turnstile siteKey={String(status.turnstile_site_key)} onToken={setTurnstileToken} />
        )}
        <Button type="primary" long htmlType="submit" loading={loading}>
          {t("register.submit")}
        </Button>
      </Form>
      <div className="sy-auth-links">
        <span>
          {t("register.haveAccount")} <Link to="/login">{t("register.toLogin")}</Link>
        </span>
      </div>
      <OAuthButtons aff={readString(KEYS.affCode)} />
    </AuthCard>
  );
}
