// Model request rate limits (001 §3, §5): period and counts, plus per-group overrides that win over
// the global numbers.
import { useTranslation } from "react-i18next";
import { OptionSection } from "../OptionSection.tsx";
import { rateLimitGroupProblem, type FieldDef } from "../fields.ts";

export function RateLimitTab() {
  const { t } = useTranslation();
  const fields: FieldDef[] = [
    { key: "ModelRequestRateLimitEnabled", label: t("ratelimit.enabled"), type: "switch" },
    {
      key: "ModelRequestRateLimitDurationMinutes",
      label: t("ratelimit.period"),
      type: "number",
      min: 0,
      integer: true,
      help: t("ratelimit.periodHelp"),
      span: 1,
    },
    {
      key: "ModelRequestRateLimitCount",
      label: t("ratelimit.count"),
      type: "number",
      min: 0,
      integer: true,
      help: t("ratelimit.countHelp"),
      span: 1,
    },
    {
      key: "ModelRequestRateLimitSuccessCount",
      label: t("ratelimit.successCount"),
      type: "number",
      min: 1,
      integer: true,
      help: t("ratelimit.successCountHelp"),
      span: 1,
    },
    {
      key: "ModelRequestRateLimitGroup",
      label: t("ratelimit.group"),
      type: "json",
      help: t("ratelimit.groupHelp"),
      placeholder: '{"default": [200, 100], "vip": [0, 1000]}',
      validate: (v) => rateLimitGroupProblem(v),
    },
  ];
  return <OptionSection title={t("ratelimit.title")} fields={fields} />;
}
