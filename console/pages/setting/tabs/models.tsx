// Provider options (001 §3, §5): Gemini, Claude and global relay behaviour.
import { Space } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { OptionSection } from "../OptionSection.tsx";
import type { FieldDef } from "../fields.ts";

export function ModelsTab() {
  const { t } = useTranslation();
  const pct = { type: "number" as const, min: 0.1, max: 1, help: t("models.budgetHelp"), span: 2 as const };
  const gemini: FieldDef[] = [
    {
      key: "gemini.safety_settings",
      label: t("models.geminiSafety"),
      type: "json",
      help: t("models.geminiSafetyHelp"),
    },
    {
      key: "gemini.version_settings",
      label: t("models.geminiVersion"),
      type: "json",
      help: t("models.geminiVersionHelp"),
    },
    { key: "gemini.supported_imagine_models", label: t("models.geminiImagine"), type: "json" },
    { key: "gemini.thinking_adapter_enabled", label: t("models.thinkingAdapter"), type: "switch" },
    {
      key: "gemini.thinking_adapter_budget_tokens_percentage",
      label: t("models.budgetPercentage"),
      ...pct,
      help: t("models.geminiBudgetHelp"),
    },
  ];
  const claude: FieldDef[] = [
    {
      key: "claude.model_headers_settings",
      label: t("models.claudeHeaders"),
      type: "json",
      help: t("models.claudeHeadersHelp"),
    },
    {
      key: "claude.default_max_tokens",
      label: t("models.claudeMaxTokens"),
      type: "json",
      help: t("models.claudeMaxTokensHelp"),
    },
    { key: "claude.thinking_adapter_enabled", label: t("models.thinkingAdapter"), type: "switch" },
    { key: "claude.thinking_adapter_budget_tokens_percentage", label: t("models.budgetPercentage"), ...pct },
  ];
  const global: FieldDef[] = [
    {
      key: "global.pass_through_request_enabled",
      label: t("models.passThrough"),
      type: "switch",
      help: t("models.passThroughHelp"),
    },
    { key: "general_setting.ping_interval_enabled", label: t("models.pingEnabled"), type: "switch" },
    {
      key: "general_setting.ping_interval_seconds",
      label: t("models.pingSeconds"),
      type: "number",
      min: 1,
      integer: true,
      span: 1,
      disabledWhen: (v) => v["general_setting.ping_interval_enabled"] !== "true",
    },
  ];
  return (
    <Space direction="vertical" size="medium" style={{ width: "100%" }}>
      <OptionSection title={t("models.gemini")} fields={gemini} />
      <OptionSection title={t("models.claude")} fields={claude} />
      <OptionSection title={t("models.global")} fields={global} />
    </Space>
  );
}
