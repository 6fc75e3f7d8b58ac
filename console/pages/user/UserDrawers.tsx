// Add-user and edit-user drawers of the user administration screen (spec 000 §2.6, §5, §7.1).
import { useEffect, useState } from "react";
import {
  Button,
  Drawer,
  Form,
  Input,
  InputNumber,
  Message,
  Select,
  Space,
  Spin,
  Typography,
} from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { fieldError } from "../../components/AuthCard.tsx";
import { renderQuota } from "../../lib/format.ts";
import { PASSWORD_MIN_LENGTH } from "../../../server/catalogue/index.ts";

export function validateNewUser(f: { username: string; password: string }): string | null {
  return f.username.trim() && f.password ? null : "users.emptyCredentials";
}

export function AddUserDrawer({
  visible,
  onClose,
  onDone,
}: {
  visible: boolean;
  onClose: () => void;
  onDone: () => void;
}) {
  const { t } = useTranslation();
  const empty = { username: "", display_name: "", password: "" };
  const [f, setF] = useState(empty);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  useEffect(() => {
    if (visible) {
      setF(empty);
      setError(null);
    }
  }, [visible]);
  const submit = async () => {
    const problem = validateNewUser(f);
    setError(problem);
    if (problem) return;
    setSaving(true);
    const r = await api.post("/api/user/", {
      username: f.username.trim(),
      display_name: f.display_name.trim() || f.username.trim(),
      password: f.password,
    });
    setSaving(false);
    if (r.success) {
      Message.success(t("users.created"));
      onDone();
    } else Message.error(r.message);
  };
  return (
    <Drawer
      width={420}
      title={t("users.add")}
      visible={visible}
      onCancel={onClose}
      onOk={() => void submit()}
      confirmLoading={saving}
      okText={t("common.submit")}
      cancelText={t("common.cancel")}
    >
      <Form layout="vertical">
        <Form.Item label={t("users.username")} {...fieldError(error && !f.username.trim() ? t(error) : null)}>
          <Input
            name="new-username"
            value={f.username}
            onChange={(v) => {
              setF({ ...f, username: v });
              if (error) setError(validateNewUser({ ...f, username: v }));
            }}
          />
        </Form.Item>
        <Form.Item label={t("users.displayName")}>
          <Input name="new-display-name" value={f.display_name} onChange={(v) => setF({ ...f, display_name: v })} />
        </Form.Item>
        <Form.Item label={t("users.password")} {...fieldError(error && !f.password ? t(error) : null)}>
          <Input.Password
            name="new-password"
            value={f.password}
            placeholder={t("users.newPasswordHint", { min: PASSWORD_MIN_LENGTH })}
            onChange={(v) => {
              setF({ ...f, password: v });
              if (error) setError(validateNewUser({ ...f, password: v }));
            }}
          />
        </Form.Item>
      </Form>
    </Drawer>
  );
}

interface EditForm {
  id: number;
  username: string;
  display_name: string;
  password: string;
  group: string;
  quota: string;
  email: string;
}

export function validateEditUser(f: EditForm): Partial<Record<"password" | "quota", string>> {
  const e: Partial<Record<"password" | "quota", string>> = {};
  if (f.password && f.password.length < PASSWORD_MIN_LENGTH) e.password = "users.passwordShort";
  if (!/^-?\d+$/.test(f.quota.trim())) e.quota = "users.quotaNumeric";
  return e;
}

