// API tokens (spec 001 §2 Token page, §4 token status, §5 token rules, §9 presets and expiry shortcuts).
import { useCallback, useEffect, useState } from "react";
import { Alert, Button, Input, Tag, Tooltip } from "@arco-design/web-react";
import { IconCopy } from "@arco-design/web-react/icon";
import { useTranslation } from "react-i18next";
import type { TFunction } from "i18next";
import { Page } from "../../components/Page.tsx";
import { ResponsiveTable, type RColumn, type RowAction } from "../../components/ResponsiveTable.tsx";
import { toast } from "../../lib/toast.ts";
import { copyWithFallback } from "../../components/copy.tsx";
import { api, qs } from "../../api/index.ts";
import { renderQuota, timestampToString } from "../../lib/format.ts";
import { TOKEN_STATUS } from "../../../server/catalogue/index.ts";
import { asPage, sizeOptions, usePageSize } from "../_shared/paging.ts";
import { buildChatLink, serverAddress, siteChatLinks } from "../_shared/chat.ts";
import { useApp } from "../../lib/app-state.tsx";
import { TokenDrawer, periodKey, type TokenRow } from "./TokenDrawer.tsx";

const STATUS_COLOR: Record<number, string> = { 1: "green", 2: "red", 3: "orange", 4: "gray" };

/** The key as clients send it (sk- prefix), and masked for the list: its start and end only. */
export const fullKey = (key: string) => (key.startsWith("sk-") ? key : `sk-${key}`);
export function maskKey(key: string): string {
  const k = fullKey(key);
  return k.length <= 13 ? `${k.slice(0, 5)}…` : `${k.slice(0, 7)}…${k.slice(-4)}`;
}

