// The relay's response cache (server/relay/cache): on/off, how long answers are kept (site-wide and per
// model), what a hit costs and the largest answer kept, and a button that clears it (a new
// ResponseCacheGeneration, part of every key). Part of the system settings tab.
import { Button, Message, Modal } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api } from "../../../api/index.ts";
import { OptionSection } from "../OptionSection.tsx";
import { useSettings } from "../context.tsx";
import { objectValuesProblem, type FieldDef } from "../fields.ts";

/** {"model": seconds} with whole, non-negative seconds; an i18n key when not. */
export const modelTtlProblem = (value: string): string | null =>
  objectValuesProblem(
    value,
    "system.responseCacheModelTtlInvalid",
    (v) => Number.isSafeInteger(v) && (v as number) >= 0,
  );

function ClearCacheButton() {
  const { t } = useTranslation();
  const { commit } = useSettings();
  const clear = () =>
    Modal.confirm({
      title: t("system.responseCacheClear"),
      content: t("system.responseCacheClearConfirm"),
      onOk: async () => {
        const value = String(Date.now());
        const r = await api.put("/api/option/", { key: "ResponseCacheGeneration", value });
        if (r.success) {
          commit({ ResponseCacheGeneration: value });
          Message.success(t("system.responseCacheCleared"));
        } else Message.error(r.message || t("save.failed"));
      },
    });
  return (
    <div style={{ marginBottom: 16 }}>
      <Button status="warning" onClick={clear}>
        {t("system.responseCacheClear")}
      </Button>
    </div>
  );
}

export function ResponseCacheSection() {
  const { t } = useTranslation();
  const off = (all: Record<string, string>) => all.ResponseCacheEnabled !== "true";
  const fields: FieldDef[] = [
    {
      key: "ResponseCacheEnabled",
      label: t("system.responseCacheEnabled"),
      type: "switch",
      help: t("system.responseCacheEnabledHelp"),
    },
    {
      key: "ResponseCacheScope",
      label: t("system.responseCacheScope"),
      type: "select",
      span: 2,
      help: t("system.responseCacheScopeHelp"),
      disabledWhen: off,
      options: [
        { value: "group", label: t("system.responseCacheScopeGroup") },
        { value: "user", label: t("system.responseCacheScopeUser") },
        { value: "token", label: t("system.responseCacheScopeToken") },
      ],
    },
    {
      key: "ResponseCacheTTLSeconds",
      label: t("system.responseCacheTtl"),
      type: "number",
      min: 0,
      integer: true,
      span: 2,
      help: t("system.responseCacheTtlHelp"),
      disabledWhen: off,
    },
    {
      key: "ResponseCacheBillingRatio",
      label: t("system.responseCacheRatio"),
      type: "number",
      min: 0,
      max: 1,
      step: 0.05,
      span: 2,
      help: t("system.responseCacheRatioHelp"),
      disabledWhen: off,
    },
    {
      key: "ResponseCacheMaxEntryBytes",
      label: t("system.responseCacheMaxBytes"),
      type: "number",
      min: 1,
      integer: true,
      span: 2,
      help: t("system.responseCacheMaxBytesHelp"),
      disabledWhen: off,
    },
    {
      key: "ResponseCacheModelTTL",
      label: t("system.responseCacheModelTtl"),
      type: "json",
      placeholder: '{"gpt-4o": 3600, "gpt-4o-mini": 0}',
      help: t("system.responseCacheModelTtlHelp"),
      validate: (v) => modelTtlProblem(v),
      disabledWhen: off,
    },
  ];
  return <OptionSection title={t("system.responseCache")} fields={fields} extra={() => <ClearCacheButton />} />;
}
