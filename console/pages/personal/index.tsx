// Personal settings (spec 000 §2.7, §7.3): summary, model chips, invite link and transfer, bindings,
// access token, password change, account deletion, notification and price tabs.
import type React from "react";
import { useEffect, useState } from "react";
import {
  Alert,
  Button,
  Card,
  Descriptions,
  Form,
  Grid,
  Input,
  InputNumber,
  Message,
  Radio,
  Space,
  Statistic,
  Switch,
  Tabs,
  Tag,
  Typography,
} from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { useSearchParams } from "react-router-dom";
import { api } from "../../api/index.ts";
import { useApp, isAdmin, isRoot } from "../../lib/app-state.tsx";
import { renderNumber, renderQuota } from "../../lib/format.ts";
import { copyWithFallback } from "../../components/copy.tsx";
import { fieldError } from "../../components/AuthCard.tsx";
import { startOAuth, TelegramWidget, telegramQuery, type TelegramAuthData } from "../../components/OAuthButtons.tsx";
import { Page } from "../../components/Page.tsx";
import { DeleteAccountDialog, EmailBindDialog, PasswordDialog, TransferDialog, WeChatBindDialog } from "./dialogs.tsx";
import { validateNotify, type NotifyForm } from "./validation.ts";
import { PasskeyCard, TwoFactorCard } from "./security.tsx";
import { QUOTA_WARNING_THRESHOLD_DEFAULT } from "../../../server/catalogue/index.ts";

export const MODEL_CHIPS_COLLAPSED = 10;
/** Threshold presets in quota units (spec 000 §9). */
export const THRESHOLD_PRESETS = [100_000, 500_000, 1_000_000, 5_000_000];
const FORM_DEFAULT_THRESHOLD = 100_000;

/** One on/off setting of the user's, with its hint and its own save button (a tab of the settings card). */
function SwitchSetting(p: {
  checked: boolean;
  onChange: (v: boolean) => void;
  testId: string;
  label: string;
  hint: string;
  onSave: () => void;
}) {
  const { t } = useTranslation();
  return (
    <Space direction="vertical">
      <Space>
        <Switch checked={p.checked} onChange={p.onChange} data-testid={p.testId} />
        <span>{p.label}</span>
      </Space>
      <Typography.Text type="secondary">{p.hint}</Typography.Text>
      <Button type="primary" onClick={p.onSave}>
        {t("common.save")}
      </Button>
    </Space>
  );
}

function parseSetting(raw: unknown): Record<string, any> {
  if (typeof raw !== "string" || !raw) return {};
  try {
    return JSON.parse(raw) ?? {};
  } catch {
    return {};
  }
}

