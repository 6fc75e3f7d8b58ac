// Create/edit drawer for a token (spec 001 §5 token rules, §9 quota presets and expiry shortcuts).
import { useEffect, useState } from "react";
import {
  Alert,
  Button,
  Drawer,
  Input,
  InputNumber,
  Message,
  Radio,
  Select,
  Space,
  Switch,
  Typography,
} from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { renderQuota, timestampToString } from "../../lib/format.ts";
import { QUOTA_PRESETS } from "../../../server/catalogue/index.ts";
import { DAY_MS, HOUR_MS, formatDateTime, parseDateTime, toSeconds } from "../_shared/time.ts";

export interface TokenRow {
  id: number;
  name: string;
  key: string;
  status: number;
  remain_quota: number;
  used_quota: number;
  unlimited_quota: boolean;
  expired_time: number;
  model_limits_enabled: boolean;
  model_limits: string;
  allow_ips: string;
  group: string;
  created_time: number;
  /** Per-token limits (0 = none) and the resetting budget; the list adds what is used of them now. */
  rpm_limit?: number;
  tpm_limit?: number;
  concurrency_limit?: number;
  budget_quota?: number;
  budget_period?: BudgetPeriod;
  budget_used?: number;
  budget_reset_at?: number;
  rpm_used?: number;
  tpm_used?: number;
  concurrency_used?: number;
}

export type BudgetPeriod = "" | "daily" | "weekly" | "monthly";
export const BUDGET_PERIODS: BudgetPeriod[] = ["", "daily", "weekly", "monthly"];
/** The i18n key of a budget period ("" = none). */
export const periodKey = (p: string) => `ops.token.period.${p || "none"}`;

/** New tokens start with 500000 quota (1$); an edit starts from the token's own values (spec 001 §9). */
export const NEW_TOKEN_QUOTA = 500_000;
const BATCH_COUNTS = [10, 20, 30, 100];

