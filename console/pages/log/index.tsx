// Usage logs (spec 001 §2 Usage log page, §6 admin extras, §9 colours and "more data at the last page").
import React, { useEffect, useRef, useState } from "react";
import { Button, Descriptions, Input, Message, Modal, Select, Space, Table, Tag, Tooltip, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { api, qs } from "../../api/index.ts";
import { isAdmin, useApp } from "../../lib/app-state.tsx";
import { renderNumber, renderQuota, timestampToString } from "../../lib/format.ts";
import { LOG_TYPE } from "../../../server/catalogue/index.ts";
import { HOUR_MS, formatDateTime, parseDateTime, startOfToday, toSeconds } from "../_shared/time.ts";
import { firstTokenColor, useTimeColor } from "../_shared/colors.ts";
import { ColumnPicker, useColumnVisibility } from "../_shared/ColumnPicker.tsx";
import { asPage, sizeOptions, usePageSize } from "../_shared/paging.ts";

export interface LogRow {
  id: number; created_at: number; type: number; channel: number; channel_name?: string; username: string; user_id: number;
  token_name: string; group?: string; model_name: string; use_time: number; is_stream: boolean; prompt_tokens: number;
  completion_tokens: number; quota: number; content: string; other: string;
}

export const LOGS_COLUMNS_KEY = "logs-table-columns";
const TYPE_COLOR: Record<number, string> = { 1: "cyan", 2: "green", 3: "orange", 4: "purple", 5: "red" };
const MUTED: React.CSSProperties = { fontSize: 12, color: "var(--color-text-3)" };
const DETAILS: React.CSSProperties = {
  display: "-webkit-box", WebkitLineClamp: 2, WebkitBoxOrient: "vertical", overflow: "hidden", minWidth: 120, fontSize: 13, lineHeight: 1.4,
};

/** One line cut with "..." at `max` px; the whole text in the native tooltip. Keeps long names from widening the table. */
function Clip({ text, max, style, onClick }: { text: string; max: number; style?: React.CSSProperties; onClick?: () => void }) {
  return (
    <span title={text} onClick={onClick}
      style={{ display: "inline-block", maxWidth: max, overflow: "hidden", textOverflow: "ellipsis", whiteSpace: "nowrap", verticalAlign: "bottom", ...style }}>
      {text}
    </span>
  );
}

export function parseOther(raw: string | undefined): Record<string, any> {
  if (!raw) return {};
  try {
    const v = JSON.parse(raw);
    return v && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** The expandable details: pricing factors and flags the relay recorded in `other`. */
export function detailEntries(row: LogRow, t: (k: string) => string): Array<{ label: string; value: React.ReactNode }> {
  const o = parseOther(row.other);
  const out: Array<{ label: string; value: React.ReactNode }> = [];
  const add = (label: string, value: unknown) => {
    if (value !== undefined && value !== null && value !== "") out.push({ label, value: String(value) });
  };
  add(t("ops.log.modelRatio"), o.model_ratio);
  add(t("ops.log.completionRatio"), o.completion_ratio);
  add(t("ops.log.groupRatio"), o.group_ratio);
  if (o.model_price !== undefined && o.model_price !== -1) add(t("ops.log.modelPrice"), o.model_price);
  add(t("ops.log.cacheTokens"), o.cache_tokens);
  add(t("ops.log.cacheRatio"), o.cache_ratio);
  add(t("ops.log.cacheCreationTokens"), o.cache_creation_tokens);
  add(t("ops.log.cacheCreationRatio"), o.cache_creation_ratio);
  if (o.is_model_mapped) add(t("ops.log.upstreamModel"), o.upstream_model_name);
  add(t("ops.log.reasoningEffort"), o.reasoning_effort);
  if (o.web_search) add(t("ops.log.webSearch"), o.web_search_call_count ?? o.web_search);
  if (o.file_search) add(t("ops.log.fileSearch"), o.file_search_call_count ?? o.file_search);
  if (o.image) add(t("ops.log.image"), o.image_ratio ?? o.image);
  if (o.audio || o.ws) add(t("ops.log.audio"), JSON.stringify({ audio_input: o.audio_input, audio_output: o.audio_output }));
  const used = o.admin_info?.use_channel;
  if (Array.isArray(used) && used.length) add(t("ops.log.retry"), used.join(" → "));
  if (row.content) out.push({ label: t("ops.log.details"), value: row.content });
  return out;
}

interface Filters { type: number; token_name: string; model_name: string; start: string; end: string; group: string; channel: string; username: string }

function defaultFilters(): Filters {
  return {
    type: LOG_TYPE.unknown, token_name: "", model_name: "", group: "", channel: "", username: "",
    start: formatDateTime(startOfToday()), end: formatDateTime(new Date(Date.now() + HOUR_MS)),
  };
}

export default function LogPage() {
  const { t } = useTranslation();
  const { user } = useApp();
  const admin = isAdmin(user);
  const [filters, setFilters] = useState<Filters>(defaultFilters);
  const [rows, setRows] = useState<LogRow[]>([]);
  const [total, setTotal] = useState(0);
  const [page, setPage] = useState(1);
  const [size, setSize] = usePageSize("log");
  const [loading, setLoading] = useState(false);
  const [stat, setStat] = useState<{ quota: number; rpm: number; tpm: number } | null>(null);
  const [userInfo, setUserInfo] = useState<Record<string, any> | null>(null);
  const [error, setError] = useState("");
  const query = useRef<Record<string, string | number>>({});

  const columnDefs = [
    { key: "time", title: t("ops.log.time") },
    ...(admin ? [{ key: "channel", title: t("ops.log.channel") }, { key: "user", title: t("ops.log.user") }] : []),
    { key: "token", title: t("ops.log.token") },
    { key: "group", title: t("ops.group") },
    { key: "type", title: t("ops.log.type") },
    { key: "model", title: t("ops.log.model") },
    { key: "useTime", title: t("ops.log.useTime") },
    { key: "prompt", title: t("ops.log.prompt") },
    { key: "completion", title: t("ops.log.completion") },
    { key: "cost", title: t("ops.log.cost") },
    ...(admin ? [{ key: "retry", title: t("ops.log.retry") }] : []),
    { key: "details", title: t("ops.log.details") },
  ];
  const { visible, update } = useColumnVisibility(LOGS_COLUMNS_KEY, columnDefs.map((c) => c.key));

  const buildQuery = (): Record<string, string | number> | null => {
    const start = filters.start ? parseDateTime(filters.start) : null;
    const end = filters.end ? parseDateTime(filters.end) : null;
    if ((filters.start && !start) || (filters.end && !end)) {
      setError(t("ops.log.badTime"));
      return null;
    }
    setError("");
    const q: Record<string, string | number> = {
      type: filters.type, token_name: filters.token_name.trim(), model_name: filters.model_name.trim(), group: filters.group.trim(),
      start_timestamp: start ? toSeconds(start) : "", end_timestamp: end ? toSeconds(end) : "",
    };
    if (admin) Object.assign(q, { channel: filters.channel.trim(), username: filters.username.trim() });
    return q;
  };

  /** Loads server page `serverPage` and appends (or replaces for page 1): the table pages over what is loaded. */
  const fetchPage = async (serverPage: number, pageSize: number, replace: boolean) => {
    setLoading(true);
    const r = await api.get(`${admin ? "/api/log/" : "/api/log/self/"}${qs({ ...query.current, p: serverPage, page_size: pageSize })}`);
    setLoading(false);
    if (!r.success) return Message.error(r.message);
    const { items, total: n } = asPage<LogRow>(r.data);
    setTotal(n);
    setRows((prev) => (replace ? items : [...prev, ...items]));
  };

  const search = async (pageSize = size) => {
    const q = buildQuery();
    if (!q) return;
    query.current = q;
    setPage(1);
    await fetchPage(1, pageSize, true);
    const s = await api.get(`${admin ? "/api/log/stat" : "/api/log/self/stat"}${qs(q)}`);
    if (s.success && s.data) setStat({ quota: Number(s.data.quota ?? 0), rpm: Number(s.data.rpm ?? 0), tpm: Number(s.data.tpm ?? 0) });
  };

  useEffect(() => {
    void search();
  }, []);

  const onPageChange = (p: number, s: number) => {
    if (s !== size) {
      setSize(s);
      void search(s);
      return;
    }
    setPage(p);
    // Reaching the last loaded page fetches the next server page, if the server has more.
    const loadedPages = Math.ceil(rows.length / size);
    if (p >= loadedPages && rows.length < total) void fetchPage(loadedPages + 1, size, false);
  };

  const showUser = async (id: number) => {
    const r = await api.get(`/api/user/${id}`);
    if (!r.success) return Message.error(r.message);
    setUserInfo(r.data);
  };

  const all = [
    {
      key: "time", title: t("ops.log.time"), dataIndex: "created_at", width: 92,
      render: (v: number) => {
        const [date, time] = timestampToString(v).split(" ");
        return <div style={{ whiteSpace: "nowrap", lineHeight: 1.3 }}><div style={MUTED}>{date}</div>{time}</div>;
      },
    },
    { key: "channel", title: t("ops.log.channel"), dataIndex: "channel", render: (v: number, r: LogRow) => (v ? <Tooltip content={r.channel_name || String(v)}><Tag size="small">{v}</Tag></Tooltip> : "") },
    {
      key: "user", title: t("ops.log.user"), dataIndex: "username",
      render: (v: string, r: LogRow) => (v ? <Clip text={v} max={96} style={{ cursor: "pointer", color: "rgb(var(--arcoblue-6))" }} onClick={() => showUser(r.user_id)} /> : ""),
    },
    { key: "token", title: t("ops.log.token"), dataIndex: "token_name", render: (v: string) => (v ? <Tag size="small" color="gray" className="sy-log-wrap">{v}</Tag> : "") },
    { key: "group", title: t("ops.group"), dataIndex: "group", render: (v: string) => (v ? <Tag size="small" className="sy-log-wrap">{v}</Tag> : "") },
    { key: "type", title: t("ops.log.type"), dataIndex: "type", render: (v: number) => <Tag size="small" color={TYPE_COLOR[v] ?? "gray"}>{t(`ops.log.types.${v}`)}</Tag> },
    { key: "model", title: t("ops.log.model"), dataIndex: "model_name", render: (v: string) => (v ? <Tag size="small" color="arcoblue" className="sy-log-wrap">{v}</Tag> : "") },
    {
      key: "useTime", title: t("ops.log.useTime"), dataIndex: "use_time", width: 108,
      render: (v: number, r: LogRow) => {
        if (r.type !== LOG_TYPE.consume && r.type !== LOG_TYPE.error) return "";
        const frt = Number(parseOther(r.other).frt ?? 0);
        // Use time and first token side by side, the stream flag under them: two short lines, not three.
        return (
          <div style={{ display: "flex", flexWrap: "wrap", gap: 4, width: 92 }}>
            <Tag size="small" color={useTimeColor(v)} data-testid="use-time">{v} s</Tag>
            {r.is_stream && frt > 0 && <Tag size="small" color={firstTokenColor(frt / 1000)} data-testid="frt">{(frt / 1000).toFixed(1)} s</Tag>}
            <Tag size="small" color={r.is_stream ? "blue" : "purple"}>{r.is_stream ? t("ops.log.stream") : t("ops.log.nonStream")}</Tag>
          </div>
        );
      },
    },
    { key: "prompt", title: t("ops.log.prompt"), dataIndex: "prompt_tokens", align: "right" as const, render: (v: number) => (v ? renderNumber(v) : "") },
    { key: "completion", title: t("ops.log.completion"), dataIndex: "completion_tokens", align: "right" as const, render: (v: number) => (v ? renderNumber(v) : "") },
    {
      key: "cost", title: t("ops.log.cost"), dataIndex: "quota", align: "right" as const,
      // A top-up row carries the amount added, not spent: shown as a green credit.
      render: (v: number, r: LogRow) => (!v ? "" : r.type === LOG_TYPE.topup
        ? <span style={{ whiteSpace: "nowrap", color: "rgb(var(--green-6))" }} data-testid="credit">+{renderQuota(v)}</span>
        : <span style={{ whiteSpace: "nowrap" }}>{renderQuota(v, 6)}</span>),
    },
    {
      key: "retry", title: t("ops.log.retry"), dataIndex: "other",
      render: (v: string) => {
        const used = parseOther(v).admin_info?.use_channel;
        return Array.isArray(used) && used.length > 1 ? <span style={{ whiteSpace: "nowrap" }}>{used.join(" → ")}</span> : "";
      },
    },
    {
      key: "details", title: t("ops.log.details"), dataIndex: "content", width: 150,
      // Two lines at most; the tooltip and the expanded row hold the rest.
      render: (v: string) => (v ? <div title={v} style={DETAILS} data-testid="details">{v}</div> : ""),
    },
  ];
  const columns = all.filter((c) => columnDefs.some((d) => d.key === c.key) && visible[c.key] !== false);

  const set = (k: keyof Filters) => (v: string) => setFilters((f) => ({ ...f, [k]: v }));

  return (
    <Page title={t("ops.log.title")}>
      <Space wrap style={{ marginBottom: 12 }}>
        <Select value={filters.type} style={{ width: 140 }} onChange={(v) => setFilters((f) => ({ ...f, type: v }))}
          options={[0, 1, 2, 3, 4, 5].map((v) => ({ value: v, label: t(`ops.log.types.${v}`) }))} />
        <Input placeholder={t("ops.log.token")} value={filters.token_name} onChange={set("token_name")} style={{ width: 150 }} />
        <Input placeholder={t("ops.log.model")} value={filters.model_name} onChange={set("model_name")} style={{ width: 150 }} />
        <Input placeholder={t("ops.group")} value={filters.group} onChange={set("group")} style={{ width: 120 }} />
        <Input placeholder={t("ops.log.start")} value={filters.start} onChange={set("start")} style={{ width: 190 }} />
        <Input placeholder={t("ops.log.end")} value={filters.end} onChange={set("end")} style={{ width: 190 }} />
        {admin && <Input placeholder={t("ops.log.channelId")} value={filters.channel} onChange={set("channel")} style={{ width: 110 }} />}
        {admin && <Input placeholder={t("ops.log.username")} value={filters.username} onChange={set("username")} style={{ width: 140 }} />}
        <Button type="primary" onClick={() => search()}>{t("ops.search")}</Button>
        <ColumnPicker columns={columnDefs} visible={visible} onChange={update} />
      </Space>
      {error && <Typography.Paragraph type="error">{error}</Typography.Paragraph>}
      {stat && (
        <Space style={{ marginBottom: 12 }} data-testid="log-stat">
          <Tag color="blue">{t("ops.log.statQuota")}: {renderQuota(stat.quota)}</Tag>
          <Tag color="pink">RPM: {stat.rpm}</Tag>
          <Tag color="gray">TPM: {stat.tpm}</Tag>
        </Space>
      )}
      <Table
        className="sy-log-table" rowKey="id" loading={loading} columns={columns} data={rows}
        // As wide as the card, and wider (scrolling sideways) only when the columns cannot fit.
        scroll={{ x: "100%" }}
        expandedRowRender={(r: LogRow) => {
          const entries = detailEntries(r, t);
          return entries.length ? <Descriptions column={2} data={entries} size="small" /> : null;
        }}
        pagination={{ current: page, pageSize: size, total, showTotal: true, sizeCanChange: true, sizeOptions, onChange: onPageChange }}
      />
      <Modal title={t("ops.log.userInfo")} visible={!!userInfo} onCancel={() => setUserInfo(null)} footer={null}>
        {userInfo && (
          <Descriptions column={1} data={[
            { label: t("ops.log.username"), value: String(userInfo.username ?? "") },
            { label: t("ops.log.balance"), value: renderQuota(Number(userInfo.quota ?? 0)) },
            { label: t("ops.log.usedQuota"), value: renderQuota(Number(userInfo.used_quota ?? 0)) },
            { label: t("ops.log.requestCount"), value: String(userInfo.request_count ?? 0) },
          ]} />
        )}
      </Modal>
    </Page>
  );
}
