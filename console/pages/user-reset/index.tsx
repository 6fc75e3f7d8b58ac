// Password reset confirmation: the emailed link carries email and token; the server answers with a
// new password, which is shown and copied to the clipboard.
import { useState } from "react";
import { Alert, Button, Input, Message, Space } from "@arco-design/web-react";
import { Link, useSearchParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { AuthCard } from "../../components/AuthCard.tsx";
import { copyWithFallback } from "../../components/copy.tsx";

export default function ResetConfirmPage() {
  const { t } = useTranslation();
  const [params] = useSearchParams();
  const email = params.get("email") ?? "";
  const token = params.get("token") ?? "";
  const [password, setPassword] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);

  const confirm = async () => {
    setLoading(true);
    const r = await api.post<string>("/api/user/reset", { email, token });
    setLoading(false);
    if (r.success && r.data) {
      setPassword(r.data);
      await copyWithFallback(r.data, t("reset.newPasswordCopied"));
    } else Message.error(r.message);
  };

  return (
    <AuthCard title={t("reset.confirmTitle")}>
      {!email || !token ? (
        <Alert type="error" content={t("reset.linkInvalid")} />
      ) : (
        <Space direction="vertical" style={{ width: "100%" }}>
          <Input value={email} readOnly />
          {password ? (
            <Alert
              type="success"
              content={
                <span>
                  {t("reset.newPassword")}: <code data-testid="new-password">{password}</code>
                </span>
              }
            />
          ) : (
            <Button type="primary" long loading={loading} onClick={() => void confirm()}>
              {t("reset.confirm")}
            </Button>
          )}
        </Space>
      )}
      <div className="sy-auth-links">
        <Link to="/login">{t("register.toLogin")}</Link>
      </div>
    </AuthCard>
  );
}
