// API tokens (spec 001 §2 Token page, §4 token status, §5 token rules, §9 presets and expiry shortcuts).
import React, { useCallback, useEffect, useState } from "react";
import { Alert, Button, Dropdown, Input, Menu, Message, Popconfirm, Space, Table, Tag } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { copyWithFallback } from "../../components/copy.tsx";
import { api, qs } from "../../api/index.ts";
import { renderQuota, timestampToString } from "../../lib/format.ts";
import { TOKEN_STATUS } from "../../../server/catalogue/index.ts";
import { asPage, sizeOptions, usePageSize } from "../_shared/paging.ts";
import { buildChatLink, serverAddress, siteChatLinks } from "../_shared/chat.ts";
import { useApp } from "../../lib/app-state.tsx";
import { TokenDrawer, type TokenRow } from "./TokenDrawer.tsx";

const STATUS_COLOR: Record<number, string> = { 1: "green", 2: "red", 3: "orange", 4: "gray" };

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

  const load = useCallback(async (p = page, s = size) => {
    setLoading(true);
    const searching = keyword.trim() !== "" || tokenFilter.trim() !== "";
    const r = searching
      ? await api.get(`/api/token/search${qs({ keyword: keyword.trim(), token: tokenFilter.trim(), p, size: s })}`)
      : await api.get(`/api/token/${qs({ p, size: s })}`);
    setLoading(false);
    if (!r.success) {
      Message.error(r.message);
      return;
    }
    const { items, total: n } = asPage<TokenRow>(r.data);
    setRows(items);
    setTotal(n);
  }, [page, size, keyword, tokenFilter]);

  useEffect(() => {
    void load();
    // Reload on paging only; searching is explicit.
  }, [page, size]);

  const setStatus = async (row: TokenRow, status: number) => {
    const r = await api.put(`/api/token/?status_only=true`, { id: row.id, status });
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.done"));
    setRows((list) => list.map((x) => (x.id === row.id ? { ...x, status } : x)));
  };

  const remove = async (row: TokenRow) => {
    const r = await api.del(`/api/token/${row.id}/`);
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.deleted"));
    void load();
  };

  const copySelected = () => {
    if (selected.length === 0) return Message.warning(t("ops.token.selectFirst"));
    void copyWithFallback(selected.map((x) => `${x.name}    ${x.key}`).join("\n"));
  };

  const { status } = useApp();
  const links = siteChatLinks(status);
  const chatMenu = (row: TokenRow) => (
    <Menu onClickMenuItem={(url) => globalThis.open?.(buildChatLink(url, row.key, serverAddress(status)), "_blank")}>
      {links.map((l) => <Menu.Item key={l.url}>{l.name}</Menu.Item>)}
    </Menu>
  );

  const columns = [
    { title: t("ops.name"), dataIndex: "name" },
    {
      title: t("ops.status"), dataIndex: "status",
      render: (s: number) => <Tag color={STATUS_COLOR[s] ?? "gray"}>{t(`ops.token.status.${s}`)}</Tag>,
    },
    { title: t("ops.token.used"), dataIndex: "used_quota", render: (q: number) => renderQuota(q) },
    {
      title: t("ops.token.remain"), dataIndex: "remain_quota",
      render: (q: number, row: TokenRow) => (row.unlimited_quota ? <Tag color="arcoblue">{t("ops.token.unlimited")}</Tag> : renderQuota(q)),
    },
    { title: t("ops.createdTime"), dataIndex: "created_time", render: (v: number) => timestampToString(v) },
    {
      title: t("ops.token.expiry"), dataIndex: "expired_time",
      render: (v: number) => (v === -1 ? t("ops.token.never") : timestampToString(v)),
    },
    {
      title: t("ops.actions"), key: "actions",
      render: (_: unknown, row: TokenRow) => (
        <Space size={4}>
          <Button size="mini" onClick={() => copyWithFallback(row.key)}>{t("ops.copy")}</Button>
          {links.length > 0 && (
            <Dropdown droplist={chatMenu(row)} position="bl">
              <Button size="mini">{t("ops.token.chat")}</Button>
            </Dropdown>
          )}
          {row.status === TOKEN_STATUS.enabled
            ? <Button size="mini" status="warning" onClick={() => setStatus(row, TOKEN_STATUS.disabled)}>{t("ops.disable")}</Button>
            : <Button size="mini" status="success" onClick={() => setStatus(row, TOKEN_STATUS.enabled)}>{t("ops.enable")}</Button>}
          <Button size="mini" onClick={() => setEditing(row)}>{t("ops.edit")}</Button>
          <Popconfirm title={t("ops.confirmDelete")} onOk={() => remove(row)}>
            <Button size="mini" status="danger">{t("ops.delete")}</Button>
          </Popconfirm>
        </Space>
      ),
    },
  ];

  return (
    <Page title={t("ops.token.title")}>
      <Alert type="warning" content={t("ops.token.warning")} style={{ marginBottom: 16 }} />
      <Space wrap style={{ marginBottom: 16 }}>
        <Input allowClear placeholder={t("ops.token.searchName")} value={keyword} onChange={setKeyword} style={{ width: 200 }} onPressEnter={() => { setPage(1); void load(1); }} />
        <Input allowClear placeholder={t("ops.token.searchKey")} value={tokenFilter} onChange={setTokenFilter} style={{ width: 200 }} onPressEnter={() => { setPage(1); void load(1); }} />
        <Button type="primary" onClick={() => { setPage(1); void load(1); }}>{t("ops.search")}</Button>
        <Button type="primary" onClick={() => setEditing(null)}>{t("ops.token.add")}</Button>
        <Button disabled={selected.length === 0} onClick={copySelected}>{t("ops.token.copySelected")}</Button>
      </Space>
      <Table
        rowKey="id"
        loading={loading}
        columns={columns}
        data={rows}
        scroll={{ x: 900 }}
        rowSelection={{ type: "checkbox", selectedRowKeys: selected.map((x) => x.id), onChange: (_keys, rs) => setSelected(rs as TokenRow[]) }}
        pagination={{
          current: page, pageSize: size, total, showTotal: true, sizeCanChange: true, sizeOptions,
          onChange: (p, s) => { if (s !== size) { setSize(s); setPage(1); } else setPage(p); },
        }}
      />
      {editing !== undefined && (
        <TokenDrawer token={editing} onClose={() => setEditing(undefined)} onSaved={() => { setEditing(undefined); void load(); }} />
      )}
    </Page>
  );
}
