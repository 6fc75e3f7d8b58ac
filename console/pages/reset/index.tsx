// Password reset request (spec 000 §2.1, 001 §2): email required; 30-second cooldown after a send.
import { useState } from "react";
import { Button, Form, Input, Message } from "@arco-design/web-react";
import { Link } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, qs } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import { useCountdown } from "../../lib/hooks.ts";
import { AuthCard, fieldError } from "../../components/AuthCard.tsx";
import { Turnstile } from "../../components/Turnstile.tsx";

export default function ResetRequestPage() {
  const { t } = useTranslation();
  const { status } = useApp();
  const [email, setEmail] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [turnstileToken, setTurnstileToken] = useState("");
  const [loading, setLoading] = useState(false);
  const countdown = useCountdown(30);

  const submit = async () => {
    if (!email.trim()) {
      setError(t("reset.emailRequired"));
      return;
    }
    setError(null);
    if (status.turnstile_check && !turnstileToken) {
      Message.info(t("reset.turnstileWait"));
      return;
    }
    setLoading(true);
    const r = await api.get(`/api/reset_password${qs({ email: email.trim(), turnstile: turnstileToken })}`);
    setLoading(false);
    if (r.success) {
      Message.success(t("reset.sent"));
      countdown.start();
    } else Message.error(r.message);
  };

  return (
    <AuthCard title={t("reset.title")}>
      <Form layout="vertical" onSubmit={() => void submit()}>
        <Form.Item label={t("reset.email")} {...fieldError(error)}>
          <Input
            name="email"
            value={email}
            onChange={(v) => {
              setEmail(v);
              if (v.trim()) setError(null);
            }}
          />
        </Form.Item>
        {status.turnstile_check && status.turnstile_site_key && (
          <Turnstile siteKey={String(status.turnstile_site_key)} onToken={setTurnstileToken} />
        )}
        <Button type="primary" long htmlType="submit" loading={loading} disabled={countdown.left > 0}>
          {countdown.left > 0 ? t("reset.retryIn", { n: countdown.left }) : t("reset.submit")}
        </Button>
      </Form>
      <div className="sy-auth-links">
        <Link to="/login">{t("register.toLogin")}</Link>
      </div>
    </AuthCard>
  );
}
