// Personal settings → two-factor sign-in and passkeys (new-api's /api/user/2fa/* and /api/user/passkey).
// Setting up 2FA shows the QR code (drawn here from the otpauth:// URI the server answers), the secret for
// typing in by hand and the one-use backup codes; a code from the app turns it on.
import { useEffect, useState } from "react";
import { Alert, Button, Card, Input, Message, Modal, Space, Tag, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import QRCode from "qrcode";
import { api } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import { copyWithFallback } from "../../components/copy.tsx";
import { passkeySupported, registerPasskey } from "../../lib/passkey.ts";

/** Modal texts wrap between words (Arco's typography breaks anywhere by default). */
const WRAP = { wordBreak: "normal", overflowWrap: "anywhere" } as const;

interface TwoFAStatus {
  enabled: boolean;
  locked: boolean;
  backup_codes_remaining?: number;
}
interface SetupData {
  secret: string;
  qr_code_data: string;
  backup_codes: string[];
}

/** The QR code of an otpauth:// URI as an SVG image (no canvas needed). */
export function QrImage({ text, size = 180 }: { text: string; size?: number }) {
  const [src, setSrc] = useState("");
  useEffect(() => {
    void QRCode.toString(text, { type: "svg", margin: 1, errorCorrectionLevel: "M" }).then((svg) =>
      setSrc(`data:image/svg+xml;utf8,${encodeURIComponent(svg)}`),
    );
  }, [text]);
  return src ? <img src={src} width={size} height={size} alt="QR" data-testid="totp-qr" /> : null;
}

function BackupCodes({ codes }: { codes: string[] }) {
  const { t } = useTranslation();
  return (
    <div data-testid="backup-codes">
      <Typography.Text type="secondary">{t("twofa.backupHint")}</Typography.Text>
      <pre style={{ fontFamily: "monospace", columns: 2, margin: "8px 0" }}>{codes.join("\n")}</pre>
      <Button size="small" onClick={() => void copyWithFallback(codes.join("\n"))}>
        {t("twofa.copyCodes")}
      </Button>
    </div>
  );
}

/** A modal asking for one code, then calling `submit` with it. */
function CodeDialog({
  title,
  hint,
  visible,
  onClose,
  submit,
}: {
  title: string;
  hint: string;
  visible: boolean;
  onClose: () => void;
  submit: (code: string) => Promise<boolean>;
}) {
  const { t } = useTranslation();
  const [code, setCode] = useState("");
  const [busy, setBusy] = useState(false);
  const go = async () => {
    if (!code.trim()) return Message.warning(t("twofa.codeRequired"));
    setBusy(true);
    const done = await submit(code.trim());
    setBusy(false);
    if (done) setCode("");
  };
  return (
    <Modal title={title} visible={visible} onOk={() => void go()} confirmLoading={busy} onCancel={onClose}>
      <Typography.Paragraph style={WRAP}>{hint}</Typography.Paragraph>
      <Input
        name="twofa-code"
        autoComplete="one-time-code"
        value={code}
        onChange={setCode}
        onPressEnter={() => void go()}
        placeholder={t("twofa.codePlaceholder")}
      />
    </Modal>
  );
}

export function TwoFactorCard({ autoStart = false }: { autoStart?: boolean }) {
  const { t } = useTranslation();
  const [status, setStatus] = useState<TwoFAStatus | null>(null);
  const [setup, setSetup] = useState<SetupData | null>(null);
  const [code, setCode] = useState("");
  const [dialog, setDialog] = useState<"" | "disable" | "regenerate">("");
  const [freshCodes, setFreshCodes] = useState<string[] | null>(null);

  const load = async () => {
    const r = await api.get<TwoFAStatus>("/api/user/2fa/status");
    if (r.success && r.data) setStatus(r.data);
  };
  const start = async () => {
    const r = await api.post<SetupData>("/api/user/2fa/setup");
    if (!r.success || !r.data) return Message.error(r.message);
    setCode("");
    setSetup(r.data);
  };
  useEffect(() => {
    void load();
  }, []);
  useEffect(() => {
    if (autoStart && status && !status.enabled && !setup) void start();
  }, [autoStart, status]);

  const enable = async () => {
    if (!/^\d{6}$/.test(code.trim())) return Message.warning(t("twofa.sixDigits"));
    const r = await api.post("/api/user/2fa/enable", { code: code.trim() });
    if (!r.success) return Message.error(r.message);
    Message.success(t("twofa.enabled"));
    setSetup(null);
    void load();
  };
  const disable = async (c: string) => {
    const r = await api.post("/api/user/2fa/disable", { code: c });
    if (!r.success) {
      Message.error(r.message);
      return false;
    }
    Message.success(t("twofa.disabled"));
    setDialog("");
    void load();
    return true;
  };
  const regenerate = async (c: string) => {
    const r = await api.post<{ backup_codes: string[] }>("/api/user/2fa/backup_codes", { code: c });
    if (!r.success || !r.data) {
      Message.error(r.message);
      return false;
    }
    setDialog("");
    setFreshCodes(r.data.backup_codes);
    void load();
    return true;
  };

  return (
    <Card title={t("twofa.title")} bordered={false} data-testid="twofa-card">
      <Space direction="vertical" style={{ width: "100%" }}>
        <Typography.Text type="secondary">{t("twofa.intro")}</Typography.Text>
        {status && (
          <Space wrap>
            {status.enabled ? <Tag color="green">{t("twofa.on")}</Tag> : <Tag>{t("twofa.off")}</Tag>}
            {status.locked && <Tag color="red">{t("twofa.locked")}</Tag>}
            {status.enabled && <span>{t("twofa.remaining", { n: status.backup_codes_remaining ?? 0 })}</span>}
          </Space>
        )}
        {status && !status.enabled && (
          <Button type="primary" onClick={() => void start()}>
            {t("twofa.setUp")}
          </Button>
        )}
        {status?.enabled && (
          <Space wrap>
            <Button onClick={() => setDialog("regenerate")}>{t("twofa.regenerate")}</Button>
            <Button status="danger" onClick={() => setDialog("disable")}>
              {t("twofa.disable")}
            </Button>
          </Space>
        )}
      </Space>

      <Modal
        title={t("twofa.setUpTitle")}
        visible={!!setup}
        onCancel={() => setSetup(null)}
        onOk={() => void enable()}
        okText={t("twofa.enable")}
      >
        {setup && (
          <Space direction="vertical" style={{ width: "100%" }}>
            <Typography.Paragraph style={WRAP}>{t("twofa.scan")}</Typography.Paragraph>
            <QrImage text={setup.qr_code_data} />
            <Typography.Text>
              {t("twofa.secret")}:{" "}
              <Typography.Text code copyable data-testid="totp-secret">
                {setup.secret}
              </Typography.Text>
            </Typography.Text>
            <BackupCodes codes={setup.backup_codes} />
            <Input
              name="totp-code"
              autoComplete="one-time-code"
              value={code}
              onChange={setCode}
              onPressEnter={() => void enable()}
              placeholder={t("twofa.sixDigits")}
            />
          </Space>
        )}
      </Modal>
      <CodeDialog
        title={t("twofa.disable")}
        hint={t("twofa.disableHint")}
        visible={dialog === "disable"}
        onClose={() => setDialog("")}
        submit={disable}
      />
      <CodeDialog
        title={t("twofa.regenerate")}
        hint={t("twofa.regenerateHint")}
        visible={dialog === "regenerate"}
        onClose={() => setDialog("")}
        submit={regenerate}
      />
      <Modal
        title={t("twofa.newCodes")}
        visible={!!freshCodes}
        onOk={() => setFreshCodes(null)}
        onCancel={() => setFreshCodes(null)}
      >
        {freshCodes && <BackupCodes codes={freshCodes} />}
      </Modal>
    </Card>
  );
}

interface PasskeyStatus {
  enabled: boolean;
  last_used_at: string | null;
  passkeys: { id: number; attachment: string; created_at: string | null; last_used_at: string | null }[];
}

export function PasskeyCard() {
  const { t } = useTranslation();
  const { status: site } = useApp();
  const [status, setStatus] = useState<PasskeyStatus | null>(null);
  const load = async () => {
    const r = await api.get<PasskeyStatus>("/api/user/passkey");
    if (r.success && r.data) setStatus(r.data);
  };
  useEffect(() => {
    void load();
  }, []);
  const add = async () => {
    const r = await registerPasskey();
    if (!r.success) return Message.error(r.message);
    Message.success(t("passkey.registered"));
    void load();
  };
  const remove = (id: number) =>
    Modal.confirm({
      title: t("passkey.removeConfirm"),
      onOk: async () => {
        const r = await api.del(`/api/user/passkey?id=${id}`);
        if (!r.success) return Message.error(r.message);
        Message.success(t("passkey.removed"));
        void load();
      },
    });
  if (!site.passkey_login && !status?.enabled) return null;
  const when = (v: string | null) => (v ? new Date(v).toLocaleString() : t("passkey.never"));
  return (
    <Card title={t("passkey.title")} bordered={false} data-testid="passkey-card">
      <Space direction="vertical" style={{ width: "100%" }}>
        <Typography.Text type="secondary">{t("passkey.intro")}</Typography.Text>
        {!passkeySupported() && <Alert type="warning" content={t("passkey.unsupported")} />}
        {status?.passkeys.map((p, i) => (
          <Space key={p.id} style={{ justifyContent: "space-between", width: "100%" }}>
            <span>
              {t("passkey.item", { n: i + 1 })} · {t("passkey.lastUsed")}: {when(p.last_used_at)}
            </span>
            <Button size="small" status="danger" onClick={() => remove(p.id)}>
              {t("common.delete")}
            </Button>
          </Space>
        ))}
        {!!site.passkey_login && (
          <Button type="primary" disabled={!passkeySupported()} onClick={() => void add()}>
            {t("passkey.add")}
          </Button>
        )}
      </Space>
    </Card>
  );
}
