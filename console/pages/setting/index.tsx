// Settings (spec 000 §2.8–§2.10, 001 §2): tabs chosen by ?tab=, default operation.
import { useCallback, useEffect, useMemo, useState } from "react";
import { Alert, Message, Spin, Tabs } from "@arco-design/web-react";
import { useLocation, useSearchParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { Page } from "../../components/Page.tsx";
import { useApp } from "../../lib/app-state.tsx";
import { SettingsContext, type SettingsState } from "./context.tsx";
import { OperationTab } from "./tabs/operation.tsx";
import { RateLimitTab } from "./tabs/ratelimit.tsx";
import { ModelsTab } from "./tabs/models.tsx";
import { SystemTab } from "./tabs/system.tsx";
import { OtherTab } from "./tabs/other.tsx";

export const SETTING_TABS = ["operation", "ratelimit", "models", "system", "other"] as const;

export default function SettingPage() {
  const { t } = useTranslation();
  const { refreshStatus } = useApp();
  const [params, setParams] = useSearchParams();
  const { state } = useLocation();
  const tab = (SETTING_TABS as readonly string[]).includes(params.get("tab") ?? "") ? params.get("tab")! : "operation";
  const [options, setOptions] = useState<Record<string, string> | null>(null);
  const [error, setError] = useState<string | null>(null);

  const reload = useCallback(async () => {
    const r = await api.get<Array<{ key: string; value: string }>>("/api/option/");
    if (!r.success || !r.data) {
      setError(r.message);
      Message.error(r.message);
      return;
    }
    setOptions(Object.fromEntries(r.data.map((o) => [o.key, String(o.value ?? "")])));
  }, []);

  useEffect(() => {
    void reload();
  }, [reload]);

  const ctx = useMemo<SettingsState>(
    () => ({
      options: options ?? {},
      commit: (values) => {
        setOptions((o) => ({ ...(o ?? {}), ...values }));
        // Flags the shell reads (sidebar, badges, footer) come from the status object.
        void refreshStatus();
      },
      reload,
    }),
    [options, reload, refreshStatus],
  );

  return (
    <Page title={t("settings.title")}>
      {(state as any)?.note && <Alert type="warning" content={(state as any).note} style={{ marginBottom: 12 }} />}
      {error && !options ? (
        <Alert type="error" content={error} />
      ) : !options ? (
        <Spin style={{ display: "block", margin: 32 }} />
      ) : (
        <SettingsContext.Provider value={ctx}>
          <Tabs activeTab={tab} onChange={(k) => setParams({ tab: k })} lazyload destroyOnHide={false}>
            <Tabs.TabPane key="operation" title={t("settings.tabOperation")}>
              <OperationTab />
            </Tabs.TabPane>
            <Tabs.TabPane key="ratelimit" title={t("settings.tabRatelimit")}>
              <RateLimitTab />
            </Tabs.TabPane>
            <Tabs.TabPane key="models" title={t("settings.tabModels")}>
              <ModelsTab />
            </Tabs.TabPane>
            <Tabs.TabPane key="system" title={t("settings.tabSystem")}>
              <SystemTab />
            </Tabs.TabPane>
            <Tabs.TabPane key="other" title={t("settings.tabOther")}>
              <OtherTab />
            </Tabs.TabPane>
          </Tabs>
        </SettingsContext.Provider>
      )}
    </Page>
  );
}
