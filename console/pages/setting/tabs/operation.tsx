// Operation settings (spec 000 §2.10, 001 §2): nested tabs for general, drawing, sensitive words, logs
// (with log clearing), data dashboard, monitoring, quota, groups, and the model pricing editors.
import { useState } from "react";
import { Button, Card, DatePicker, Form, Message, Popconfirm, Space, Tabs } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api, qs } from "../../../api/index.ts";
import { fieldError } from "../../../components/AuthCard.tsx";
import { OptionSection } from "../OptionSection.tsx";
import { groupNamesProblem, type FieldDef } from "../fields.ts";
import { useSettings } from "../context.tsx";
import { isRoot, useApp } from "../../../lib/app-state.tsx";
import { UnsetModels, VisualPricingEditor } from "./PricingEditor.tsx";
import { fallbacksProblem, groupFallbacksProblem } from "../routing.ts";
import { ChannelAffinitySection } from "./channel-affinity.tsx";

export const LOG_CLEAR_DEFAULT_DAYS = 30;

export function LogClearing() {
  const { t } = useTranslation();
  const [when, setWhen] = useState<Date | null>(() => new Date(Date.now() - LOG_CLEAR_DEFAULT_DAYS * 86400_000));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const clear = async () => {
    if (!when) {
      setError(t("operation.logTimeRequired"));
      return;
    }
    setBusy(true);
    const r = await api.del<number>(`/api/log/${qs({ target_timestamp: Math.floor(when.getTime() / 1000) })}`);
    setBusy(false);
    if (r.success) Message.success(t("operation.logsCleared", { count: Number(r.data ?? 0) }));
    else Message.error(`${t("operation.logClearFailed")}: ${r.message}`);
  };
  return (
    <Card title={t("operation.logClearing")} bordered={false}>
      <Form layout="vertical">
        <Form.Item label={t("operation.logClearBefore")} {...fieldError(error)}>
          <DatePicker
            showTime
            value={when ?? undefined}
            data-testid="log-clear-time"
            onChange={(_, d) => {
              setWhen(d ? d.toDate() : null);
              setError(null);
            }}
          />
        </Form.Item>
        <Popconfirm title={t("operation.confirmLogClear")} onOk={() => void clear()}>
          <Button status="danger" loading={busy}>
            {t("operation.clearLogs")}
          </Button>
        </Popconfirm>
      </Form>
    </Card>
  );
}

function ResetRatios() {
  const { t } = useTranslation();
  const { reload } = useSettings();
  const reset = async () => {
    const r = await api.post("/api/option/rest_model_ratio");
    if (r.success) {
      Message.success(t("operation.ratiosReset"));
      await reload();
    } else Message.error(r.message);
  };
  return (
    <Popconfirm title={t("operation.confirmResetRatios")} onOk={() => void reset()}>
      <Button status="warning" style={{ marginRight: 8, marginBottom: 12 }}>
        {t("operation.resetRatios")}
      </Button>
    </Popconfirm>
  );
}

