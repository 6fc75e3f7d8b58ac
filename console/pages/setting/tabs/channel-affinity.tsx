// Channel affinity (server/relay/affinity.ts): a conversation stays on the channel that served its previous
// call, so the provider's prompt cache is read again. Its switches, TTL, capacity and rules (new-api's
// channel_affinity_setting keys), and the pins held now per rule with a button that clears them. Part of the
// routing tab.
import { useCallback, useEffect, useState } from "react";
import { Button, Message, Popconfirm, Space, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api } from "../../../api/index.ts";
import { OptionSection } from "../OptionSection.tsx";
import type { FieldDef } from "../fields.ts";
import { AFFINITY_OPTIONS, affinityRulesProblem } from "../../../../server/catalogue/channel-affinity.ts";

interface Stats {
  enabled: boolean;
  total: number;
  unknown: number;
  by_rule_name: Record<string, number>;
  cache_capacity: number;
  cache_algo: string;
}

/** The i18n key for a rules value the server would refuse (it names the rule and field on save), or null. */
export const affinityRulesKey = (value: string): string | null =>
  affinityRulesProblem(value) ? "operation.affinityRulesInvalid" : null;

function Pins() {
  const { t } = useTranslation();
  const [stats, setStats] = useState<Stats | null>(null);
  const load = useCallback(async () => {
    const r = await api.get<Stats>("/api/option/channel_affinity_cache");
    if (r.success && r.data) setStats(r.data);
  }, []);
  useEffect(() => {
    void load();
  }, [load]);
  const clear = async () => {
    const r = await api.del<{ deleted: number }>("/api/option/channel_affinity_cache?all=true");
    if (r.success) {
      Message.success(t("operation.affinityCleared", { count: r.data?.deleted ?? 0 }));
      await load();
    } else Message.error(r.message || t("save.failed"));
  };
  const rules = Object.entries(stats?.by_rule_name ?? {})
    .map(([name, n]) => `${name}: ${n}`)
    .join(", ");
  return (
    <Space direction="vertical" style={{ marginBottom: 16 }} data-testid="affinity-pins">
      <Typography.Text>
        {stats
          ? t("operation.affinityPins", {
              total: stats.total,
              rules: rules || "—",
              store:
                stats.cache_algo === "redis"
                  ? "Redis"
                  : t("operation.affinityMemory", { capacity: stats.cache_capacity }),
            })
          : "…"}
      </Typography.Text>
      <Space>
        <Button size="small" onClick={() => void load()}>
          {t("operation.affinityRefresh")}
        </Button>
        <Popconfirm title={t("operation.affinityClearConfirm")} onOk={() => void clear()}>
          <Button size="small" status="warning">
            {t("operation.affinityClear")}
          </Button>
        </Popconfirm>
      </Space>
    </Space>
  );
}

export function ChannelAffinitySection() {
  const { t } = useTranslation();
  const off = (all: Record<string, string>) => all[AFFINITY_OPTIONS.enabled] !== "true";
  const fields: FieldDef[] = [
    {
      key: AFFINITY_OPTIONS.enabled,
      label: t("operation.affinityEnabled"),
      type: "switch",
      help: t("operation.affinityEnabledHelp"),
    },
    {
      key: AFFINITY_OPTIONS.switchOnSuccess,
      label: t("operation.affinitySwitchOnSuccess"),
      type: "switch",
      help: t("operation.affinitySwitchOnSuccessHelp"),
      disabledWhen: off,
    },
    {
      key: AFFINITY_OPTIONS.keepOnChannelDisabled,
      label: t("operation.affinityKeepOnDisabled"),
      type: "switch",
      help: t("operation.affinityKeepOnDisabledHelp"),
      disabledWhen: off,
    },
    {
      key: AFFINITY_OPTIONS.defaultTtlSeconds,
      label: t("operation.affinityTtl"),
      type: "number",
      min: 1,
      integer: true,
      span: 2,
      help: t("operation.affinityTtlHelp"),
      disabledWhen: off,
    },
    {
      key: AFFINITY_OPTIONS.maxEntries,
      label: t("operation.affinityMaxEntries"),
      type: "number",
      min: 1,
      integer: true,
      span: 2,
      help: t("operation.affinityMaxEntriesHelp"),
      disabledWhen: off,
    },
    {
      key: AFFINITY_OPTIONS.rules,
      label: t("operation.affinityRules"),
      type: "json",
      help: t("operation.affinityRulesHelp"),
      validate: affinityRulesKey,
      disabledWhen: off,
    },
  ];
  return <OptionSection title={t("operation.affinity")} fields={fields} extra={() => <Pins />} />;
}