export function TokenDrawer({
  token,
  onClose,
  onSaved,
}: {
  token: TokenRow | null;
  onClose: () => void;
  onSaved: () => void;
}) {
  const { t } = useTranslation();
  const editing = !!token;
  const [name, setName] = useState(token?.name ?? "");
  const [expiry, setExpiry] = useState(token && token.expired_time !== -1 ? timestampToString(token.expired_time) : "");
  const [quota, setQuota] = useState<number | undefined>(token ? token.remain_quota : NEW_TOKEN_QUOTA);
  const [unlimited, setUnlimited] = useState(token?.unlimited_quota ?? false);
  const [count, setCount] = useState(1);
  const [limitsOn, setLimitsOn] = useState(token?.model_limits_enabled ?? false);
  const [limits, setLimits] = useState<string[]>(
    token?.model_limits ? token.model_limits.split(",").filter(Boolean) : [],
  );
  const [allowIps, setAllowIps] = useState(token?.allow_ips ?? "");
  const [group, setGroup] = useState(token?.group ?? "");
  const [rpm, setRpm] = useState<number | undefined>(token?.rpm_limit ?? 0);
  const [tpm, setTpm] = useState<number | undefined>(token?.tpm_limit ?? 0);
  const [concurrency, setConcurrency] = useState<number | undefined>(token?.concurrency_limit ?? 0);
  const [budget, setBudget] = useState<number | undefined>(token?.budget_quota ?? 0);
  const [period, setPeriod] = useState<BudgetPeriod>(token?.budget_period ?? "");
  const [models, setModels] = useState<string[]>([]);
  const [groups, setGroups] = useState<Record<string, { desc?: string; ratio?: number }>>({});
  const [error, setError] = useState("");
  const [saving, setSaving] = useState(false);

  useEffect(() => {
    void api.get<string[]>("/api/user/models").then((r) => {
      if (r.success && Array.isArray(r.data)) setModels(r.data);
      else if (!r.success) Message.error(t("ops.failedModels"));
    });
    void api.get<Record<string, { desc?: string; ratio?: number }>>("/api/user/self/groups").then((r) => {
      if (r.success && r.data && typeof r.data === "object") setGroups(r.data);
    });
  }, [t]);

  const shortcut = (ms: number | null) => setExpiry(ms === null ? "" : formatDateTime(new Date(Date.now() + ms)));

  const submit = async () => {
    setError("");
    if (!editing && !name.trim()) return setError(t("ops.token.nameRequired"));
    let expiredTime = -1;
    if (expiry.trim() !== "" && expiry.trim() !== "-1") {
      const d = parseDateTime(expiry);
      if (!d) return setError(t("ops.token.expiryFormat"));
      expiredTime = toSeconds(d);
    }
    if (!unlimited && (quota === undefined || !Number.isInteger(quota) || quota < 0))
      return setError(t("ops.token.quotaNumber"));
    const limitValues = [rpm, tpm, concurrency, budget].map((v) => v ?? 0);
    if (limitValues.some((v) => !Number.isInteger(v) || v < 0)) return setError(t("ops.token.limitNumber"));
    if ((budget ?? 0) > 0 && !period) return setError(t("ops.token.budgetNeedsPeriod"));
    const body: Record<string, unknown> = {
      name: name.trim(),
      expired_time: expiredTime,
      remain_quota: unlimited ? 0 : quota,
      unlimited_quota: unlimited,
      model_limits_enabled: limitsOn,
      model_limits: limits.join(","),
      allow_ips: allowIps,
      group,
      rpm_limit: limitValues[0],
      tpm_limit: limitValues[1],
      concurrency_limit: limitValues[2],
      budget_quota: limitValues[3],
      budget_period: limitValues[3] > 0 ? period : "",
    };
    setSaving(true);
    const r = editing
      ? await api.put("/api/token/", { ...token, ...body, id: token!.id })
      : await api.post("/api/token/", { ...body, count });
    setSaving(false);
    if (!r.success) return Message.error(r.message);
    Message.success(editing ? t("ops.token.updated") : t("ops.token.created"));
    onSaved();
  };

  return (
    <Drawer
      visible
      width={Math.min(520, globalThis.innerWidth ?? 520)}
      title={editing ? t("ops.token.editTitle") : t("ops.token.addTitle")}
      onCancel={onClose}
      footer={
        <Space>
          <Button onClick={onClose}>{t("ops.cancel")}</Button>
          <Button type="primary" loading={saving} onClick={submit}>
            {t("ops.submit")}
          </Button>
        </Space>
      }
    >
      <Space direction="vertical" size="medium" style={{ width: "100%" }}>
        {error && <Alert type="error" content={error} data-testid="form-error" />}
        <label>
          {t("ops.name")}
          <Input value={name} onChange={setName} placeholder={t("ops.token.namePlaceholder")} maxLength={30} />
        </label>
        <div>
          <div>{t("ops.token.expiry")}</div>
          <Input value={expiry} onChange={setExpiry} placeholder={t("ops.token.expiryPlaceholder")} />
          <Space wrap style={{ marginTop: 8 }}>
            <Button size="small" onClick={() => shortcut(null)}>
              {t("ops.token.never")}
            </Button>
            <Button size="small" onClick={() => shortcut(HOUR_MS)}>
              {t("ops.token.oneHour")}
            </Button>
            <Button size="small" onClick={() => shortcut(DAY_MS)}>
              {t("ops.token.oneDay")}
            </Button>
            <Button size="small" onClick={() => shortcut(30 * DAY_MS)}>
              {t("ops.token.oneMonth")}
            </Button>
          </Space>
        </div>
        <Alert type="info" content={t("ops.token.quotaNote")} />
        <div>
          <div>
            {t("ops.token.quota")}{" "}
            {!unlimited && quota !== undefined && (
              <Typography.Text type="secondary">({renderQuota(quota)})</Typography.Text>
            )}
          </div>
          <InputNumber
            value={quota}
            onChange={(v) => setQuota(v === undefined || v === null ? undefined : Number(v))}
            disabled={unlimited}
            min={0}
            precision={0}
          />
          <Space wrap style={{ marginTop: 8 }}>
            {QUOTA_PRESETS.map((p) => (
              <Button key={p} size="small" disabled={unlimited} onClick={() => setQuota(p)}>
                {renderQuota(p, 0, true)}
              </Button>
            ))}
          </Space>
        </div>
        <Space>
          <Switch checked={unlimited} onChange={setUnlimited} />
          <span>{t("ops.token.unlimited")}</span>
        </Space>
        {!editing && (
          <div>
            <div>{t("ops.token.count")}</div>
            <InputNumber
              value={count}
              min={1}
              max={100}
              precision={0}
              onChange={(v) => setCount(Math.max(1, Number(v) || 1))}
            />
            <Space wrap style={{ marginTop: 8 }}>
              {BATCH_COUNTS.map((n) => (
                <Button key={n} size="small" onClick={() => setCount(n)}>
                  {n}
                </Button>
              ))}
            </Space>
          </div>
        )}
        <Space>
          <Switch checked={limitsOn} onChange={setLimitsOn} />
          <span>{t("ops.token.modelLimits")}</span>
        </Space>
        {limitsOn && (
          <Select
            mode="multiple"
            allowClear
            value={limits}
            onChange={setLimits}
            placeholder={t("ops.token.modelLimitsPlaceholder")}
            options={models.map((m) => ({ label: m, value: m }))}
          />
        )}
        <label>
          {t("ops.token.allowIps")}
          <Input.TextArea
            value={allowIps}
            onChange={setAllowIps}
            placeholder={t("ops.token.allowIpsPlaceholder")}
            autoSize={{ minRows: 2 }}
          />
        </label>
        <div>
          <div>{t("ops.group")}</div>
          <Select
            allowClear
            value={group || undefined}
            onChange={(v) => setGroup(v ?? "")}
            placeholder={t("ops.token.groupPlaceholder")}
            options={Object.entries(groups).map(([g, info]) => ({
              label: `${g}${info?.desc ? ` — ${info.desc}` : ""}${info?.ratio !== undefined ? ` (×${info.ratio})` : ""}`,
              value: g,
            }))}
          />
        </div>
        <div data-testid="token-limits">
          <Typography.Text bold>{t("ops.token.limitsTitle")}</Typography.Text>
          <Alert type="info" content={t("ops.token.limitsNote")} style={{ margin: "8px 0" }} />
          <Space wrap size="medium">
            <LimitInput testId="limit-rpm" label={t("ops.token.rpm")} value={rpm} onChange={setRpm} />
            <LimitInput testId="limit-tpm" label={t("ops.token.tpm")} value={tpm} onChange={setTpm} />
            <LimitInput
              testId="limit-concurrency"
              label={t("ops.token.concurrency")}
              value={concurrency}
              onChange={setConcurrency}
            />
          </Space>
          <div style={{ marginTop: 8 }}>
            <LimitInput testId="limit-budget" label={t("ops.token.budget")} value={budget} onChange={setBudget} />
            {(budget ?? 0) > 0 && <Typography.Text type="secondary"> ({renderQuota(budget ?? 0)})</Typography.Text>}
          </div>
          <div style={{ marginTop: 8 }}>
            <div>{t("ops.token.budgetPeriod")}</div>
            <Radio.Group
              type="button"
              value={period}
              onChange={(v: BudgetPeriod) => setPeriod(v)}
              data-testid="budget-period"
              options={BUDGET_PERIODS.map((p) => ({ label: t(periodKey(p)), value: p }))}
            />
          </div>
          {editing && (token?.budget_quota ?? 0) > 0 && (
            <Typography.Text type="secondary" data-testid="budget-used">
              {t("ops.token.budgetUsedNow", {
                used: renderQuota(token?.budget_used ?? 0),
                limit: renderQuota(token?.budget_quota ?? 0),
              })}
            </Typography.Text>
          )}
        </div>
      </Space>
    </Drawer>
  );
}

/** A whole number, 0 or more (0 = no limit), with its label. */
function LimitInput({
  testId,
  label,
  value,
  onChange,
}: {
  testId: string;
  label: string;
  value: number | undefined;
  onChange: (v: number | undefined) => void;
}) {
  return (
    <label data-testid={testId}>
      <div>{label}</div>
      <InputNumber
        value={value}
        min={0}
        precision={0}
        style={{ width: 150 }}
        onChange={(v) => onChange(v === undefined || v === null ? undefined : Number(v))}
      />
    </label>
  );
}
