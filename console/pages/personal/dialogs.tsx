// The modal dialogs of personal settings: change password, delete account, affiliate transfer and
// email binding.
import { useState } from "react";
import { Button, Input, InputNumber, Message, Modal, Form, Typography } from "@arco-design/web-react";
import { useNavigate } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, qs } from "../../api/index.ts";
import { fieldError } from "../../components/AuthCard.tsx";
import { useApp } from "../../lib/app-state.tsx";
import { useCountdown } from "../../lib/hooks.ts";
import { quotaPerUnit, renderQuota } from "../../lib/format.ts";
import {
  deletionConfirmed,
  validateEmailBind,
  validatePasswordChange,
  validateTransfer,
  type PasswordForm,
} from "./validation.ts";

export function PasswordDialog({ visible, onClose }: { visible: boolean; onClose: () => void }) {
  const { t } = useTranslation();
  const [f, setF] = useState<PasswordForm>({ original: "", password: "", confirm: "" });
  const [errors, setErrors] = useState<ReturnType<typeof validatePasswordChange>>({});
  const [touched, setTouched] = useState(false);
  const set = (k: keyof PasswordForm) => (v: string) => {
    const next = { ...f, [k]: v };
    setF(next);
    if (touched) setErrors(validatePasswordChange(next));
  };
  const submit = async () => {
    setTouched(true);
    const e = validatePasswordChange(f);
    setErrors(e);
    if (Object.keys(e).length) return;
    const r = await api.put("/api/user/self", { original_password: f.original, password: f.password });
    if (r.success) {
      Message.success(t("personal.passwordChanged"));
      setF({ original: "", password: "", confirm: "" });
      onClose();
    } else Message.error(r.message);
  };
  const err = (k: keyof PasswordForm) => fieldError(errors[k] ? t(errors[k]!) : null);
  return (
    <Modal title={t("personal.changePassword")} visible={visible} onOk={() => void submit()} onCancel={onClose}>
      <Form layout="vertical">
        <Form.Item label={t("personal.originalPassword")} {...err("original")}>
          <Input.Password name="original" value={f.original} onChange={set("original")} />
        </Form.Item>
        <Form.Item label={t("personal.newPassword")} {...err("password")}>
          <Input.Password name="password" value={f.password} onChange={set("password")} />
        </Form.Item>
        <Form.Item label={t("personal.confirmPassword")} {...err("confirm")}>
          <Input.Password name="confirm" value={f.confirm} onChange={set("confirm")} />
        </Form.Item>
      </Form>
    </Modal>
  );
}

export function DeleteAccountDialog({ visible, onClose }: { visible: boolean; onClose: () => void }) {
  const { t } = useTranslation();
  const { user, setUser } = useApp();
  const navigate = useNavigate();
  const [typed, setTyped] = useState("");
  const [error, setError] = useState<string | null>(null);
  const submit = async () => {
    if (!deletionConfirmed(typed, user?.username ?? "")) {
      setError(t("personal.deleteConfirmHint"));
      return;
    }
    const r = await api.del("/api/user/self");
    if (!r.success) {
      Message.error(r.message);
      return;
    }
    Message.success(t("personal.accountDeleted"));
    await api.get("/api/user/logout");
    setUser(null);
    navigate("/login");
  };
  return (
    <Modal
      title={t("personal.deleteAccount")}
      visible={visible}
      onOk={() => void submit()}
      onCancel={onClose}
      okButtonProps={{ status: "danger" }}
    >
      <Typography.Paragraph type="error">{t("personal.deleteWarning")}</Typography.Paragraph>
      <Form layout="vertical">
        <Form.Item label={t("personal.deleteConfirmHint")} {...fieldError(error)}>
          <Input
            name="confirm-username"
            placeholder={user?.username}
            value={typed}
            onChange={(v) => {
              setTyped(v);
              setError(null);
            }}
          />
        </Form.Item>
      </Form>
    </Modal>
  );
}

