// First-run wizard (spec 000 §2.5, §4, §5): admin account (only when none exists) and usage mode.
import { useEffect, useState } from "react";
import { Alert, Button, Form, Input, Message, Radio, Spin, Typography } from "@arco-design/web-react";
import { Navigate } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import { AuthCard, fieldError } from "../../components/AuthCard.tsx";
import { landingAfterSignIn, needsSecondFactor } from "../../lib/signin.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, USERNAME_MAX_LENGTH } from "../../../server/catalogue/index.ts";

export type UsageMode = "external" | "self" | "demo";
interface SetupState {
  status: boolean;
  root_init: boolean;
  database_type: string;
}
export interface SetupForm {
  username: string;
  password: string;
  confirmPassword: string;
  mode: UsageMode;
}

export function validateSetup(f: SetupForm, rootInit: boolean): Partial<Record<keyof SetupForm, string>> {
  if (rootInit) return {};
  const e: Partial<Record<keyof SetupForm, string>> = {};
  // The same account rules as registration (the server holds the admin to them too).
  if (!f.username.trim()) e.username = "setup.usernameRequired";
  else if (f.username.trim().length > USERNAME_MAX_LENGTH) e.username = "register.usernameTooLong";
  if (f.password.length < PASSWORD_MIN_LENGTH) e.password = "setup.passwordShort";
  else if (f.password.length > PASSWORD_MAX_LENGTH) e.password = "register.passwordLong";
  if (f.confirmPassword !== f.password) e.confirmPassword = "setup.mismatch";
  return e;
}

/** The wire body: the mode itself is not sent, only the two flags it implies. */
export function setupBody(f: SetupForm, rootInit: boolean) {
  return {
    ...(rootInit ? {} : { username: f.username.trim(), password: f.password, confirmPassword: f.confirmPassword }),
    SelfUseModeEnabled: f.mode === "self",
    DemoSiteEnabled: f.mode === "demo",
  };
}

export const RELOAD_DELAY_MS = 1500;
/** The full page load after setup, to `to` (a seam so component tests can observe it instead of navigating). */
export const afterSetup = { reload: (to: string) => location.assign(to) };
/** Where the new admin carries on: adding the first channel. */
export const FIRST_STOP = "/channel";

export default function SetupPage() {
  const { t } = useTranslation();
  const { refreshStatus, setUser } = useApp();
  const [state, setState] = useState<SetupState | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [form, setForm] = useState<SetupForm>({ username: "", password: "", confirmPassword: "", mode: "external" });
  const [errors, setErrors] = useState<Partial<Record<keyof SetupForm, string>>>({});
  const [touched, setTouched] = useState(false);
  const [saving, setSaving] = useState(false);
  const [done, setDone] = useState(false);

  useEffect(() => {
    void api.get<SetupState>("/api/setup").then((r) => {
      if (r.success && r.data) setState(r.data);
      else setLoadError(r.message || t("setup.loadFailed"));
    });
  }, []);

  if (loadError)
    return (
      <AuthCard title={t("setup.title")}>
        <Alert type="error" content={`${t("setup.loadFailed")}: ${loadError}`} />
      </AuthCard>
    );
  if (!state)
    return (
      <AuthCard title={t("setup.title")}>
        <Spin />
      </AuthCard>
    );
  if (state.status && !done) return <Navigate to="/" replace />;

  const set = (k: keyof SetupForm) => (v: string) => {
    const next = { ...form, [k]: v } as SetupForm;
    setForm(next);
    if (touched) setErrors(validateSetup(next, state.root_init));
  };

  const submit = async () => {
    setTouched(true);
    const e = validateSetup(form, state.root_init);
    setErrors(e);
    if (Object.keys(e).length) return;
    setSaving(true);
    const r = await api.post("/api/setup", setupBody(form, state.root_init));
    setSaving(false);
    if (!r.success) {
      Message.error(r.status === 0 ? t("setup.failed") : r.message || t("setup.failed"));
      return;
    }
    setDone(true);
    Message.success(t("setup.done"));
    // The admin just chosen is signed in with the password just typed, so the operator carries on in the
    // console instead of landing logged out on the home page; otherwise (an existing admin, or a sign-in
    // that needs more) the login page.
    let to = "/login";
    if (!state.root_init) {
      const login = await api.post("/api/user/login", { username: form.username.trim(), password: form.password });
      if (login.success && login.data && !needsSecondFactor(login.data)) {
        setUser(login.data);
        to = landingAfterSignIn(login.data, FIRST_STOP);
      }
    }
    setTimeout(() => {
      void refreshStatus().then(() => afterSetup.reload(to));
    }, RELOAD_DELAY_MS);
  };

  const err = (k: keyof SetupForm) =>
    fieldError(errors[k] ? t(errors[k]!, { min: PASSWORD_MIN_LENGTH, max: USERNAME_MAX_LENGTH }) : null);
  return (
    <AuthCard title={t("setup.title")} width={520}>
      <Typography.Paragraph type="secondary">{t("setup.intro", { db: state.database_type })}</Typography.Paragraph>
      {done && <Alert type="success" content={t("setup.done")} style={{ marginBottom: 12 }} />}
      <Form layout="vertical" onSubmit={() => void submit()}>
        {!state.root_init ? (
          <>
            <Typography.Title heading={6}>{t("setup.adminAccount")}</Typography.Title>
            <Form.Item label={t("setup.username")} {...err("username")}>
              <Input name="username" value={form.username} onChange={set("username")} />
            </Form.Item>
            <Form.Item label={t("setup.password")} {...err("password")}>
              <Input.Password
                name="password"
                value={form.password}
                onChange={set("password")}
                placeholder={t("setup.passwordPlaceholder", { min: PASSWORD_MIN_LENGTH })}
              />
            </Form.Item>
            <Form.Item label={t("setup.confirmPassword")} {...err("confirmPassword")}>
              <Input.Password name="confirmPassword" value={form.confirmPassword} onChange={set("confirmPassword")} />
            </Form.Item>
          </>
        ) : (
          <Alert type="info" content={t("setup.adminExists")} style={{ marginBottom: 12 }} />
        )}
        <Typography.Title heading={6}>{t("setup.usageMode")}</Typography.Title>
        <Form.Item>
          <Radio.Group direction="vertical" value={form.mode} onChange={(v) => set("mode")(v)}>
            <Radio value="external">{t("setup.modeExternal")}</Radio>
            <Radio value="self">{t("setup.modeSelf")}</Radio>
            <Radio value="demo">{t("setup.modeDemo")}</Radio>
          </Radio.Group>
        </Form.Item>
        <Button type="primary" long htmlType="submit" loading={saving} disabled={done}>
          {t("setup.submit")}
        </Button>
      </Form>
    </AuthCard>
  );
}