export function OperationTab() {
  const { t } = useTranslation();
  const sw = (key: string, label: string, help?: string): FieldDef => ({ key, label, type: "switch", help });
  const num = (key: string, label: string, opts: Partial<FieldDef> = {}): FieldDef => ({
    key,
    label,
    type: "number",
    min: 0,
    integer: true,
    span: 1,
    ...opts,
  });
  // Spec 000 §6: the super admin sets the top-up link; other admins see it read-only (and never send it).
  const root = isRoot(useApp().user);
  const general: FieldDef[] = [
    {
      key: "TopUpLink",
      label: t("operation.topUpLink"),
      type: "text",
      span: 2,
      readOnly: !root,
      help: root ? t("operation.topUpLinkHelp") : t("operation.topUpLinkRootOnly"),
    },
    { key: "general_setting.docs_link", label: t("operation.docsLink"), type: "text", span: 2 },
    {
      key: "QuotaPerUnit",
      label: t("operation.quotaPerUnit"),
      type: "number",
      readOnly: true,
      span: 1,
      help: t("operation.quotaPerUnitHelp"),
    },
    num("RetryTimes", t("operation.retryTimes")),
    num("StreamCacheQueueLength", t("operation.streamCacheQueueLength")),
    sw("DisplayInCurrencyEnabled", t("operation.displayInCurrency")),
    // new-api's display currency (the server keeps DisplayInCurrencyEnabled in step with it)
    {
      key: "general_setting.quota_display_type",
      label: t("operation.quotaDisplayType"),
      type: "select",
      span: 1,
      options: ["USD", "CNY", "TOKENS", "CUSTOM"].map((v) => ({ value: v, label: t(`operation.display${v}`) })),
    },
    num("USDExchangeRate", t("operation.usdExchangeRate"), {
      integer: false,
      help: t("operation.usdExchangeRateHelp"),
    }),
    {
      key: "general_setting.custom_currency_symbol",
      label: t("operation.customCurrencySymbol"),
      type: "text",
      span: 1,
    },
    num("general_setting.custom_currency_exchange_rate", t("operation.customCurrencyRate"), {
      integer: false,
      help: t("operation.customCurrencyRateHelp"),
    }),
    num("token_setting.max_user_tokens", t("operation.maxUserTokens"), { min: 1 }),
    sw("DisplayTokenStatEnabled", t("operation.displayTokenStat")),
    sw("DefaultCollapseSidebar", t("operation.defaultCollapseSidebar")),
    sw("DemoSiteEnabled", t("operation.demoSite")),
    sw("SelfUseModeEnabled", t("operation.selfUseMode")),
    { key: "Chats", label: t("operation.chats"), type: "json", help: t("operation.chatsHelp") },
  ];
  const drawing: FieldDef[] = [
    sw("DrawingEnabled", t("operation.drawingEnabled")),
    sw("MjNotifyEnabled", t("operation.mjNotify")),
    sw("MjAccountFilterEnabled", t("operation.mjAccountFilter")),
    sw("MjForwardUrlEnabled", t("operation.mjForwardUrl")),
    sw("MjModeClearEnabled", t("operation.mjModeClear")),
    sw("MjActionCheckSuccessEnabled", t("operation.mjActionCheck")),
  ];
  const sensitive: FieldDef[] = [
    sw("CheckSensitiveEnabled", t("operation.checkSensitive")),
    sw("CheckSensitiveOnPromptEnabled", t("operation.checkSensitivePrompt")),
    sw("CheckSensitiveOnCompletionEnabled", t("operation.checkSensitiveCompletion")),
    sw("StopOnSensitiveEnabled", t("operation.stopOnSensitive")),
    { key: "SensitiveWords", label: t("operation.sensitiveWords"), type: "textarea", help: t("operation.onePerLine") },
  ];
  const logs: FieldDef[] = [
    sw("LogConsumeEnabled", t("operation.logConsume")),
    sw("LogErrorEnabled", t("operation.logError")),
    num("LogRetentionDays", t("operation.logRetentionDays"), { min: 0, help: t("operation.logRetentionDaysHelp") }),
  ];
  const dashboard: FieldDef[] = [
    sw("DataExportEnabled", t("operation.dataExport")),
    num("DataExportInterval", t("operation.dataExportInterval"), {
      min: 1,
      help: t("operation.dataExportIntervalHelp"),
    }),
    {
      key: "DataExportDefaultTime",
      label: t("operation.dataExportDefaultTime"),
      type: "select",
      span: 1,
      options: [
        { value: "hour", label: t("operation.hour") },
        { value: "day", label: t("operation.day") },
        { value: "week", label: t("operation.week") },
      ],
    },
    // The dashboard's panels (new-api's console_setting.*), JSON lists checked by the server on save
    sw("console_setting.api_info_enabled", t("operation.panelApiInfo")),
    {
      key: "console_setting.api_info",
      label: t("operation.panelApiInfo"),
      type: "json",
      help: t("operation.panelApiInfoHelp"),
    },
    sw("console_setting.announcements_enabled", t("operation.panelAnnouncements")),
    {
      key: "console_setting.announcements",
      label: t("operation.panelAnnouncements"),
      type: "json",
      help: t("operation.panelAnnouncementsHelp"),
    },
    sw("console_setting.faq_enabled", t("operation.panelFaq")),
    { key: "console_setting.faq", label: t("operation.panelFaq"), type: "json", help: t("operation.panelFaqHelp") },
    sw("console_setting.uptime_kuma_enabled", t("operation.panelUptime")),
    {
      key: "console_setting.uptime_kuma_groups",
      label: t("operation.panelUptime"),
      type: "json",
      help: t("operation.panelUptimeHelp"),
    },
  ];
  const monitoring: FieldDef[] = [
    num("ChannelDisableThreshold", t("operation.channelDisableThreshold"), {
      help: t("operation.channelDisableThresholdHelp"),
      integer: false,
    }),
    sw("AutomaticDisableChannelEnabled", t("operation.autoDisable")),
    sw("AutomaticEnableChannelEnabled", t("operation.autoEnable")),
    {
      key: "AutomaticDisableKeywords",
      label: t("operation.autoDisableKeywords"),
      type: "textarea",
      help: t("operation.autoDisableKeywordsHelp"),
    },
    {
      key: "AutomaticDisableStatusCodes",
      label: t("operation.autoDisableStatusCodes"),
      type: "text",
      span: 2,
      help: t("operation.autoDisableStatusCodesHelp"),
    },
    sw("monitor_setting.auto_test_channel_enabled", t("operation.autoTestChannels")),
    num("monitor_setting.auto_test_channel_minutes", t("operation.autoTestMinutes"), {
      integer: false,
      help: t("operation.autoTestMinutesHelp"),
    }),
  ];
  const quota: FieldDef[] = [
    num("QuotaForNewUser", t("operation.quotaForNewUser")),
    num("PreConsumedQuota", t("operation.preConsumedQuota"), { help: t("operation.preConsumedQuotaHelp") }),
    num("QuotaForInviter", t("operation.quotaForInviter")),
    num("QuotaForInvitee", t("operation.quotaForInvitee")),
    num("QuotaRemindThreshold", t("operation.quotaRemindThreshold")),
    sw("checkin_setting.enabled", t("operation.checkin")),
    num("checkin_setting.min_quota", t("operation.checkinMin")),
    num("checkin_setting.max_quota", t("operation.checkinMax")),
  ];
  const groups: FieldDef[] = [
    {
      key: "GroupRatio",
      label: t("operation.groupRatio"),
      type: "json",
      help: t("operation.groupRatioHelp"),
      validate: groupNamesProblem,
    },
    {
      key: "UserUsableGroups",
      label: t("operation.userUsableGroups"),
      type: "json",
      help: t("operation.userUsableGroupsHelp"),
      validate: groupNamesProblem,
    },
    {
      key: "GroupGroupRatio",
      label: t("operation.groupGroupRatio"),
      type: "json",
      help: t("operation.groupGroupRatioHelp"),
    },
    { key: "AutoGroups", label: t("operation.autoGroups"), type: "json", help: t("operation.autoGroupsHelp") },
    sw("DefaultUseAutoGroup", t("operation.defaultUseAutoGroup")),
  ];
  // Fallbacks across models and the channel choice inside a priority tier (server/modules/option/routing.ts).
  const routing: FieldDef[] = [
    {
      key: "ChannelSelectionStrategy",
      label: t("operation.channelSelection"),
      type: "select",
      span: 2,
      help: t("operation.channelSelectionHelp"),
      options: [
        { value: "weighted", label: t("operation.selectionWeighted") },
        { value: "latency", label: t("operation.selectionLatency") },
      ],
    },
    num("ChannelCooldownSeconds", t("operation.channelCooldown"), {
      max: 3600,
      help: t("operation.channelCooldownHelp"),
      disabledWhen: (v) => v.ChannelSelectionStrategy !== "latency",
    }),
    {
      key: "ModelFallbacks",
      label: t("operation.modelFallbacks"),
      type: "json",
      help: t("operation.modelFallbacksHelp"),
      placeholder: '{"gpt-4o": ["gpt-4o-mini", "claude-3-5-sonnet"]}',
      validate: fallbacksProblem,
    },
    {
      key: "GroupModelFallbacks",
      label: t("operation.groupModelFallbacks"),
      type: "json",
      help: t("operation.groupModelFallbacksHelp"),
      placeholder: '{"vip": {"gpt-4o": ["claude-3-5-sonnet"]}}',
      validate: groupFallbacksProblem,
    },
  ];
  const ratios: FieldDef[] = [
    { key: "ModelPrice", label: t("operation.modelPrice"), type: "json", help: t("operation.modelPriceHelp") },
    { key: "ModelRatio", label: t("operation.modelRatio"), type: "json" },
    { key: "CacheRatio", label: t("operation.cacheRatio"), type: "json" },
    {
      key: "CompletionRatio",
      label: t("operation.completionRatio"),
      type: "json",
      help: t("operation.completionRatioHelp"),
    },
    { key: "CreateCacheRatio", label: t("operation.createCacheRatio"), type: "json" },
    { key: "ImageRatio", label: t("operation.imageRatio"), type: "json" },
    { key: "AudioRatio", label: t("operation.audioRatio"), type: "json" },
    { key: "AudioCompletionRatio", label: t("operation.audioCompletionRatio"), type: "json" },
    sw("ExposeRatioEnabled", t("operation.exposeRatio"), t("operation.exposeRatioHelp")),
  ];
  return (
    <Tabs defaultActiveTab="general" type="card-gutter" lazyload>
      <Tabs.TabPane key="general" title={t("operation.general")}>
        <OptionSection title={t("operation.general")} fields={general} />
      </Tabs.TabPane>
      <Tabs.TabPane key="drawing" title={t("operation.drawing")}>
        <OptionSection title={t("operation.drawing")} fields={drawing} />
      </Tabs.TabPane>
      <Tabs.TabPane key="sensitive" title={t("operation.sensitive")}>
        <OptionSection title={t("operation.sensitive")} fields={sensitive} />
      </Tabs.TabPane>
      <Tabs.TabPane key="log" title={t("operation.logs")}>
        <Space direction="vertical" style={{ width: "100%" }}>
          <OptionSection title={t("operation.logs")} fields={logs} />
          <LogClearing />
        </Space>
      </Tabs.TabPane>
      <Tabs.TabPane key="dashboard" title={t("operation.dashboard")}>
        <OptionSection title={t("operation.dashboard")} fields={dashboard} />
      </Tabs.TabPane>
      <Tabs.TabPane key="monitor" title={t("operation.monitoring")}>
        <OptionSection title={t("operation.monitoring")} fields={monitoring} />
      </Tabs.TabPane>
      <Tabs.TabPane key="quota" title={t("operation.quota")}>
        <OptionSection title={t("operation.quota")} fields={quota} />
      </Tabs.TabPane>
      <Tabs.TabPane key="group" title={t("operation.groups")}>
        <OptionSection title={t("operation.groups")} fields={groups} />
      </Tabs.TabPane>
      <Tabs.TabPane key="routing" title={t("operation.routing")}>
        <Space direction="vertical" style={{ width: "100%" }}>
          <OptionSection title={t("operation.routing")} fields={routing} />
          <ChannelAffinitySection />
        </Space>
      </Tabs.TabPane>
      <Tabs.TabPane key="model" title={t("operation.modelRatios")}>
        <OptionSection title={t("operation.modelRatios")} fields={ratios}>
          <ResetRatios />
        </OptionSection>
      </Tabs.TabPane>
      <Tabs.TabPane key="visual" title={t("operation.visualRatios")}>
        <VisualPricingEditor />
      </Tabs.TabPane>
      <Tabs.TabPane key="unset_models" title={t("operation.unsetModels")}>
        <UnsetModels />
      </Tabs.TabPane>
    </Tabs>
  );
}
