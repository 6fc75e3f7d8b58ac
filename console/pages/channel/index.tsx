// Channel management (spec 001 §2 Channel page, §4 channel status, §5 batch rules, §8 messages, §9 colours).
import React, { useCallback, useEffect, useRef, useState } from "react";
import {
  Button, Drawer, Dropdown, Input, InputNumber, Menu, Message, Modal, Popconfirm, Space, Switch, Table, Tag, Tooltip, Typography,
} from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { useNavigate } from "react-router-dom";
import { Page } from "../../components/Page.tsx";
import { api, qs } from "../../api/index.ts";
import { renderQuota, timestampToString } from "../../lib/format.ts";
import { readBool, writeString } from "../../lib/storage.ts";
import { CHANNEL_STATUS, channelType } from "../../../server/catalogue/index.ts";
import { asPage, sizeOptions, usePageSize } from "../_shared/paging.ts";
import { responseTimeColor } from "../_shared/colors.ts";
import { ColumnPicker, useColumnVisibility } from "../_shared/ColumnPicker.tsx";
import { ChannelForm } from "../channel-edit/ChannelForm.tsx";
import { TagEditor } from "./TagEditor.tsx";

export interface ChannelRow {
  id?: number; name: string; type: number; status: number; group: string; models: string; tag?: string | null; priority: number; weight: number;
  response_time: number; test_time?: number; balance: number; balance_updated_time?: number; used_quota: number; other_info?: string;
  test_model?: string | null; is_tag?: boolean; channel_count?: number; children?: ChannelRow[];
}

export const CHANNEL_COLUMNS_KEY = "channels-table-columns";
export const ID_SORT_KEY = "id-sort";
export const TAG_MODE_KEY = "tag-mode";
/** "Update all balances" only starts the refresh on the server: the list is reloaded once it has had a moment. */
export const BALANCE_RELOAD_DELAY_MS = 2000;

/** status_reason and status_time of an auto-disabled channel (other_info JSON). */
export function statusInfo(row: ChannelRow): { reason: string; time: number } | null {
  try {
    const o = JSON.parse(row.other_info || "{}");
    return o && (o.status_reason || o.status_time) ? { reason: String(o.status_reason ?? ""), time: Number(o.status_time ?? 0) } : null;
  } catch {
    return null;
  }
}

const rowKey = (r: ChannelRow) => (r.is_tag ? `tag:${r.tag}` : String(r.id));

