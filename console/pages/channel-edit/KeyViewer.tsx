// "View key" in the channel form (super admin only): keys are never sent with the channel, so reading one
// asks for a fresh proof — the account password, a two-factor code, or a passkey — and the server logs
// every view (POST /api/channel/{id}/key).
import { useState } from "react";
import { Button, Input, Message, Modal, Radio, Space, Typography } from "@arco-design/web-react";
import { IconEye } from "@arco-design/web-react/icon";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { isRoot, useApp } from "../../lib/app-state.tsx";
import { passkeySupported, verifyWithPasskey } from "../../lib/passkey.ts";
import { copyWithFallback } from "../../components/copy.tsx";

export function KeyViewer({ channelId }: { channelId: number }) {
  const { t } = useTranslation();
  const { user, status } = useApp();
  const [open, setOpen] = useState(false);
  const [method, setMethod] = useState<"password" | "code">("password");
  const [secret, setSecret] = useState("");
  const [key, setKey] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  if (!isRoot(user)) return null;

  const close = () => {
    setOpen(false);
    setSecret("");
    setKey(null);
  };
  const fetchKey = async (body: Record<string, string>) => {
    setBusy(true);
    const r = await api.post<{ key: string }>(`/api/channel/${channelId}/key`, body);
    setBusy(false);
    if (!r.success || !r.data) return Message.error(r.message);
    setSecret("");
    setKey(r.data.key);
  };
  const submit = () => {
    if (!secret.trim()) Message.warning(t(method === "password" ? "keyView.passwordRequired" : "twofa.codeRequired"));
    else void fetchKey(method === "password" ? { password: secret } : { code: secret.trim() });
  };
  const withPasskey = async () => {
    const r = await verifyWithPasskey();
    if (!r.success) return Message.error(r.message);
    void fetchKey({});
  };

  return (
    <>
      <Button size="mini" type="text" icon={<IconEye />} onClick={() => setOpen(true)} data-testid="view-key">
        {t("keyView.button")}
      </Button>
      <Modal
        title={t("keyView.title")}
        visible={open}
        onCancel={close}
        footer={key !== null ? <Button onClick={close}>{t("keyView.close")}</Button> : undefined}
        onOk={submit}
        okText={t("keyView.show")}
        confirmLoading={busy}
      >
        {key === null ? (
          <Space direction="vertical" style={{ width: "100%" }}>
            <Typography.Text type="secondary">{t("keyView.hint")}</Typography.Text>
            <Radio.Group
              type="button"
              value={method}
              onChange={(m) => {
                setMethod(m);
                setSecret("");
              }}
            >
              <Radio value="password">{t("keyView.withPassword")}</Radio>
              <Radio value="code">{t("keyView.withCode")}</Radio>
            </Radio.Group>
            {method === "password" ? (
              <Input.Password
                name="key-view-password"
                autoComplete="current-password"
                value={secret}
                onChange={setSecret}
                onPressEnter={submit}
              />
            ) : (
              <Input
                name="key-view-code"
                autoComplete="one-time-code"
                value={secret}
                onChange={setSecret}
                onPressEnter={submit}
                placeholder={t("twofa.codePlaceholder")}
              />
            )}
            {!!status.passkey_login && passkeySupported() && (
              <Button onClick={() => void withPasskey()}>{t("keyView.withPasskey")}</Button>
            )}
          </Space>
        ) : (
          <Space direction="vertical" style={{ width: "100%" }}>
            <Input.TextArea readOnly value={key} autoSize={{ minRows: 1, maxRows: 10 }} data-testid="revealed-key" />
            <Typography.Text type="secondary">{t("keyView.logged")}</Typography.Text>
            <Button size="small" onClick={() => void copyWithFallback(key)}>
              {t("keyView.copy")}
            </Button>
          </Space>
        )}
      </Modal>
    </>
  );
}