export function EditUserDrawer({
  id,
  groups,
  onClose,
  onDone,
}: {
  id: number | null;
  groups: string[];
  onClose: () => void;
  onDone: () => void;
}) {
  const { t } = useTranslation();
  const [f, setF] = useState<EditForm | null>(null);
  const [errors, setErrors] = useState<ReturnType<typeof validateEditUser>>({});
  const [addQuota, setAddQuota] = useState<number | undefined>(undefined);
  const [saving, setSaving] = useState(false);

  useEffect(() => {
    setF(null);
    setErrors({});
    setAddQuota(undefined);
    if (id === null) return;
    void api.get(`/api/user/${id}`).then((r) => {
      if (!r.success || !r.data) {
        Message.error(r.message);
        onClose();
        return;
      }
      const u = r.data;
      setF({
        id: u.id,
        username: u.username ?? "",
        display_name: u.display_name ?? "",
        password: "",
        group: u.group ?? "default",
        quota: String(u.quota ?? 0),
        email: u.email ?? "",
      });
    });
  }, [id]);

  const update = (patch: Partial<EditForm>) => {
    if (!f) return;
    const next = { ...f, ...patch };
    setF(next);
    setErrors(validateEditUser(next));
  };

  const applyAddQuota = () => {
    if (!f || addQuota === undefined || !Number.isInteger(addQuota)) return;
    update({ quota: String(Number(f.quota || 0) + addQuota) });
    setAddQuota(undefined);
  };

  const submit = async () => {
    if (!f) return;
    const e = validateEditUser(f);
    setErrors(e);
    if (Object.keys(e).length) return;
    setSaving(true);
    const body: Record<string, unknown> = {
      id: f.id,
      username: f.username.trim(),
      display_name: f.display_name,
      group: f.group,
      quota: parseInt(f.quota, 10),
    };
    if (f.password) body.password = f.password;
    const r = await api.put("/api/user/", body);
    setSaving(false);
    if (r.success) {
      Message.success(t("users.updated"));
      onDone();
    } else Message.error(r.message);
  };

  return (
    <Drawer
      width={440}
      title={t("users.edit")}
      visible={id !== null}
      onCancel={onClose}
      onOk={() => void submit()}
      confirmLoading={saving}
      okText={t("common.submit")}
      cancelText={t("common.cancel")}
    >
      {!f ? (
        <Spin />
      ) : (
        <Form layout="vertical">
          <Form.Item label={t("users.username")}>
            <Input name="edit-username" value={f.username} onChange={(v) => update({ username: v })} />
          </Form.Item>
          <Form.Item label={t("users.displayName")}>
            <Input name="edit-display-name" value={f.display_name} onChange={(v) => update({ display_name: v })} />
          </Form.Item>
          <Form.Item
            label={t("users.password")}
            {...fieldError(errors.password ? t(errors.password, { min: PASSWORD_MIN_LENGTH }) : null)}
          >
            <Input.Password
              name="edit-password"
              value={f.password}
              placeholder={t("users.passwordHint", { min: PASSWORD_MIN_LENGTH })}
              onChange={(v) => update({ password: v })}
            />
          </Form.Item>
          <Form.Item label={t("users.group")}>
            <Select
              value={f.group}
              onChange={(v) => update({ group: v })}
              allowCreate
              options={groups.map((g) => ({ label: g, value: g }))}
            />
          </Form.Item>
          <Form.Item
            label={t("users.quota")}
            {...fieldError(errors.quota ? t(errors.quota) : null)}
            extra={/^-?\d+$/.test(f.quota) ? renderQuota(Number(f.quota)) : undefined}
          >
            <Input name="edit-quota" value={f.quota} onChange={(v) => update({ quota: v })} />
          </Form.Item>
          <Form.Item label={t("users.addQuota")} extra={t("users.addQuotaHint")}>
            <Space>
              <InputNumber
                data-testid="add-quota"
                value={addQuota}
                step={1}
                precision={0}
                onChange={(v) => setAddQuota(v === undefined || v === null ? undefined : Number(v))}
              />
              <Button onClick={applyAddQuota}>{t("users.applyAddQuota")}</Button>
            </Space>
          </Form.Item>
          <Form.Item label={t("users.bindings")}>
            <Typography.Text type="secondary">{f.email || "-"}</Typography.Text>
          </Form.Item>
        </Form>
      )}
    </Drawer>
  );
}