export default function ChannelPage() {
  const { t } = useTranslation();
  const navigate = useNavigate();
  const [rows, setRows] = useState<ChannelRow[]>([]);
  const [total, setTotal] = useState(0);
  const [page, setPage] = useState(1);
  const [size, setSize] = usePageSize("channel");
  const [loading, setLoading] = useState(false);
  const [idSort, setIdSort] = useState(() => readBool(ID_SORT_KEY));
  const [tagMode, setTagMode] = useState(() => readBool(TAG_MODE_KEY));
  const [keyword, setKeyword] = useState("");
  const [group, setGroup] = useState("");
  const [model, setModel] = useState("");
  const [selected, setSelected] = useState<ChannelRow[]>([]);
  const [batchTag, setBatchTag] = useState<string | null>(null);
  const [drawer, setDrawer] = useState<number | null | undefined>(undefined);
  const [tagEditing, setTagEditing] = useState<ChannelRow | null>(null);
  const [testing, setTesting] = useState<Record<number, boolean>>({});
  const balanceReload = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => () => clearTimeout(balanceReload.current), []);

  const columnDefs = [
    { key: "id", title: "ID" }, { key: "name", title: t("ops.name") }, { key: "group", title: t("ops.ch.groups") },
    { key: "type", title: t("ops.ch.type") }, { key: "status", title: t("ops.status") }, { key: "responseTime", title: t("ops.ch.responseTime") },
    { key: "balance", title: t("ops.ch.balance") }, { key: "priority", title: t("ops.ch.priority") }, { key: "weight", title: t("ops.ch.weight") },
  ];
  const { visible, update } = useColumnVisibility(CHANNEL_COLUMNS_KEY, columnDefs.map((c) => c.key));

  const load = useCallback(async (p = page, s = size, sortById = idSort, byTag = tagMode) => {
    setLoading(true);
    const searching = keyword.trim() || group.trim() || model.trim();
    const params = { p, page_size: s, id_sort: sortById, tag_mode: byTag };
    const r = await api.get(searching
      ? `/api/channel/search${qs({ ...params, keyword: keyword.trim(), group: group.trim(), model: model.trim() })}`
      : `/api/channel/${qs(params)}`);
    setLoading(false);
    // Spec 001 §8: a list that cannot be (re)loaded says 'refresh failed', with the server's reason.
    if (!r.success) return Message.error(r.message ? `${t("ops.ch.refreshFailed")}: ${r.message}` : t("ops.ch.refreshFailed"));
    const { items, total: n } = asPage<ChannelRow>(r.data);
    setRows(items);
    setTotal(n);
  }, [page, size, idSort, tagMode, keyword, group, model, t]);

  useEffect(() => {
    void load();
  }, [page, size]);

  const toggleIdSort = (on: boolean) => {
    setIdSort(on);
    writeString(ID_SORT_KEY, String(on));
    void load(page, size, on, tagMode);
  };
  const toggleTagMode = (on: boolean) => {
    setTagMode(on);
    writeString(TAG_MODE_KEY, String(on));
    setPage(1);
    void load(1, size, idSort, on);
  };

  const patchRow = (id: number, patch: Partial<ChannelRow>) => setRows((list) => list.map((r) => {
    if (r.id === id) return { ...r, ...patch };
    if (r.children) return { ...r, children: r.children.map((c) => (c.id === id ? { ...c, ...patch } : c)) };
    return r;
  }));

  const test = async (row: ChannelRow, testModel = "") => {
    setTesting((m) => ({ ...m, [row.id!]: true }));
    const r = await api.get(`/api/channel/test/${row.id}${qs({ model: testModel })}`);
    setTesting((m) => ({ ...m, [row.id!]: false }));
    const seconds = Number((r as any).time ?? 0);
    if (!r.success) {
      Message.error(r.message);
      return;
    }
    patchRow(row.id!, { response_time: Math.round(seconds * 1000), test_time: Math.floor(Date.now() / 1000) });
    Message.success(t("ops.ch.testOk", { name: row.name, time: seconds.toFixed(2) }));
  };

  const updateBalance = async (row: ChannelRow) => {
    const r = await api.get(`/api/channel/update_balance/${row.id}/`);
    if (!r.success) return Message.error(r.message);
    const balance = Number((r as any).balance ?? r.data?.balance ?? 0);
    patchRow(row.id!, { balance, balance_updated_time: Math.floor(Date.now() / 1000) });
    Message.success(t("ops.ch.balanceUpdated", { name: row.name }));
  };

  const setStatus = async (row: ChannelRow, status: number) => {
    const r = await api.put("/api/channel/", { id: row.id, status });
    if (!r.success) return Message.error(r.message);
    patchRow(row.id!, { status });
    Message.success(t("ops.done"));
  };

  const saveNumber = async (row: ChannelRow, field: "priority" | "weight", value: number | undefined) => {
    // Empty input is ignored; weight cannot go below zero (spec 001 §5).
    if (value === undefined || value === null || Number.isNaN(value)) return;
    const n = field === "weight" ? Math.max(0, Math.trunc(value)) : Math.max(-999, Math.trunc(value));
    if (n === row[field]) return;
    const r = row.is_tag
      ? await api.put("/api/channel/tag", { tag: row.tag, [field]: n })
      : await api.put("/api/channel/", { id: row.id, [field]: n });
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.saved"));
    void load();
  };

  // The server copies (key included): the console never receives channel keys.
  const copy = async (row: ChannelRow) => {
    const c = await api.post(`/api/channel/copy/${row.id}?suffix=_copy`);
    if (!c.success) return Message.error(`${t("ops.ch.copyFailed")}: ${c.message}`);
    Message.success(t("ops.ch.copied"));
    void load();
  };

  const remove = async (row: ChannelRow) => {
    const r = await api.del(`/api/channel/${row.id}/`);
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.deleted"));
    void load();
  };

  const tagStatus = async (row: ChannelRow, on: boolean) => {
    const r = await api.post(`/api/channel/tag/${on ? "enabled" : "disabled"}`, { tag: row.tag });
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.done"));
    void load();
  };

  const selectedIds = () => selected.filter((r) => !r.is_tag && r.id).map((r) => r.id!);

  const openBatchTag = () => {
    if (selectedIds().length === 0) return Message.error(t("ops.ch.selectToTag"));
    setBatchTag("");
  };
  const submitBatchTag = async () => {
    if (!batchTag?.trim()) return Message.error(t("ops.ch.tagEmpty"));
    const r = await api.post("/api/channel/batch/tag", { ids: selectedIds(), tag: batchTag.trim() });
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.ch.tagged"));
    setBatchTag(null);
    void load();
  };
  const batchDelete = async () => {
    const ids = selectedIds();
    if (ids.length === 0) return Message.error(t("ops.ch.selectToDelete"));
    const r = await api.post("/api/channel/batch", { ids });
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.ch.deletedCount", { count: Number(r.data ?? 0) }));
    setSelected([]);
    void load();
  };

  const simple = (path: string, method: "get" | "post" | "del", done: (data: any, message: string) => string) => async () => {
    const r = method === "get" ? await api.get(path) : method === "post" ? await api.post(path) : await api.del(path);
    if (!r.success) return Message.error(r.message);
    Message.success(done(r.data, r.message));
    void load();
  };

  const updateAllBalances = async () => {
    const r = await api.get("/api/channel/update_balance");
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.ch.balanceRefreshStarted"));
    clearTimeout(balanceReload.current);
    balanceReload.current = setTimeout(() => void load(), BALANCE_RELOAD_DELAY_MS);
  };

  const statusTag = (row: ChannelRow) => {
    if (row.is_tag) return <Tag color={row.status === CHANNEL_STATUS.enabled ? "green" : "red"}>{t(`ops.ch.status.${row.status}`)}</Tag>;
    const tag = <Tag color={row.status === 1 ? "green" : row.status === 2 ? "red" : "orange"}>{t(`ops.ch.status.${row.status}`)}</Tag>;
    const info = row.status === CHANNEL_STATUS.autoDisabled ? statusInfo(row) : null;
    if (!info) return tag;
    return (
      <Tooltip content={<div data-testid="status-reason">{t("ops.ch.reason")}: {info.reason || "-"}<br />{t("ops.ch.time")}: {timestampToString(info.time)}</div>}>
        {tag}
      </Tooltip>
    );
  };

  const all = [
    { key: "id", title: "ID", dataIndex: "id", width: 70, render: (v: number, r: ChannelRow) => (r.is_tag ? "" : v) },
    {
      key: "name", title: t("ops.name"), dataIndex: "name",
      render: (v: string, r: ChannelRow) => (r.is_tag
        ? <Space><Tag color="purple">{t("ops.ch.tag")}</Tag><b>{r.tag}</b><Typography.Text type="secondary">({r.channel_count})</Typography.Text></Space>
        : <Space size={4}>{v}{r.tag && <Tag size="small">{r.tag}</Tag>}</Space>),
    },
    { key: "group", title: t("ops.ch.groups"), dataIndex: "group", render: (v: string) => <Space size={2} wrap>{String(v ?? "").split(",").filter(Boolean).map((g) => <Tag key={g} size="small">{g}</Tag>)}</Space> },
    { key: "type", title: t("ops.ch.type"), dataIndex: "type", render: (v: number) => channelType(v)?.name ?? v },
    { key: "status", title: t("ops.status"), dataIndex: "status", render: (_: number, r: ChannelRow) => statusTag(r) },
    {
      key: "responseTime", title: t("ops.ch.responseTime"), dataIndex: "response_time",
      render: (v: number) => <Tag color={responseTimeColor(v)} data-testid="response-time">{v ? `${(v / 1000).toFixed(2)} s` : t("ops.ch.untested")}</Tag>,
    },
    {
      key: "balance", title: t("ops.ch.balance"), dataIndex: "balance",
      render: (v: number, r: ChannelRow) => (
        <Space size={4}>
          <Tooltip content={t("ops.ch.usedQuota")}><Tag color="blue">{renderQuota(Number(r.used_quota ?? 0))}</Tag></Tooltip>
          {!r.is_tag && <Tooltip content={t("ops.ch.clickToUpdate")}><Tag color="gray" style={{ cursor: "pointer" }} onClick={() => updateBalance(r)}>${Number(v ?? 0).toFixed(2)}</Tag></Tooltip>}
        </Space>
      ),
    },
    { key: "priority", title: t("ops.ch.priority"), dataIndex: "priority", render: (v: number, r: ChannelRow) => <InputNumber key={`p${v}`} size="small" style={{ width: 80 }} defaultValue={v} min={-999} precision={0} onBlur={(e) => saveNumber(r, "priority", e.target.value === "" ? undefined : Number(e.target.value))} /> },
    { key: "weight", title: t("ops.ch.weight"), dataIndex: "weight", render: (v: number, r: ChannelRow) => <InputNumber key={`w${v}`} size="small" style={{ width: 80 }} defaultValue={v} min={0} precision={0} onBlur={(e) => saveNumber(r, "weight", e.target.value === "" ? undefined : Number(e.target.value))} /> },
  ].filter((c) => visible[c.key] !== false);

  const actions = {
    key: "actions", title: t("ops.actions"), fixed: "right" as const,
    render: (_: unknown, r: ChannelRow) => (r.is_tag ? (
      <Space size={4}>
        <Button size="mini" status="success" onClick={() => tagStatus(r, true)}>{t("ops.ch.enableAll")}</Button>
        <Button size="mini" status="warning" onClick={() => tagStatus(r, false)}>{t("ops.ch.disableAll")}</Button>
        <Button size="mini" onClick={() => setTagEditing(r)}>{t("ops.ch.editTag")}</Button>
      </Space>
    ) : (
      <Space size={4}>
        <Dropdown.Button size="mini" onClick={() => test(r)} disabled={testing[r.id!]}
          droplist={<Menu onClickMenuItem={(m) => test(r, m)}>{String(r.models ?? "").split(",").filter(Boolean).slice(0, 30).map((m) => <Menu.Item key={m}>{m}</Menu.Item>)}</Menu>}>
          {testing[r.id!] ? t("ops.ch.testing") : t("ops.ch.test")}
        </Dropdown.Button>
        {r.status === CHANNEL_STATUS.enabled
          ? <Button size="mini" status="warning" onClick={() => setStatus(r, CHANNEL_STATUS.manuallyDisabled)}>{t("ops.disable")}</Button>
          : <Button size="mini" status="success" onClick={() => setStatus(r, CHANNEL_STATUS.enabled)}>{t("ops.enable")}</Button>}
        <Button size="mini" onClick={() => updateBalance(r)}>{t("ops.ch.updateBalance")}</Button>
        <Button size="mini" onClick={() => setDrawer(r.id!)}>{t("ops.edit")}</Button>
        <Button size="mini" onClick={() => copy(r)}>{t("ops.copy")}</Button>
        <Popconfirm title={t("ops.confirmDelete")} onOk={() => remove(r)}>
          <Button size="mini" status="danger">{t("ops.delete")}</Button>
        </Popconfirm>
      </Space>
    )),
  };

  return (
    <Page title={t("ops.ch.title")}>
      <Space wrap style={{ marginBottom: 12 }}>
        <Input allowClear placeholder={t("ops.ch.searchKeyword")} value={keyword} onChange={setKeyword} style={{ width: 200 }} onPressEnter={() => { setPage(1); void load(1); }} />
        <Input allowClear placeholder={t("ops.ch.searchGroup")} value={group} onChange={setGroup} style={{ width: 130 }} onPressEnter={() => { setPage(1); void load(1); }} />
        <Input allowClear placeholder={t("ops.ch.searchModel")} value={model} onChange={setModel} style={{ width: 160 }} onPressEnter={() => { setPage(1); void load(1); }} />
        <Button type="primary" onClick={() => { setPage(1); void load(1); }}>{t("ops.search")}</Button>
        <Space><Switch size="small" checked={idSort} onChange={toggleIdSort} data-testid="id-sort" /><span>{t("ops.ch.idSort")}</span></Space>
        <Space><Switch size="small" checked={tagMode} onChange={toggleTagMode} data-testid="tag-mode" /><span>{t("ops.ch.tagMode")}</span></Space>
        <ColumnPicker columns={columnDefs} visible={visible} onChange={update} />
      </Space>
      <Space wrap style={{ marginBottom: 12 }}>
        <Button type="primary" onClick={() => setDrawer(null)} data-testid="add-channel">{t("ops.ch.add")}</Button>
        <Button onClick={openBatchTag}>{t("ops.ch.batchTag")}</Button>
        <Popconfirm title={t("ops.ch.confirmBatchDelete")} onOk={batchDelete}><Button status="danger">{t("ops.ch.batchDelete")}</Button></Popconfirm>
        <Popconfirm title={t("ops.ch.confirmDeleteDisabled")} onOk={simple("/api/channel/disabled", "del", (n) => t("ops.ch.deletedCount", { count: Number(n ?? 0) }))}>
          <Button status="danger">{t("ops.ch.deleteDisabled")}</Button>
        </Popconfirm>
        <Button onClick={simple("/api/channel/fix", "post", (n) => t("ops.ch.fixed", { count: Number(n ?? 0) }))}>{t("ops.ch.fix")}</Button>
        <Button onClick={simple("/api/channel/test", "get", () => t("ops.ch.testAllStarted"))}>{t("ops.ch.testAll")}</Button>
        <Button onClick={updateAllBalances}>{t("ops.ch.updateAllBalances")}</Button>
        <Button onClick={() => navigate("/channel/add")}>{t("ops.ch.openFullPage")}</Button>
      </Space>
      <Table
        rowKey={rowKey} loading={loading} data={rows} columns={[...all, actions]} scroll={{ x: 1200 }}
        rowSelection={{
          type: "checkbox", checkStrictly: true, selectedRowKeys: selected.map(rowKey),
          onChange: (_keys, rs) => setSelected(rs as ChannelRow[]),
          checkboxProps: (r: ChannelRow) => ({ disabled: !!r.is_tag }),
        }}
        pagination={{
          current: page, pageSize: size, total, showTotal: true, sizeCanChange: true, sizeOptions,
          onChange: (p, s) => { if (s !== size) { setSize(s); setPage(1); } else setPage(p); },
        }}
      />
      <Modal title={t("ops.ch.batchTag")} visible={batchTag !== null} onCancel={() => setBatchTag(null)} onOk={submitBatchTag}>
        <Input value={batchTag ?? ""} onChange={setBatchTag} placeholder={t("ops.ch.tagPlaceholder")} data-testid="batch-tag-input" />
      </Modal>
      <Drawer visible={drawer !== undefined} width={Math.min(720, globalThis.innerWidth ?? 720)} footer={null} unmountOnExit
        title={drawer ? t("ops.ch.editTitle") : t("ops.ch.addTitle")} onCancel={() => setDrawer(undefined)}>
        {drawer !== undefined && (
          <ChannelForm key={drawer ?? "new"} id={drawer ?? undefined} onCancel={() => setDrawer(undefined)} onSaved={() => { setDrawer(undefined); void load(); }} />
        )}
      </Drawer>
      {tagEditing && <TagEditor row={tagEditing} onClose={() => setTagEditing(null)} onSaved={() => { setTagEditing(null); void load(); }} />}
    </Page>
  );
}
