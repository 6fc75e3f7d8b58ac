// Data dashboard (/detail): quota, tokens and calls per model over time, by hour, day or week (spec 001 §9).
import { useEffect, useMemo, useState } from "react";
import { Card, Empty, Grid, Input, Radio, Space, Statistic, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { DateRange, Field, FilterBar } from "../../components/Filters.tsx";
import { toast } from "../../lib/toast.ts";
import { api, qs } from "../../api/index.ts";
import { isAdmin, useApp } from "../../lib/app-state.tsx";
import { renderNumber, renderQuota } from "../../lib/format.ts";
import { DASHBOARD_GRANULARITIES, type DashboardGranularity } from "../../../server/catalogue/index.ts";
import { DAY_MS, HOUR_MS, formatDateTime, parseDateTime, toSeconds } from "../_shared/time.ts";
import { StackedBars, type Series } from "./StackedBars.tsx";
import { DashboardPanels } from "./Panels.tsx";

export interface QuotaRow {
  model_name: string;
  created_at: number;
  token_used: number;
  count: number;
  quota: number;
}

const SPAN_MS: Record<DashboardGranularity, number> = { hour: DAY_MS, day: 7 * DAY_MS, week: 28 * DAY_MS };

function bucketLabel(sec: number, g: DashboardGranularity): string {
  const d = new Date(sec * 1000);
  const p = (n: number) => String(n).padStart(2, "0");
  return g === "hour"
    ? `${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}h`
    : `${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

/** Rows (model × bucket) → x labels and one series per model, for each measure. */
export function toSeries(rows: QuotaRow[], g: DashboardGranularity, measure: "quota" | "token_used" | "count") {
  const buckets = [...new Set(rows.map((r) => r.created_at))].sort((a, b) => a - b);
  const models = [...new Set(rows.map((r) => r.model_name))].sort();
  const index = new Map(buckets.map((b, i) => [b, i]));
  const series: Series[] = models.map((m) => ({ name: m, values: buckets.map(() => 0) }));
  const byModel = new Map(series.map((s) => [s.name, s]));
  for (const r of rows) byModel.get(r.model_name)!.values[index.get(r.created_at)!] += Number(r[measure]) || 0;
  return { labels: buckets.map((b) => bucketLabel(b, g)), series };
}

export default function DetailPage() {
  const { t } = useTranslation();
  const { user, status } = useApp();
  const admin = isAdmin(user);
  const initial = (DASHBOARD_GRANULARITIES as readonly string[]).includes(String(status.data_export_default_time))
    ? (status.data_export_default_time as DashboardGranularity)
    : "hour";
  const [granularity, setGranularity] = useState<DashboardGranularity>(initial);
  const [start, setStart] = useState(formatDateTime(new Date(Date.now() - SPAN_MS[initial])));
  const [end, setEnd] = useState(formatDateTime(new Date(Date.now() + HOUR_MS)));
  const [username, setUsername] = useState("");
  const [rows, setRows] = useState<QuotaRow[]>([]);
  const [loading, setLoading] = useState(false);

  const load = async (g = granularity, s = start, e = end) => {
    const from = parseDateTime(s);
    const to = parseDateTime(e);
    if (!from || !to) return toast.error(t("ops.log.badTime"));
    setLoading(true);
    const path = admin ? "/api/data/" : "/api/data/self";
    const r = await api.get<QuotaRow[]>(
      `${path}${qs({ start_timestamp: toSeconds(from), end_timestamp: toSeconds(to), granularity: g, username: admin ? username.trim() : "" })}`,
    );
    setLoading(false);
    if (!r.success) return toast.error(r.message);
    setRows(Array.isArray(r.data) ? r.data : []);
  };

  useEffect(() => {
    void load();
  }, []);

  const changeGranularity = (g: DashboardGranularity) => {
    setGranularity(g);
    const s = formatDateTime(new Date(Date.now() - SPAN_MS[g]));
    setStart(s);
    void load(g, s, end);
  };

  const totals = useMemo(
    () =>
      rows.reduce(
        (a, r) => ({
          quota: a.quota + Number(r.quota),
          tokens: a.tokens + Number(r.token_used),
          count: a.count + Number(r.count),
        }),
        { quota: 0, tokens: 0, count: 0 },
      ),
    [rows],
  );
  const charts = useMemo(
    () => ({
      quota: toSeries(rows, granularity, "quota"),
      tokens: toSeries(rows, granularity, "token_used"),
      count: toSeries(rows, granularity, "count"),
    }),
    [rows, granularity],
  );

  return (
    <Page title={t("ops.detail.title")}>
      <DashboardPanels />
      <FilterBar onSearch={() => void load()} loading={loading}>
        <Field label={t("ops.filter.time")} wide>
          <DateRange
            value={[start, end]}
            presets={["last24h", "last7d", "last30d", "thisMonth"]}
            onChange={([s, e]) => {
              setStart(s);
              setEnd(e);
            }}
          />
        </Field>
        <Field label={t("ops.detail.granularity")}>
          <Radio.Group type="button" value={granularity} onChange={changeGranularity}>
            {DASHBOARD_GRANULARITIES.map((g) => (
              <Radio key={g} value={g}>
                {t(`ops.detail.${g}`)}
              </Radio>
            ))}
          </Radio.Group>
        </Field>
        {admin && (
          <Field label={t("ops.log.username")}>
            <Input allowClear value={username} onChange={setUsername} />
          </Field>
        )}
      </FilterBar>
      <Grid.Row gutter={[16, 16]} style={{ marginBottom: 16 }}>
        <Grid.Col xs={24} sm={8}>
          <Card>
            <Statistic title={t("ops.detail.totalQuota")} value={renderQuota(totals.quota)} />
          </Card>
        </Grid.Col>
        <Grid.Col xs={24} sm={8}>
          <Card>
            <Statistic title={t("ops.detail.totalTokens")} value={renderNumber(totals.tokens)} />
          </Card>
        </Grid.Col>
        <Grid.Col xs={24} sm={8}>
          <Card>
            <Statistic title={t("ops.detail.totalCalls")} value={renderNumber(totals.count)} />
          </Card>
        </Grid.Col>
      </Grid.Row>
      {rows.length === 0 ? (
        <Empty description={t("ops.detail.empty")} />
      ) : (
        <Space direction="vertical" size="large" style={{ width: "100%" }}>
          <Card title={t("ops.detail.quotaChart")}>
            <StackedBars
              title="quota"
              labels={charts.quota.labels}
              series={charts.quota.series}
              format={(v) => renderQuota(Math.round(v))}
            />
          </Card>
          <Card title={t("ops.detail.tokensChart")}>
            <StackedBars
              title="tokens"
              labels={charts.tokens.labels}
              series={charts.tokens.series}
              format={(v) => renderNumber(Math.round(v))}
            />
          </Card>
          <Card title={t("ops.detail.callsChart")}>
            <StackedBars
              title="calls"
              labels={charts.count.labels}
              series={charts.count.series}
              format={(v) => renderNumber(Math.round(v))}
            />
          </Card>
          <Typography.Text type="secondary">
            {t("ops.detail.models", { count: charts.quota.series.length })}
          </Typography.Text>
        </Space>
      )}
    </Page>
  );
}