export default function TokenPage() {
  const { t } = useTranslation();
  const [rows, setRows] = useState<TokenRow[]>([]);
  const [total, setTotal] = useState(0);
  const [page, setPage] = useState(1);
  const [size, setSize] = usePageSize("token");
  const [loading, setLoading] = useState(false);
  const [keyword, setKeyword] = useState("");
  const [tokenFilter, setTokenFilter] = useState("");
  const [selected, setSelected] = useState<TokenRow[]>([]);
  const [editing, setEditing] = useState<TokenRow | null | undefined>(undefined);

  const load = useCallback(
    async (p = page, s = size) => {
      setLoading(true);
      const searching = keyword.trim() !== "" || tokenFilter.trim() !== "";
      const r = searching
        ? await api.get(`/api/token/search${qs({ keyword: keyword.trim(), token: tokenFilter.trim(), p, size: s })}`)
        : await api.get(`/api/token/${qs({ p, size: s })}`);
      setLoading(false);
      if (!r.success) {
        toast.error(r.message);
        return;
      }
      const { items, total: n } = asPage<TokenRow>(r.data);
      setRows(items);
      setTotal(n);
    },
    [page, size, keyword, tokenFilter],
  );

  useEffect(() => {
    void load();
    // Reload on paging only; searching is explicit.
  }, [page, size]);

  const setStatus = async (row: TokenRow, status: number) => {
    const r = await api.put(`/api/token/?status_only=true`, { id: row.id, status });
    if (!r.success) return toast.error(r.message);
    toast.success(
      t(status === TOKEN_STATUS.enabled ? "ops.token.enabledOne" : "ops.token.disabledOne", { name: row.name }),
    );
    setRows((list) => list.map((x) => (x.id === row.id ? { ...x, status } : x)));
  };

  const remove = async (row: TokenRow) => {
    const r = await api.del(`/api/token/${row.id}/`);
    if (!r.success) return toast.error(r.message);
    toast.success(t("ops.token.deletedOne", { name: row.name }));
    void load();
  };

  const copySelected = () => {
    if (selected.length === 0) return toast.warning(t("ops.token.selectFirst"));
    void copyWithFallback(selected.map((x) => `${x.name}    ${fullKey(x.key)}`).join("\n"));
  };

  const { status } = useApp();
  const links = siteChatLinks(status);
  // `from`: the table width (px) from which a column stays in the row; narrower, it moves to the row's details.
  const columns: Array<RColumn<TokenRow>> = [
    {
      key: "name",
      title: t("ops.name"),
      dataIndex: "name",
      render: (v: string) => (
        <span className="sy-clip" title={v}>
          {v}
        </span>
      ),
    },
    {
      key: "key",
      title: t("ops.token.key"),
      dataIndex: "key",
      from: 520,
      render: (v: string) => (
        <span className="sy-key" data-testid="token-key">
          <code>{maskKey(v)}</code>
          <Tooltip content={t("ops.token.copyKey")}>
            <Button
              size="mini"
              type="text"
              icon={<IconCopy />}
              aria-label={t("ops.token.copyKey")}
              onClick={() => copyWithFallback(fullKey(v))}
              data-testid="copy-key"
            />
          </Tooltip>
        </span>
      ),
    },
    {
      key: "status",
      title: t("ops.status"),
      dataIndex: "status",
      render: (st: number) => <Tag color={STATUS_COLOR[st] ?? "gray"}>{t(`ops.token.status.${st}`)}</Tag>,
    },
    {
      key: "used",
      title: t("ops.token.used"),
      dataIndex: "used_quota",
      from: 760,
      align: "right",
      render: (q: number) => <span className="sy-nowrap">{renderQuota(q)}</span>,
    },
    {
      key: "remain",
      title: t("ops.token.remain"),
      dataIndex: "remain_quota",
      from: 640,
      align: "right",
      render: (q: number, row) =>
        row.unlimited_quota ? (
          <Tag color="arcoblue">{t("ops.token.unlimited")}</Tag>
        ) : (
          <span className="sy-nowrap">{renderQuota(q)}</span>
        ),
    },
    {
      // Kept in the row before the creation time (a 1280 px screen shows it): what an operator checks a token for.
      key: "limits",
      title: t("ops.token.limits"),
      dataIndex: "rpm_limit",
      from: 1000,
      render: (_: unknown, row) => {
        const parts = limitUsage(row, t);
        // inline-block, top: in the row's details the label sits beside the first line, not the last.
        return parts.length ? (
          <div className="sy-nowrap sy-top-block" data-testid="token-limit-usage">
            {parts.map((p) => (
              <div key={p}>{p}</div>
            ))}
          </div>
        ) : (
          "—"
        );
      },
    },
    {
      key: "created",
      title: t("ops.createdTime"),
      dataIndex: "created_time",
      from: 1100,
      render: (v: number) => <span className="sy-nowrap">{timestampToString(v)}</span>,
    },
    {
      key: "expiry",
      title: t("ops.token.expiry"),
      dataIndex: "expired_time",
      from: 880,
      render: (v: number) => (
        <span className="sy-nowrap">{v === -1 ? t("ops.token.never") : timestampToString(v)}</span>
      ),
    },
  ];

  const actions = (row: TokenRow): RowAction[] => [
    ...(links.length > 0
      ? [
          {
            key: "chat",
            label: t("ops.token.chat"),
            main: true,
            onClick: () => globalThis.open?.(buildChatLink(links[0].url, row.key, serverAddress(status)), "_blank"),
            options: links.length > 1 ? links.map((l) => ({ key: l.url, label: l.name })) : undefined,
            onOption: (url: string) => globalThis.open?.(buildChatLink(url, row.key, serverAddress(status)), "_blank"),
          },
        ]
      : []),
    row.status === TOKEN_STATUS.enabled
      ? {
          key: "disable",
          label: t("ops.disable"),
          status: "warning" as const,
          main: true,
          onClick: () => setStatus(row, TOKEN_STATUS.disabled),
        }
      : {
          key: "enable",
          label: t("ops.enable"),
          status: "success" as const,
          main: true,
          onClick: () => setStatus(row, TOKEN_STATUS.enabled),
        },
    { key: "edit", label: t("ops.edit"), main: true, onClick: () => setEditing(row) },
    { key: "copy", label: t("ops.token.copyKey"), onClick: () => copyWithFallback(fullKey(row.key)) },
    {
      key: "delete",
      label: t("ops.delete"),
      status: "danger",
      confirm: t("ops.confirmDelete"),
      onClick: () => remove(row),
    },
  ];

  return (
    <Page title={t("ops.token.title")}>
      <Alert type="warning" content={t("ops.token.warning")} style={{ marginBottom: 16 }} />
      <div className="sy-toolbar">
        <Input
          allowClear
          placeholder={t("ops.token.searchName")}
          value={keyword}
          onChange={setKeyword}
          className="sy-w-200"
          onPressEnter={() => {
            setPage(1);
            void load(1);
          }}
        />
        <Input
          allowClear
          placeholder={t("ops.token.searchKey")}
          value={tokenFilter}
          onChange={setTokenFilter}
          className="sy-w-200"
          onPressEnter={() => {
            setPage(1);
            void load(1);
          }}
        />
        <Button
          type="primary"
          onClick={() => {
            setPage(1);
            void load(1);
          }}
        >
          {t("ops.search")}
        </Button>
        <Button type="primary" onClick={() => setEditing(null)}>
          {t("ops.token.add")}
        </Button>
        <Button disabled={selected.length === 0} onClick={copySelected}>
          {t("ops.token.copySelected")}
        </Button>
      </div>
      <ResponsiveTable<TokenRow>
        testId="token-table"
        rowKey="id"
        loading={loading}
        columns={columns}
        data={rows}
        actions={actions}
        rowSelection={{
          type: "checkbox",
          selectedRowKeys: selected.map((x) => x.id),
          onChange: (_keys: unknown, rs: TokenRow[]) => setSelected(rs),
        }}
        pagination={{
          current: page,
          pageSize: size,
          total,
          showTotal: true,
          sizeCanChange: true,
          sizeOptions,
          onChange: (p: number, s: number) => {
            if (s !== size) {
              setSize(s);
              setPage(1);
            } else setPage(p);
          },
        }}
      />
      {editing !== undefined && (
        <TokenDrawer
          token={editing}
          onClose={() => setEditing(undefined)}
          onSaved={() => {
            setEditing(undefined);
            void load();
          }}
        />
      )}
    </Page>
  );
}

/** What the token uses now against each of its limits ("3/60 requests/min", ...); empty when it has none. */
export function limitUsage(row: TokenRow, t: TFunction): string[] {
  const out: string[] = [];
  if (row.rpm_limit) out.push(t("ops.token.usage.rpm", { used: row.rpm_used ?? 0, limit: row.rpm_limit }));
  if (row.tpm_limit) out.push(t("ops.token.usage.tpm", { used: row.tpm_used ?? 0, limit: row.tpm_limit }));
  if (row.concurrency_limit)
    out.push(t("ops.token.usage.concurrency", { used: row.concurrency_used ?? 0, limit: row.concurrency_limit }));
  if (row.budget_quota && row.budget_period) {
    out.push(
      t("ops.token.usage.budget", {
        used: renderQuota(row.budget_used ?? 0),
        limit: renderQuota(row.budget_quota),
        period: t(periodKey(row.budget_period)),
      }),
    );
  }
  return out;
}