export function TransferDialog({
  visible,
  available,
  onClose,
  onDone,
}: {
  visible: boolean;
  available: number;
  onClose: () => void;
  onDone: () => void;
}) {
  const { t } = useTranslation();
  const unit = quotaPerUnit();
  const [amount, setAmount] = useState<number | undefined>(unit);
  const [error, setError] = useState<string | null>(null);
  const submit = async () => {
    const problem = validateTransfer(amount, unit);
    if (problem) {
      setError(t(problem, { min: renderQuota(unit) }));
      return;
    }
    const r = await api.post("/api/user/aff_transfer", { quota: amount });
    if (r.success) {
      Message.success(r.message || t("personal.transferred"));
      onDone();
    } else Message.error(r.message);
  };
  return (
    <Modal title={t("personal.transfer")} visible={visible} onOk={() => void submit()} onCancel={onClose}>
      <Typography.Paragraph>{t("personal.transferAvailable", { amount: renderQuota(available) })}</Typography.Paragraph>
      <Form layout="vertical">
        <Form.Item
          label={t("personal.transferAmount")}
          {...fieldError(error)}
          extra={amount ? renderQuota(amount) : undefined}
        >
          <InputNumber
            data-testid="transfer-amount"
            min={0}
            precision={0}
            value={amount}
            onChange={(v) => {
              setAmount(v === undefined || v === null ? undefined : Number(v));
              setError(null);
            }}
          />
        </Form.Item>
      </Form>
    </Modal>
  );
}

export function EmailBindDialog({
  visible,
  onClose,
  onDone,
}: {
  visible: boolean;
  onClose: () => void;
  onDone: () => void;
}) {
  const { t } = useTranslation();
  const [email, setEmail] = useState("");
  const [code, setCode] = useState("");
  const [errors, setErrors] = useState<ReturnType<typeof validateEmailBind>>({});
  const countdown = useCountdown(30);
  const sendCode = async () => {
    const e = validateEmailBind(email, "x");
    if (e.email) {
      setErrors(e);
      return;
    }
    const r = await api.get(`/api/verification${qs({ email: email.trim() })}`);
    if (r.success) {
      Message.success(t("register.codeSent"));
      countdown.start();
    } else Message.error(r.message);
  };
  const submit = async () => {
    const e = validateEmailBind(email, code);
    setErrors(e);
    if (Object.keys(e).length) return;
    const r = await api.get(`/api/oauth/email/bind${qs({ email: email.trim(), code: code.trim() })}`);
    if (r.success) {
      Message.success(t("personal.bindSuccess"));
      onDone();
    } else Message.error(r.message);
  };
  return (
    <Modal title={t("personal.bindEmail")} visible={visible} onOk={() => void submit()} onCancel={onClose}>
      <Form layout="vertical">
        <Form.Item label={t("register.email")} {...fieldError(errors.email ? t(errors.email) : null)}>
          <Input
            name="bind-email"
            value={email}
            onChange={setEmail}
            addAfter={
              <Button type="text" size="mini" disabled={countdown.left > 0} onClick={() => void sendCode()}>
                {countdown.left > 0 ? t("register.resend", { n: countdown.left }) : t("register.sendCode")}
              </Button>
            }
          />
        </Form.Item>
        <Form.Item label={t("register.code")} {...fieldError(errors.code ? t(errors.code) : null)}>
          <Input name="bind-code" value={code} onChange={setCode} />
        </Form.Item>
      </Form>
    </Modal>
  );
}

export function WeChatBindDialog({
  visible,
  qrcode,
  onClose,
  onDone,
}: {
  visible: boolean;
  qrcode: string;
  onClose: () => void;
  onDone: () => void;
}) {
  const { t } = useTranslation();
  const [code, setCode] = useState("");
  const submit = async () => {
    if (!code.trim()) {
      Message.error(t("personal.codeRequired"));
      return;
    }
    const r = await api.get(`/api/oauth/wechat/bind${qs({ code: code.trim() })}`);
    if (r.success) {
      Message.success(t("personal.bindSuccess"));
      onDone();
    } else Message.error(r.message);
  };
  return (
    <Modal title={t("personal.bindWeChat")} visible={visible} onOk={() => void submit()} onCancel={onClose}>
      {qrcode && <img src={qrcode} alt="" style={{ maxWidth: 200, display: "block", margin: "0 auto 12px" }} />}
      <Typography.Paragraph>{t("auth.wechatHint")}</Typography.Paragraph>
      <Input value={code} onChange={setCode} placeholder={t("auth.verificationCode")} />
    </Modal>
  );
}
