// Usage logs (spec 001 §2 Usage log page, §6 admin extras, §9 colours and "more data at the last page").
import { useLayoutEffect, useRef, useState } from "react";
import { Descriptions, Input, Modal, Select, Tag, Tooltip, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { ResponsiveTable, type RColumn } from "../../components/ResponsiveTable.tsx";
import { DateRange, Field, FilterBar } from "../../components/Filters.tsx";
import { api, qs, type Envelope } from "../../api/index.ts";
import { isAdmin, useApp } from "../../lib/app-state.tsx";
import { formatSeconds, renderNumber, renderQuota, timestampToString } from "../../lib/format.ts";
import { toast } from "../../lib/toast.ts";
import { LOG_TYPE } from "../../../server/catalogue/index.ts";
import { parseDateTime, toSeconds } from "../_shared/time.ts";
import { firstTokenColor, elapsedColor } from "../_shared/colors.ts";
import { ColumnPicker, useColumnVisibility } from "../_shared/ColumnPicker.tsx";
import { asPage, sizeOptions, usePageSize } from "../_shared/paging.ts";
import { logDetails, parseOther } from "./details.ts";
import {
  defaultRange,
  logPageUrl,
  peekPrefetched,
  prefetchedRange,
  prefetchUnderWay,
  takePrefetched,
} from "./prefetch.ts";

export { parseOther };

export interface LogRow {
  id: number;
  created_at: number;
  type: number;
  channel: number;
  channel_name?: string;
  username: string;
  user_id: number;
  token_name: string;
  group?: string;
  model_name: string;
  use_time: number;
  is_stream: boolean;
  prompt_tokens: number;
  completion_tokens: number;
  quota: number;
  content: string;
  other: string;
  ip?: string;
  request_id?: string;
  upstream_request_id?: string;
}

export const LOGS_COLUMNS_KEY = "logs-table-columns";
const TYPE_COLOR: Record<number, string> = { 1: "cyan", 2: "green", 3: "orange", 4: "purple", 5: "red" };

/** One line cut with "…" at `max` px; the whole text in the native tooltip. Keeps long names from widening the table. */
function Clip({
  text,
  max,
  className,
  onClick,
}: {
  text: string;
  max: number;
  className?: string;
  onClick?: () => void;
}) {
  return (
    <span title={text} onClick={onClick} className={`sy-clip ${className ?? ""}`} style={{ maxWidth: max }}>
      {text}
    </span>
  );
}

interface Filters {
  type: number;
  token_name: string;
  model_name: string;
  start: string;
  end: string;
  group: string;
  channel: string;
  username: string;
  request_id: string;
}

function defaultFilters(): Filters {
  return {
    type: LOG_TYPE.unknown,
    token_name: "",
    model_name: "",
    group: "",
    channel: "",
    username: "",
    request_id: "",
    ...defaultRange(),
  };
}

/** The query the filters send, or null when a time is not a date. */
function queryOf(f: Filters, admin: boolean): Record<string, string | number> | null {
  const start = f.start ? parseDateTime(f.start) : null;
  const end = f.end ? parseDateTime(f.end) : null;
  if ((f.start && !start) || (f.end && !end)) return null;
  const q: Record<string, string | number> = {
    type: f.type,
    token_name: f.token_name.trim(),
    model_name: f.model_name.trim(),
    group: f.group.trim(),
    request_id: f.request_id.trim(),
    start_timestamp: start ? toSeconds(start) : "",
    end_timestamp: end ? toSeconds(end) : "",
  };
  if (admin) Object.assign(q, { channel: f.channel.trim(), username: f.username.trim() });
  return q;
}

export default function LogPage() {
  const { t } = useTranslation();
  const { user } = useApp();
  const admin = isAdmin(user);
  const [size, setSize] = usePageSize("log");
  // The first page: the one console/preload.ts asked for while the console loaded, when it has arrived.
  const [first] = useState(() => {
    const f = { ...defaultFilters(), ...prefetchedRange() };
    const q = queryOf(f, admin)!;
    const url = logPageUrl(admin, q, 1, size);
    return { f, q, url, reply: peekPrefetched(url) as Envelope | null };
  });
  const [filters, setFilters] = useState<Filters>(first.f);
  const [rows, setRows] = useState<LogRow[]>(() => (first.reply ? asPage<LogRow>(first.reply.data).items : []));
  const [total, setTotal] = useState(() => (first.reply ? asPage<LogRow>(first.reply.data).total : 0));
  const [page, setPage] = useState(1);
  const [loading, setLoading] = useState(false);
  const [stat, setStat] = useState<{ quota: number; rpm: number; tpm: number } | null>(null);
  const [userInfo, setUserInfo] = useState<Record<string, any> | null>(null);
  const [error, setError] = useState("");
  const query = useRef<Record<string, string | number>>(first.q);

  const columnDefs = [
    { key: "time", title: t("ops.log.time") },
    ...(admin
      ? [
          { key: "channel", title: t("ops.log.channel") },
          { key: "user", title: t("ops.log.user") },
        ]
      : []),
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
  const { visible, update } = useColumnVisibility(
    LOGS_COLUMNS_KEY,
    columnDefs.map((c) => c.key),
  );

  const buildQuery = (f: Filters): Record<string, string | number> | null => {
    const q = queryOf(f, admin);
    setError(q ? "" : t("ops.log.badTime"));
    return q;
  };

  const show = (r: Envelope, replace: boolean) => {
    if (!r.success) return toast.error(r.message);
    const { items, total: n } = asPage<LogRow>(r.data);
    setTotal(n);
    setRows((prev) => (replace ? items : [...prev, ...items]));
  };

  /** Loads server page `serverPage` and appends (or replaces for page 1): the table pages over what is loaded. */
  const fetchPage = async (serverPage: number, pageSize: number, replace: boolean) => {
    setLoading(true);
    const r = await api.get(logPageUrl(admin, query.current, serverPage, pageSize));
    setLoading(false);
    show(r, replace);
  };

  const loadStat = async (q: Record<string, string | number>) => {
    const s = await api.get(`${admin ? "/api/log/stat" : "/api/log/self/stat"}${qs(q)}`);
    if (s.success && s.data)
      setStat({ quota: Number(s.data.quota ?? 0), rpm: Number(s.data.rpm ?? 0), tpm: Number(s.data.tpm ?? 0) });
  };

  const search = async (pageSize = size, f = filters) => {
    const q = buildQuery(f);
    if (!q) return;
    query.current = q;
    setPage(1);
    await fetchPage(1, pageSize, true);
    await loadStat(q);
  };

  // The first page: already here (prefetched), on its way (prefetch under way), or asked for now. A layout
  // effect, so the query leaves before the page is laid out and painted, not after.
  useLayoutEffect(() => {
    void (async () => {
      if (first.reply) takePrefetched(first.url);
      else {
        const underWay = prefetchUnderWay(first.url);
        if (underWay) {
          setLoading(true);
          await underWay;
          setLoading(false);
        }
        const r = takePrefetched(first.url) as Envelope | null;
        if (r) show(r, true);
        else await fetchPage(1, size, true);
      }
      await loadStat(first.q);
    })();
  }, []);

  const reset = () => {
    const f = defaultFilters();
    setFilters(f);
    void search(size, f);
  };

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
    if (!r.success) return toast.error(r.message);
    setUserInfo(r.data);
  };

  const tr = (k: string, o?: Record<string, unknown>) => t(k, o as any) as string;
  const consumeLike = (r: LogRow) => r.type === LOG_TYPE.consume || r.type === LOG_TYPE.error;
  // `from`: the table width (px) from which a column stays in the row; narrower, it moves to the row's details.
  const all: Array<RColumn<LogRow>> = [
    {
      key: "time",
      title: t("ops.log.time"),
      dataIndex: "created_at",
      render: (v: number) => {
        const [date, time] = timestampToString(v).split(" ");
        return (
          <div className="sy-stack sy-nowrap">
            <span className="sy-muted">{date}</span>
            {time}
          </div>
        );
      },
    },
    {
      key: "channel",
      title: t("ops.log.channel"),
      dataIndex: "channel",
      from: 860,
      render: (v: number, r) =>
        v ? (
          <Tooltip content={r.channel_name || String(v)}>
            <Tag size="small">{v}</Tag>
          </Tooltip>
        ) : (
          ""
        ),
    },
    {
      key: "user",
      title: t("ops.log.user"),
      dataIndex: "username",
      from: 700,
      render: (v: string, r) =>
        v ? <Clip text={v} max={96} className="sy-link sy-link-primary" onClick={() => showUser(r.user_id)} /> : "",
    },
    {
      key: "token",
      title: t("ops.log.token"),
      dataIndex: "token_name",
      from: 1000,
      render: (v: string) => (v ? <Clip text={v} max={120} /> : ""),
    },
    {
      key: "group",
      title: t("ops.group"),
      dataIndex: "group",
      from: 1100,
      render: (v: string) => (v ? <Tag size="small">{v}</Tag> : ""),
    },
    {
      key: "type",
      title: t("ops.log.type"),
      dataIndex: "type",
      from: 560,
      render: (v: number) => (
        <Tag size="small" color={TYPE_COLOR[v] ?? "gray"}>
          {t(`ops.log.types.${v}`)}
        </Tag>
      ),
    },
    {
      key: "model",
      title: t("ops.log.model"),
      dataIndex: "model_name",
      render: (v: string) => (v ? <Clip text={v} max={170} className="sy-model" /> : ""),
    },
    {
      key: "useTime",
      title: t("ops.log.useTime"),
      dataIndex: "use_time",
      from: 760,
      render: (v: number, r) => {
        if (!consumeLike(r)) return "";
        const frt = Number(parseOther(r.other).frt ?? 0);
        return (
          <div className="sy-tags sy-use-time">
            <Tag size="small" color={elapsedColor(v)} data-testid="use-time">
              {formatSeconds(v, 0)}
            </Tag>
            {r.is_stream && frt > 0 && (
              <Tag size="small" color={firstTokenColor(frt / 1000)} data-testid="frt">
                {formatSeconds(frt / 1000, 1)}
              </Tag>
            )}
            <Tag size="small" color={r.is_stream ? "blue" : "purple"}>
              {r.is_stream ? t("ops.log.stream") : t("ops.log.nonStream")}
            </Tag>
          </div>
        );
      },
    },
    {
      key: "prompt",
      title: t("ops.log.prompt"),
      dataIndex: "prompt_tokens",
      from: 900,
      align: "right",
      render: (v: number) => (v ? renderNumber(v) : ""),
    },
    {
      key: "completion",
      title: t("ops.log.completion"),
      dataIndex: "completion_tokens",
      from: 900,
      align: "right",
      render: (v: number) => (v ? renderNumber(v) : ""),
    },
    {
      key: "cost",
      title: t("ops.log.cost"),
      dataIndex: "quota",
      align: "right",
      // A top-up row carries the amount added, not spent: shown as a green credit.
      render: (v: number, r) =>
        !v ? (
          ""
        ) : r.type === LOG_TYPE.topup ? (
          <span className="sy-nowrap sy-credit" data-testid="credit">
            +{renderQuota(v)}
          </span>
        ) : (
          <span className="sy-nowrap">{renderQuota(v, 6)}</span>
        ),
    },
    {
      key: "retry",
      title: t("ops.log.retry"),
      dataIndex: "other",
      from: 1300,
      render: (v: string) => {
        const used = parseOther(v).admin_info?.use_channel;
        return Array.isArray(used) && used.length > 1 ? <span className="sy-nowrap">{used.join(" → ")}</span> : "";
      },
    },
    {
      key: "details",
      title: t("ops.log.details"),
      dataIndex: "content",
      from: 620,
      // Two lines at most; the tooltip and the expanded row hold the rest.
      render: (_: string, r) => {
        const { summary } = logDetails(r, tr, admin);
        return summary ? (
          <div title={summary} className="sy-clamp2" data-testid="details">
            {summary}
          </div>
        ) : (
          ""
        );
      },
    },
  ];
  const columns = all.filter((c) => columnDefs.some((d) => d.key === c.key) && visible[c.key] !== false);

  const set = (k: keyof Filters) => (v: string) => setFilters((f) => ({ ...f, [k]: v }));

  return (
    <Page title={t("ops.log.title")}>
      <FilterBar
        onSearch={() => void search()}
        onReset={reset}
        loading={loading}
        extra={<ColumnPicker columns={columnDefs} visible={visible} onChange={update} />}
      >
        <Field label={t("ops.filter.time")} wide>
          <DateRange
            value={[filters.start, filters.end]}
            onChange={([start, end]) => setFilters((f) => ({ ...f, start, end }))}
          />
        </Field>
        <Field label={t("ops.log.type")}>
          <Select
            value={filters.type}
            onChange={(v) => setFilters((f) => ({ ...f, type: v }))}
            data-testid="log-type"
            options={[0, 1, 2, 3, 4, 5].map((v) => ({ value: v, label: t(`ops.log.types.${v}`) }))}
          />
        </Field>
        <Field label={t("ops.log.token")}>
          <Input allowClear value={filters.token_name} onChange={set("token_name")} />
        </Field>
        <Field label={t("ops.log.model")}>
          <Input allowClear value={filters.model_name} onChange={set("model_name")} />
        </Field>
        <Field label={t("ops.group")}>
          <Input allowClear value={filters.group} onChange={set("group")} />
        </Field>
        <Field label={t("ops.log.requestId")}>
          <Input allowClear value={filters.request_id} onChange={set("request_id")} data-testid="log-request-id" />
        </Field>
        {admin && (
          <Field label={t("ops.log.channelId")}>
            <Input allowClear value={filters.channel} onChange={set("channel")} />
          </Field>
        )}
        {admin && (
          <Field label={t("ops.log.username")}>
            <Input allowClear value={filters.username} onChange={set("username")} />
          </Field>
        )}
      </FilterBar>
      {error && <Typography.Paragraph type="error">{error}</Typography.Paragraph>}
      {stat && (
        <div className="sy-tags sy-log-stat" data-testid="log-stat">
          <Tag color="blue">
            {t("ops.log.statQuota")}: {renderQuota(stat.quota)}
          </Tag>
          <Tag color="pink">RPM: {renderNumber(stat.rpm)}</Tag>
          <Tag color="gray">TPM: {renderNumber(stat.tpm)}</Tag>
        </div>
      )}
      <ResponsiveTable<LogRow>
        testId="log-table"
        rowKey="id"
        loading={loading}
        columns={columns}
        data={rows}
        expandedRowRender={(r) => {
          const { entries } = logDetails(r, tr, admin);
          return entries.length ? (
            <Descriptions
              column={1}
              size="small"
              layout="inline-horizontal"
              data-testid="log-entries"
              data={entries.map((e) => ({
                label: e.label,
                value: <span data-testid={`entry-${e.key}`}>{e.value}</span>,
              }))}
            />
          ) : null;
        }}
        pagination={{
          current: page,
          pageSize: size,
          total,
          showTotal: true,
          sizeCanChange: true,
          sizeOptions,
          onChange: onPageChange,
        }}
      />
      <Modal title={t("ops.log.userInfo")} visible={!!userInfo} onCancel={() => setUserInfo(null)} footer={null}>
        {userInfo && (
          <Descriptions
            column={1}
            data={[
              { label: t("ops.log.username"), value: String(userInfo.username ?? "") },
              { label: t("ops.log.balance"), value: renderQuota(Number(userInfo.quota ?? 0)) },
              { label: t("ops.log.usedQuota"), value: renderQuota(Number(userInfo.used_quota ?? 0)) },
              { label: t("ops.log.requestCount"), value: String(userInfo.request_count ?? 0) },
            ]}
          />
        )}
      </Modal>
    </Page>
  );
}
