// The dashboard's panels (new-api's console_setting.*): API addresses, announcements, FAQ and Uptime Kuma status,
// each shown while its switch is on and it has something to show. Every text is rendered as text; links are
// http(s) only (the server checks them on save, the console again here).
import type React from "react";
import { useEffect, useState } from "react";
import { Badge, Button, Card, Collapse, Grid, Tag, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import { toast } from "../../lib/toast.ts";

interface Monitor {
  name: string;
  uptime: number;
  status: number;
  group?: string;
}
interface UptimeGroup {
  categoryName: string;
  monitors: Monitor[];
}

const ROW: React.CSSProperties = {
  display: "flex",
  gap: 8,
  alignItems: "flex-start",
  flexWrap: "wrap",
  marginBottom: 8,
};
const isHttp = (u: unknown): u is string => typeof u === "string" && /^https?:\/\//i.test(u);
/** Semi's palette names (new-api) → Arco tag colours. */
const TAG_COLOR: Record<string, string> = {
  blue: "arcoblue",
  green: "green",
  cyan: "cyan",
  purple: "purple",
  pink: "pinkpurple",
  red: "red",
  orange: "orange",
  amber: "gold",
  yellow: "gold",
  lime: "lime",
  "light-green": "green",
  teal: "cyan",
  "light-blue": "blue",
  indigo: "arcoblue",
  violet: "purple",
  grey: "gray",
  slate: "gray",
};
const NOTICE_COLOR: Record<string, string> = {
  default: "gray",
  ongoing: "arcoblue",
  success: "green",
  warning: "orange",
  error: "red",
};
/** Uptime Kuma's beat states. */
const BEAT: Record<number, { status: "success" | "error" | "warning" | "processing"; key: string }> = {
  0: { status: "error", key: "down" },
  1: { status: "success", key: "up" },
  2: { status: "warning", key: "pending" },
  3: { status: "processing", key: "maintenance" },
};

function UptimePanel() {
  const { t } = useTranslation();
  const [groups, setGroups] = useState<UptimeGroup[]>([]);
  useEffect(() => {
    void api
      .get<UptimeGroup[]>("/api/uptime/status")
      .then((r) => r.success && Array.isArray(r.data) && setGroups(r.data));
  }, []);
  const shown = groups.filter((g) => g.monitors?.length);
  if (!shown.length) return null;
  return (
    <Card title={t("ops.panels.uptime")} data-testid="panel-uptime">
      {shown.map((g) => (
        <div key={g.categoryName} style={{ marginBottom: 12 }}>
          <Typography.Text bold>{g.categoryName}</Typography.Text>
          {g.monitors.map((m, i) => {
            const beat = BEAT[m.status] ?? BEAT[2]!;
            return (
              <div key={`${m.name}-${i}`} style={ROW} data-testid="uptime-monitor">
                <Badge status={beat.status} text={m.name} />
                <Typography.Text type="secondary">
                  {t(`ops.panels.${beat.key}`)} · {t("ops.panels.uptime24h", { value: (m.uptime * 100).toFixed(2) })}
                </Typography.Text>
              </div>
            );
          })}
        </div>
      ))}
    </Card>
  );
}

export function DashboardPanels() {
  const { t, i18n } = useTranslation();
  const { status } = useApp();
  const apiInfo = status.api_info_enabled !== false ? (status.api_info ?? []).filter((a) => isHttp(a.url)) : [];
  const notices = status.announcements_enabled !== false ? (status.announcements ?? []).filter((a) => a.content) : [];
  const faq = status.faq_enabled !== false ? (status.faq ?? []).filter((f) => f.question) : [];
  const copy = async (text: string) => {
    try {
      await navigator.clipboard.writeText(text);
      toast.success(t("ops.panels.copied"));
    } catch {
      toast.error(text);
    }
  };
  const date = (iso?: string) => {
    const ms = Date.parse(String(iso ?? ""));
    return Number.isNaN(ms) ? "" : new Date(ms).toLocaleString(i18n.language);
  };
  const cards = [
    apiInfo.length > 0 && (
      <Card key="api" title={t("ops.panels.apiInfo")} data-testid="panel-api-info">
        {apiInfo.map((a, i) => (
          <div key={i} style={ROW} data-testid="api-info-row">
            <Tag color={TAG_COLOR[String(a.color)] ?? "gray"}>{a.route}</Tag>
            <Typography.Text style={{ wordBreak: "break-all" }}>{a.url}</Typography.Text>
            <Typography.Text type="secondary">{a.description}</Typography.Text>
            <Button size="mini" onClick={() => void copy(String(a.url))}>
              {t("ops.panels.copy")}
            </Button>
          </div>
        ))}
      </Card>
    ),
    notices.length > 0 && (
      <Card key="notices" title={t("ops.panels.announcements")} data-testid="panel-announcements">
        {notices.map((n, i) => (
          <div key={i} style={ROW} data-testid="announcement">
            <Badge color={NOTICE_COLOR[String(n.type)] ?? "gray"} />
            <div>
              <div style={{ whiteSpace: "pre-wrap" }}>{n.content}</div>
              {n.extra && <Typography.Text type="secondary">{n.extra}</Typography.Text>}
              <div>
                <Typography.Text type="secondary">{date(n.publishDate)}</Typography.Text>
              </div>
            </div>
          </div>
        ))}
      </Card>
    ),
    faq.length > 0 && (
      <Card key="faq" title={t("ops.panels.faq")} data-testid="panel-faq">
        <Collapse bordered={false}>
          {faq.map((f, i) => (
            <Collapse.Item key={i} name={String(i)} header={f.question}>
              <div style={{ whiteSpace: "pre-wrap" }}>{f.answer}</div>
            </Collapse.Item>
          ))}
        </Collapse>
      </Card>
    ),
    status.uptime_kuma_enabled && <UptimePanel key="uptime" />,
  ].filter(Boolean);
  if (!cards.length) return null;
  return (
    <Grid.Row gutter={[16, 16]} style={{ marginBottom: 16 }} data-testid="dashboard-panels">
      {cards.map((card, i) => (
        <Grid.Col key={i} xs={24} lg={12}>
          {card}
        </Grid.Col>
      ))}
    </Grid.Row>
  );
}