export default function PersonalPage() {
  const { t } = useTranslation();
  const { user, setUser, status } = useApp();
  const [models, setModels] = useState<string[]>([]);
  const [showAllModels, setShowAllModels] = useState(false);
  const [affLink, setAffLink] = useState("");
  const [dialog, setDialog] = useState<"" | "password" | "delete" | "transfer" | "email" | "wechat">("");
  const setting = parseSetting(user?.setting);
  const [notify, setNotify] = useState<NotifyForm>({
    notify_type: setting.notify_type === "webhook" ? "webhook" : "email",
    webhook_url: setting.webhook_url ?? "",
    webhook_secret: setting.webhook_secret ?? "",
    notification_email: setting.notification_email ?? "",
    quota_warning_threshold: Number(setting.quota_warning_threshold ?? FORM_DEFAULT_THRESHOLD),
  });
  const [acceptUnset, setAcceptUnset] = useState(!!setting.accept_unset_model_ratio_model);
  const [recordIp, setRecordIp] = useState(!!setting.record_ip_log);
  const [notifyErrors, setNotifyErrors] = useState<ReturnType<typeof validateNotify>>({});
  // The login of a super admin who must use two-factor sign-in and has not set it up lands here (?twofa=setup).
  const [params] = useSearchParams();
  const twoFASetupRequired = params.get("twofa") === "setup";

  const refreshUser = async () => {
    const r = await api.get("/api/user/self");
    if (r.success && r.data) setUser(r.data);
  };

  useEffect(() => {
    void refreshUser();
    void api.get<string[]>("/api/user/models").then((r) => r.success && setModels(r.data ?? []));
  }, []);

  const loadAffLink = async () => {
    const r = await api.get<string>("/api/user/aff");
    if (!r.success || !r.data) {
      Message.error(r.message);
      return;
    }
    const link = `${location.origin}/register?aff=${r.data}`;
    setAffLink(link);
    await copyWithFallback(link);
  };

  const generateToken = async () => {
    const r = await api.get<string>("/api/user/token");
    if (!r.success || !r.data) {
      Message.error(r.message);
      return;
    }
    await copyWithFallback(r.data, t("personal.tokenCopied"));
  };

  const bindTelegram = async (tg: TelegramAuthData) => {
    const r = await api.get(`/api/oauth/telegram/bind${telegramQuery(tg)}`);
    if (r.success) {
      Message.success(t("personal.bindSuccess"));
      void refreshUser();
    } else Message.error(r.message);
  };

  const saveSetting = async (patch: Record<string, unknown> = {}) => {
    const e = validateNotify(notify);
    setNotifyErrors(e);
    if (Object.keys(e).length) return;
    const r = await api.put("/api/user/setting", {
      ...notify,
      accept_unset_model_ratio_model: acceptUnset,
      record_ip_log: recordIp,
      ...patch,
    });
    if (r.success) {
      Message.success(t("personal.settingsSaved"));
      void refreshUser();
    } else Message.error(r.message || t("personal.notifyFailed"));
  };

  if (!user) return null;
  const u = user as any;
  const visibleModels = showAllModels ? models : models.slice(0, MODEL_CHIPS_COLLAPSED);
  const bindings: Array<{
    key: string;
    label: string;
    value: string;
    enabled: boolean;
    bind: () => void;
    widget?: React.ReactNode;
  }> = [
    { key: "email", label: t("personal.email"), value: u.email ?? "", enabled: true, bind: () => setDialog("email") },
    {
      key: "wechat",
      label: t("auth.withWeChat"),
      value: u.wechat_id ?? "",
      enabled: !!status.wechat_login,
      bind: () => setDialog("wechat"),
    },
    {
      key: "github",
      label: t("auth.withGitHub"),
      value: u.github_id ?? "",
      enabled: !!status.github_oauth,
      bind: () => void startOAuth("github", status),
    },
    {
      key: "oidc",
      label: t("auth.withOIDC"),
      value: u.oidc_id ?? "",
      enabled: !!status.oidc_enabled,
      bind: () => void startOAuth("oidc", status),
    },
    // Telegram binds through its own login widget; its signed fields go to the bind route as an API call
    // (with the user-id header), not as the widget's redirect, which the server refuses on a bare cookie.
    {
      key: "telegram",
      label: t("auth.withTelegram"),
      value: u.telegram_id ?? "",
      enabled: !!status.telegram_oauth,
      bind: () => {},
      widget: <TelegramWidget bot={String(status.telegram_bot_name ?? "")} onAuth={(tg) => void bindTelegram(tg)} />,
    },
    {
      key: "linuxdo",
      label: t("auth.withLinuxDO"),
      value: u.linux_do_id ?? "",
      enabled: !!status.linuxdo_oauth,
      bind: () => void startOAuth("linuxdo", status),
    },
  ];

  return (
    <Space direction="vertical" size="medium" style={{ width: "100%" }}>
      <Page
        title={t("personal.title")}
        extra={
          isRoot(user) ? (
            <Tag color="orange">{t("role.root")}</Tag>
          ) : isAdmin(user) ? (
            <Tag color="arcoblue">{t("role.admin")}</Tag>
          ) : (
            <Tag>{t("role.common")}</Tag>
          )
        }
      >
        <Typography.Paragraph>
          {user.display_name || user.username} · {user.group ?? "default"}
        </Typography.Paragraph>
        <Grid.Row gutter={16}>
          <Grid.Col xs={24} sm={8}>
            <Statistic title={t("personal.balance")} value={renderQuota(Number(u.quota ?? 0))} />
          </Grid.Col>
          <Grid.Col xs={24} sm={8}>
            <Statistic title={t("personal.used")} value={renderQuota(Number(u.used_quota ?? 0))} />
          </Grid.Col>
          <Grid.Col xs={24} sm={8}>
            <Statistic title={t("personal.requests")} value={renderNumber(Number(u.request_count ?? 0))} />
          </Grid.Col>
        </Grid.Row>
      </Page>

      <Card title={t("personal.models")} bordered={false}>
        {models.length === 0 ? (
          <Typography.Text type="secondary">{t("personal.noModels")}</Typography.Text>
        ) : (
          <Space wrap data-testid="model-chips">
            {visibleModels.map((m) => (
              <Tag key={m} style={{ cursor: "pointer" }} onClick={() => void copyWithFallback(m)}>
                {m}
              </Tag>
            ))}
            {models.length > MODEL_CHIPS_COLLAPSED && (
              <Button size="mini" type="text" onClick={() => setShowAllModels(!showAllModels)}>
                {showAllModels ? t("personal.collapse") : t("personal.showAll", { n: models.length })}
              </Button>
            )}
          </Space>
        )}
      </Card>

      <Card title={t("personal.invite")} bordered={false}>
        <Descriptions
          column={{ xs: 1, sm: 3 }}
          data={[
            { label: t("personal.affPending"), value: renderQuota(Number(u.aff_quota ?? 0)) },
            { label: t("personal.affTotal"), value: renderQuota(Number(u.aff_history_quota ?? 0)) },
            { label: t("personal.affCount"), value: String(u.aff_count ?? 0) },
          ]}
        />
        <Space wrap>
          <Input
            readOnly
            style={{ width: 360 }}
            value={affLink}
            placeholder={t("personal.inviteLinkPlaceholder")}
            onClick={() => {
              if (!affLink) void loadAffLink();
            }}
          />
          <Button onClick={() => void loadAffLink()}>{t("personal.copyInviteLink")}</Button>
          <Button type="primary" disabled={!Number(u.aff_quota)} onClick={() => setDialog("transfer")}>
            {t("personal.transfer")}
          </Button>
        </Space>
      </Card>

      <Card title={t("personal.bindings")} bordered={false}>
        <Space direction="vertical" style={{ width: "100%" }}>
          {bindings
            .filter((b) => b.enabled)
            .map((b) => (
              <Space key={b.key} style={{ justifyContent: "space-between", width: "100%" }}>
                <span>
                  <b>{b.label}</b>:{" "}
                  {b.value || <Typography.Text type="secondary">{t("personal.notBound")}</Typography.Text>}
                </span>
                {b.widget && !b.value ? (
                  b.widget
                ) : (
                  <Button size="small" onClick={b.bind} disabled={b.key !== "email" && !!b.value}>
                    {b.value ? t("personal.bound") : t("personal.bind")}
                  </Button>
                )}
              </Space>
            ))}
        </Space>
      </Card>

      <Card title={t("personal.security")} bordered={false}>
        <Space wrap>
          <Button onClick={() => void generateToken()}>{t("personal.generateToken")}</Button>
          <Button onClick={() => setDialog("password")}>{t("personal.changePassword")}</Button>
          {/* The super admin cannot be deleted (spec 000 §6): no button that could only fail. */}
          {!isRoot(user) && (
            <Button status="danger" onClick={() => setDialog("delete")}>
              {t("personal.deleteAccount")}
            </Button>
          )}
        </Space>
      </Card>

      {twoFASetupRequired && <Alert type="warning" content={t("twofa.requiredForRoot")} data-testid="twofa-required" />}
      <TwoFactorCard autoStart={twoFASetupRequired} />
      <PasskeyCard />

      <Card bordered={false}>
        <Tabs defaultActiveTab="notify">
          <Tabs.TabPane key="notify" title={t("personal.notifyTab")}>
            <Form layout="vertical" style={{ maxWidth: 560 }}>
              <Form.Item label={t("personal.notifyType")}>
                <Radio.Group value={notify.notify_type} onChange={(v) => setNotify({ ...notify, notify_type: v })}>
                  <Radio value="email">{t("personal.notifyEmail")}</Radio>
                  <Radio value="webhook">{t("personal.notifyWebhook")}</Radio>
                </Radio.Group>
              </Form.Item>
              {notify.notify_type === "webhook" ? (
                <>
                  <Form.Item
                    label={t("personal.webhookUrl")}
                    {...fieldError(notifyErrors.webhook_url ? t(notifyErrors.webhook_url) : null)}
                  >
                    <Input
                      name="webhook_url"
                      value={notify.webhook_url}
                      placeholder="https://"
                      onChange={(v) => setNotify({ ...notify, webhook_url: v })}
                    />
                  </Form.Item>
                  <Form.Item label={t("personal.webhookSecret")} extra={t("personal.webhookSecretHint")}>
                    <Input.Password
                      name="webhook_secret"
                      value={notify.webhook_secret}
                      onChange={(v) => setNotify({ ...notify, webhook_secret: v })}
                    />
                  </Form.Item>
                </>
              ) : (
                <Form.Item
                  label={t("personal.notificationEmail")}
                  extra={t("personal.notificationEmailHint")}
                  {...fieldError(notifyErrors.notification_email ? t(notifyErrors.notification_email) : null)}
                >
                  <Input
                    name="notification_email"
                    value={notify.notification_email}
                    onChange={(v) => setNotify({ ...notify, notification_email: v })}
                  />
                </Form.Item>
              )}
              <Form.Item
                label={t("personal.threshold")}
                extra={renderQuota(notify.quota_warning_threshold)}
                {...fieldError(notifyErrors.quota_warning_threshold ? t(notifyErrors.quota_warning_threshold) : null)}
              >
                <Space wrap>
                  <InputNumber
                    data-testid="threshold"
                    min={0}
                    precision={0}
                    value={notify.quota_warning_threshold}
                    onChange={(v) =>
                      setNotify({ ...notify, quota_warning_threshold: Number(v ?? QUOTA_WARNING_THRESHOLD_DEFAULT) })
                    }
                  />
                  {THRESHOLD_PRESETS.map((p) => (
                    <Button key={p} size="mini" onClick={() => setNotify({ ...notify, quota_warning_threshold: p })}>
                      {renderQuota(p)}
                    </Button>
                  ))}
                </Space>
              </Form.Item>
              <Button type="primary" onClick={() => void saveSetting()}>
                {t("common.save")}
              </Button>
            </Form>
          </Tabs.TabPane>
          <Tabs.TabPane key="price" title={t("personal.priceTab")}>
            <SwitchSetting
              checked={acceptUnset}
              onChange={setAcceptUnset}
              testId="accept-unset"
              label={t("personal.acceptUnset")}
              hint={t("personal.acceptUnsetHint")}
              onSave={() => void saveSetting({ accept_unset_model_ratio_model: acceptUnset })}
            />
          </Tabs.TabPane>
          <Tabs.TabPane key="privacy" title={t("personal.privacyTab")}>
            <SwitchSetting
              checked={recordIp}
              onChange={setRecordIp}
              testId="record-ip"
              label={t("personal.recordIp")}
              hint={t("personal.recordIpHint")}
              onSave={() => void saveSetting({ record_ip_log: recordIp })}
            />
          </Tabs.TabPane>
        </Tabs>
      </Card>

      <PasswordDialog visible={dialog === "password"} onClose={() => setDialog("")} />
      <DeleteAccountDialog visible={dialog === "delete"} onClose={() => setDialog("")} />
      <TransferDialog
        visible={dialog === "transfer"}
        available={Number(u.aff_quota ?? 0)}
        onClose={() => setDialog("")}
        onDone={() => {
          setDialog("");
          void refreshUser();
        }}
      />
      <EmailBindDialog
        visible={dialog === "email"}
        onClose={() => setDialog("")}
        onDone={() => {
          setDialog("");
          void refreshUser();
        }}
      />
      <WeChatBindDialog
        visible={dialog === "wechat"}
        qrcode={String(status.wechat_qrcode ?? "")}
        onClose={() => setDialog("")}
        onDone={() => {
          setDialog("");
          void refreshUser();
        }}
      />
    </Space>
  );
}
