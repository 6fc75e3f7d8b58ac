// Channel management (spec 001 §2 Channel page, §4 channel status, §5 batch rules, §8 messages, §9 colours).
import { useCallback, useEffect, useRef, useState } from "react";
import {
  Button,
  Drawer,
  Dropdown,
  Empty,
  Input,
  InputNumber,
  Menu,
  Modal,
  Spin,
  Switch,
  Tag,
  Tooltip,
  Typography,
} from "@arco-design/web-react";
import { IconDown } from "@arco-design/web-react/icon";
import { useTranslation } from "react-i18next";
import { useNavigate } from "react-router-dom";
import { Page } from "../../components/Page.tsx";
import { ResponsiveTable, type RColumn, type RowAction } from "../../components/ResponsiveTable.tsx";
import { api, qs } from "../../api/index.ts";
import { formatSeconds, renderQuota, timestampToString } from "../../lib/format.ts";
import { readBool, writeString } from "../../lib/storage.ts";
import { toast } from "../../lib/toast.ts";
import { CHANNEL_STATUS, channelType } from "../../../server/catalogue/index.ts";
import { asPage, sizeOptions, usePageSize } from "../_shared/paging.ts";
import { responseTimeColor } from "../_shared/colors.ts";
import { ColumnPicker, useColumnVisibility } from "../_shared/ColumnPicker.tsx";
import { ChannelForm } from "../channel-edit/ChannelForm.tsx";
import { TagEditor } from "./TagEditor.tsx";
import { RunBanner, useChannelRun, type BalanceOutcome, type TestOutcome } from "./runs.tsx";

export interface ChannelRow {
  id?: number;
  name: string;
  type: number;
  status: number;
  group: string;
  models: string;
  tag?: string | null;
  priority: number;
  weight: number;
  response_time: number;
  test_time?: number;
  balance: number;
  balance_updated_time?: number;
  used_quota: number;
  other_info?: string;
  test_model?: string | null;
  is_tag?: boolean;
  channel_count?: number;
  children?: ChannelRow[];
}

export const CHANNEL_COLUMNS_KEY = "channels-table-columns";
export const ID_SORT_KEY = "id-sort";
export const TAG_MODE_KEY = "tag-mode";

function otherInfo(row: ChannelRow): Record<string, any> {
  try {
    const o = JSON.parse(row.other_info || "{}");
    return o && typeof o === "object" ? o : {};
  } catch {
    return {};
  }
}

/** status_reason and status_time of an auto-disabled channel (other_info JSON). */
export function statusInfo(row: ChannelRow): { reason: string; time: number } | null {
  const o = otherInfo(row);
  return o.status_reason || o.status_time
    ? { reason: String(o.status_reason ?? ""), time: Number(o.status_time ?? 0) }
    : null;
}

/** How the last test went: untested, failed (tested, no time: one-api stores 0 then) or a time, with the reason it gave. */
export function testState(row: ChannelRow): { state: "untested" | "failed" | "ok"; reason: string } {
  const reason = String(otherInfo(row).test_error ?? "");
  if (row.response_time > 0) return { state: "ok", reason };
  return { state: row.test_time ? "failed" : "untested", reason };
}

const rowKey = (r: ChannelRow) => (r.is_tag ? `tag:${r.tag}` : String(r.id));
const mergeInfo = (row: ChannelRow, patch: Record<string, unknown>) => JSON.stringify({ ...otherInfo(row), ...patch });

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
  const [balanceErrors, setBalanceErrors] = useState<Record<number, string>>({});
  // Results of a running test or balance run, laid over a list that loads after they arrived.
  const overlay = useRef(new Map<number, (r: ChannelRow) => Partial<ChannelRow>>());

  const columnDefs = [
    { key: "id", title: "ID" },
    { key: "name", title: t("ops.name") },
    { key: "group", title: t("ops.ch.groups") },
    { key: "type", title: t("ops.ch.type") },
    { key: "status", title: t("ops.status") },
    { key: "responseTime", title: t("ops.ch.responseTime") },
    { key: "balance", title: t("ops.ch.balance") },
    { key: "priority", title: t("ops.ch.priority") },
    { key: "weight", title: t("ops.ch.weight") },
  ];
  const { visible, update } = useColumnVisibility(
    CHANNEL_COLUMNS_KEY,
    columnDefs.map((c) => c.key),
  );

  const load = useCallback(
    async (p = page, s = size, sortById = idSort, byTag = tagMode) => {
      setLoading(true);
      const searching = keyword.trim() || group.trim() || model.trim();
      const params = { p, page_size: s, id_sort: sortById, tag_mode: byTag };
      const r = await api.get(
        searching
          ? `/api/channel/search${qs({ ...params, keyword: keyword.trim(), group: group.trim(), model: model.trim() })}`
          : `/api/channel/${qs(params)}`,
      );
      setLoading(false);
      // Spec 001 §8: a list that cannot be (re)loaded says 'refresh failed', with the server's reason.
      if (!r.success)
        return toast.error(r.message ? `${t("ops.ch.refreshFailed")}: ${r.message}` : t("ops.ch.refreshFailed"));
      const { items, total: n } = asPage<ChannelRow>(r.data);
      const over = (x: ChannelRow): ChannelRow => {
        const f = x.id ? overlay.current.get(x.id) : undefined;
        const y = f ? { ...x, ...f(x) } : x;
        return y.children ? { ...y, children: y.children.map(over) } : y;
      };
      setRows(overlay.current.size ? items.map(over) : items);
      setTotal(n);
    },
    [page, size, idSort, tagMode, keyword, group, model, t],
  );

  useEffect(() => {
    void load();
  }, [page, size]);

  /** Applies a change to one row (a child row in tag mode too); `keep` lays it over lists loaded later as well. */
  const patchRow = useCallback(
    (id: number, patch: Partial<ChannelRow> | ((r: ChannelRow) => Partial<ChannelRow>), keep = false) => {
      const f = typeof patch === "function" ? patch : () => patch;
      if (keep) overlay.current.set(id, f);
      const apply = (x: ChannelRow) => ({ ...x, ...f(x) });
      setRows((list) =>
        list.map((r) => {
          if (r.id === id) return apply(r);
          if (r.children) return { ...r, children: r.children.map((c) => (c.id === id ? apply(c) : c)) };
          return r;
        }),
      );
    },
    [],
  );

  // Background runs: each finished channel is written into its row as its result arrives.
  const testRun = useChannelRun<TestOutcome>(
    "test",
    (results) => {
      for (const r of results) {
        patchRow(
          r.id,
          (row) => ({
            response_time: r.response_time,
            test_time: r.test_time,
            status: r.status,
            other_info: mergeInfo(row, { test_error: r.success ? "" : r.message }),
          }),
          true,
        );
      }
    },
    () => {
      // The list now holds every result (and the statuses the automation changed).
      overlay.current.clear();
      void load();
    },
  );
  const balanceRun = useChannelRun<BalanceOutcome>(
    "balance",
    (results) => {
      setBalanceErrors((m) => {
        const next = { ...m };
        for (const r of results) {
          if (r.success) delete next[r.id];
          else if (!r.skipped) next[r.id] = r.message ?? "";
        }
        return next;
      });
      for (const r of results)
        if (r.success)
          patchRow(r.id, { balance: Number(r.balance ?? 0), balance_updated_time: r.balance_updated_time }, true);
    },
    () => undefined,
  );

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

  const test = async (row: ChannelRow, testModel = "") => {
    setTesting((m) => ({ ...m, [row.id!]: true }));
    const r = await api.get(`/api/channel/test/${row.id}${qs({ model: testModel })}`);
    setTesting((m) => ({ ...m, [row.id!]: false }));
    const seconds = Number((r as any).time ?? 0);
    const now = Math.floor(Date.now() / 1000);
    if (!r.success) {
      // As stored by the server: tested, no time, the reason kept.
      patchRow(row.id!, (x) => ({
        response_time: 0,
        test_time: now,
        other_info: mergeInfo(x, { test_error: r.message }),
      }));
      return toast.error(t("ops.ch.testFailed", { name: row.name, reason: r.message }));
    }
    patchRow(row.id!, (x) => ({
      response_time: Math.max(1, Math.round(seconds * 1000)),
      test_time: now,
      other_info: mergeInfo(x, { test_error: "" }),
    }));
    toast.success(t("ops.ch.testOk", { name: row.name, time: formatSeconds(seconds) }));
  };

  const updateBalance = async (row: ChannelRow) => {
    const r = await api.get(`/api/channel/update_balance/${row.id}/`);
    if (!r.success) {
      setBalanceErrors((m) => ({ ...m, [row.id!]: r.message }));
      return toast.error(r.message);
    }
    const balance = Number((r as any).balance ?? r.data?.balance ?? 0);
    setBalanceErrors((m) => {
      const { [row.id!]: _gone, ...rest } = m;
      return rest;
    });
    patchRow(row.id!, { balance, balance_updated_time: Math.floor(Date.now() / 1000) });
    toast.success(t("ops.ch.balanceUpdated", { name: row.name }));
  };

  const setStatus = async (row: ChannelRow, status: number) => {
    const r = await api.put("/api/channel/", { id: row.id, status });
    if (!r.success) return toast.error(r.message);
    patchRow(row.id!, { status });
    toast.success(
      t(status === CHANNEL_STATUS.enabled ? "ops.ch.enabledOne" : "ops.ch.disabledOne", { name: row.name }),
    );
  };

  const saveNumber = async (row: ChannelRow, field: "priority" | "weight", value: number | undefined) => {
    // Empty input is ignored; weight cannot go below zero (spec 001 §5).
    if (value === undefined || value === null || Number.isNaN(value)) return;
    const n = field === "weight" ? Math.max(0, Math.trunc(value)) : Math.max(-999, Math.trunc(value));
    if (n === row[field]) return;
    const r = row.is_tag
      ? await api.put("/api/channel/tag", { tag: row.tag, [field]: n })
      : await api.put("/api/channel/", { id: row.id, [field]: n });
    if (!r.success) return toast.error(r.message);
    toast.success(t("ops.saved"));
    void load();
  };

  // The server copies (key included): the console never receives channel keys.
  const copy = async (row: ChannelRow) => {
    const c = await api.post(`/api/channel/copy/${row.id}?suffix=_copy`);
    if (!c.success) return toast.error(`${t("ops.ch.copyFailed")}: ${c.message}`);
    toast.success(t("ops.ch.copied"));
    void load();
  };

  const remove = async (row: ChannelRow) => {
    const r = await api.del(`/api/channel/${row.id}/`);
    if (!r.success) return toast.error(r.message);
    toast.success(t("ops.ch.deletedOne", { name: row.name }));
    void load();
  };

  const tagStatus = async (row: ChannelRow, on: boolean) => {
    const r = await api.post(`/api/channel/tag/${on ? "enabled" : "disabled"}`, { tag: row.tag });
    if (!r.success) return toast.error(r.message);
    toast.success(t(on ? "ops.ch.tagEnabled" : "ops.ch.tagDisabled", { tag: row.tag }));
    void load();
  };

  const selectedIds = () => selected.filter((r) => !r.is_tag && r.id).map((r) => r.id!);

  const openBatchTag = () => {
    if (selectedIds().length === 0) return toast.error(t("ops.ch.selectToTag"));
    setBatchTag("");
  };
  const submitBatchTag = async () => {
    if (!batchTag?.trim()) return toast.error(t("ops.ch.tagEmpty"));
    const r = await api.post("/api/channel/batch/tag", { ids: selectedIds(), tag: batchTag.trim() });
    if (!r.success) return toast.error(r.message);
    toast.success(t("ops.ch.tagged"));
    setBatchTag(null);
    void load();
  };
  const batchDelete = async () => {
    const ids = selectedIds();
    if (ids.length === 0) return toast.error(t("ops.ch.selectToDelete"));
    const r = await api.post("/api/channel/batch", { ids });
    if (!r.success) return toast.error(r.message);
    toast.success(t("ops.ch.deletedCount", { count: Number(r.data ?? 0) }));
    setSelected([]);
    void load();
  };

  const simple = (path: string, method: "post" | "del", done: (data: any) => string) => async () => {
    const r = method === "post" ? await api.post(path) : await api.del(path);
    if (!r.success) return toast.error(r.message);
    toast.success(done(r.data));
    void load();
  };
  const deleteDisabled = simple("/api/channel/disabled", "del", (n) =>
    t("ops.ch.deletedCount", { count: Number(n ?? 0) }),
  );
  const fix = simple("/api/channel/fix", "post", (n) => t("ops.ch.fixed", { count: Number(n ?? 0) }));

  const statusTag = (row: ChannelRow) => {
    if (row.is_tag)
      return (
        <Tag color={row.status === CHANNEL_STATUS.enabled ? "green" : "red"}>{t(`ops.ch.status.${row.status}`)}</Tag>
      );
    const tag = (
      <Tag color={row.status === 1 ? "green" : row.status === 2 ? "red" : "orange"} data-testid="channel-status">
        {t(`ops.ch.status.${row.status}`)}
      </Tag>
    );
    const info = row.status === CHANNEL_STATUS.autoDisabled ? statusInfo(row) : null;
    if (!info) return tag;
    return (
      <Tooltip
        content={
          <div data-testid="status-reason">
            {t("ops.ch.reason")}: {info.reason || "-"}
            <br />
            {t("ops.ch.time")}: {timestampToString(info.time)}
          </div>
        }
      >
        {tag}
      </Tooltip>
    );
  };

  const responseTag = (row: ChannelRow) => {
    if (row.is_tag) return null;
    if (testing[row.id!])
      return (
        <Tag color="arcoblue" data-testid="response-time" icon={<Spin size={10} />}>
          {t("ops.ch.testing")}
        </Tag>
      );
    const { state, reason } = testState(row);
    const tag =
      state === "failed" ? (
        <Tag color="red" data-testid="response-time" data-state="failed">
          {t("ops.ch.testFailedShort")}
        </Tag>
      ) : (
        <Tag color={responseTimeColor(row.response_time)} data-testid="response-time" data-state={state}>
          {/* A few milliseconds (a local upstream) read 0.01 s, not a "0.00 s" that looks unmeasured. */}
          {state === "ok" ? formatSeconds(Math.max(row.response_time / 1000, 0.01)) : t("ops.ch.untested")}
        </Tag>
      );
    if (state === "untested" && !reason) return tag;
    return (
      <Tooltip
        content={
          <div data-testid="test-reason">
            {reason ? (
              <>
                {t("ops.ch.reason")}: {reason}
                <br />
              </>
            ) : null}
            {t("ops.ch.testedAt")}: {timestampToString(row.test_time ?? 0)}
          </div>
        }
      >
        {tag}
      </Tooltip>
    );
  };

  const balanceCell = (r: ChannelRow) => {
    const error = r.id ? balanceErrors[r.id] : undefined;
    return (
      <div className="sy-stack">
        <Tooltip content={t("ops.ch.usedQuota")}>
          <span data-testid="used-quota">{renderQuota(Number(r.used_quota ?? 0))}</span>
        </Tooltip>
        {!r.is_tag && (
          <Tooltip content={error ? `${t("ops.ch.balanceFailed")}: ${error}` : t("ops.ch.clickToUpdate")}>
            <Typography.Text
              type={error ? "error" : "secondary"}
              className="sy-link"
              onClick={() => updateBalance(r)}
              data-testid="balance"
            >
              ${Number(r.balance ?? 0).toFixed(2)}
              {error ? " ⚠" : ""}
            </Typography.Text>
          </Tooltip>
        )}
      </div>
    );
  };

  const numberCell = (field: "priority" | "weight") => (v: number, r: ChannelRow) => (
    <InputNumber
      key={`${field}${v}`}
      size="mini"
      className="sy-num-input"
      defaultValue={v}
      min={field === "weight" ? 0 : -999}
      precision={0}
      hideControl
      onBlur={(e) => saveNumber(r, field, e.target.value === "" ? undefined : Number(e.target.value))}
      aria-label={t(`ops.ch.${field}`)}
    />
  );

  // `from`: the table width (px) from which a column stays in the row; narrower, it moves to the row's details.
  const all: Array<RColumn<ChannelRow>> = [
    { key: "id", title: "ID", dataIndex: "id", from: 1060, render: (v: number, r) => (r.is_tag ? "" : v) },
    {
      key: "name",
      title: t("ops.name"),
      dataIndex: "name",
      render: (v: string, r) =>
        r.is_tag ? (
          <div className="sy-stack">
            <span>
              <Tag size="small" color="purple">
                {t("ops.ch.tag")}
              </Tag>{" "}
              <b>{r.tag}</b>
            </span>
            <Typography.Text type="secondary" className="sy-sub">
              {t("ops.ch.channelCount", { count: r.channel_count ?? 0 })}
            </Typography.Text>
          </div>
        ) : (
          <div className="sy-stack sy-name-cell">
            <span className="sy-clip" title={v}>
              {v}
            </span>
            <span className="sy-sub">
              {visible.type === false ? null : (
                <Typography.Text type="secondary">{channelType(r.type)?.name ?? r.type}</Typography.Text>
              )}
              {r.tag && (
                <Tag size="small" className="sy-nowrap">
                  {r.tag}
                </Tag>
              )}
            </span>
          </div>
        ),
    },
    { key: "status", title: t("ops.status"), dataIndex: "status", render: (_: number, r) => statusTag(r) },
    {
      key: "responseTime",
      title: t("ops.ch.responseTime"),
      dataIndex: "response_time",
      from: 620,
      render: (_: number, r) => responseTag(r),
    },
    {
      key: "balance",
      title: t("ops.ch.balance"),
      dataIndex: "balance",
      from: 760,
      render: (_: number, r) => balanceCell(r),
    },
    {
      key: "group",
      title: t("ops.ch.groups"),
      dataIndex: "group",
      from: 1080,
      render: (v: string) => (
        <div className="sy-tags">
          {String(v ?? "")
            .split(",")
            .filter(Boolean)
            .map((g) => (
              <Tag key={g} size="small">
                {g}
              </Tag>
            ))}
        </div>
      ),
    },
    { key: "priority", title: t("ops.ch.priority"), dataIndex: "priority", from: 920, render: numberCell("priority") },
    { key: "weight", title: t("ops.ch.weight"), dataIndex: "weight", from: 920, render: numberCell("weight") },
  ];
  // "type" has no column of its own: it is the second line of the name.
  const columns = all.filter((c) => visible[c.key] !== false);

  const actions = (r: ChannelRow): RowAction[] =>
    r.is_tag
      ? [
          {
            key: "enableAll",
            label: t("ops.ch.enableAll"),
            status: "success",
            main: true,
            onClick: () => tagStatus(r, true),
          },
          {
            key: "disableAll",
            label: t("ops.ch.disableAll"),
            status: "warning",
            main: true,
            onClick: () => tagStatus(r, false),
          },
          { key: "editTag", label: t("ops.ch.editTag"), onClick: () => setTagEditing(r) },
        ]
      : [
          {
            key: "test",
            label: testing[r.id!] ? t("ops.ch.testing") : t("ops.ch.test"),
            main: true,
            disabled: testing[r.id!],
            onClick: () => test(r),
            options: String(r.models ?? "")
              .split(",")
              .filter(Boolean)
              .slice(0, 30)
              .map((m) => ({ key: m, label: m })),
            onOption: (m) => test(r, m),
          },
          r.status === CHANNEL_STATUS.enabled
            ? {
                key: "disable",
                label: t("ops.disable"),
                status: "warning",
                main: true,
                onClick: () => setStatus(r, CHANNEL_STATUS.manuallyDisabled),
              }
            : {
                key: "enable",
                label: t("ops.enable"),
                status: "success",
                main: true,
                onClick: () => setStatus(r, CHANNEL_STATUS.enabled),
              },
          { key: "edit", label: t("ops.edit"), main: true, onClick: () => setDrawer(r.id!) },
          { key: "balance", label: t("ops.ch.updateBalance"), onClick: () => updateBalance(r) },
          { key: "copy", label: t("ops.copy"), onClick: () => copy(r) },
          {
            key: "delete",
            label: t("ops.delete"),
            status: "danger",
            confirm: t("ops.confirmDelete"),
            onClick: () => remove(r),
          },
        ];

  const confirmThen = (title: string, run: () => void) =>
    Modal.confirm({ title, onOk: run, okButtonProps: { status: "danger" } });
  const selectedCount = selectedIds().length;
  const search = () => {
    setPage(1);
    void load(1);
  };

  return (
    <Page title={t("ops.ch.title")}>
      <div className="sy-toolbar">
        <Input
          allowClear
          placeholder={t("ops.ch.searchKeyword")}
          value={keyword}
          onChange={setKeyword}
          className="sy-w-200"
          onPressEnter={search}
        />
        <Input
          allowClear
          placeholder={t("ops.ch.searchGroup")}
          value={group}
          onChange={setGroup}
          className="sy-w-130"
          onPressEnter={search}
        />
        <Input
          allowClear
          placeholder={t("ops.ch.searchModel")}
          value={model}
          onChange={setModel}
          className="sy-w-160"
          onPressEnter={search}
        />
        <Button type="primary" onClick={search}>
          {t("ops.search")}
        </Button>
        <label className="sy-switch">
          <Switch size="small" checked={idSort} onChange={toggleIdSort} data-testid="id-sort" />
          {t("ops.ch.idSort")}
        </label>
        <label className="sy-switch">
          <Switch size="small" checked={tagMode} onChange={toggleTagMode} data-testid="tag-mode" />
          {t("ops.ch.tagMode")}
        </label>
      </div>
      <div className="sy-toolbar">
        <Button type="primary" onClick={() => setDrawer(null)} data-testid="add-channel">
          {t("ops.ch.add")}
        </Button>
        <Button onClick={testRun.start} loading={testRun.running} data-testid="test-all">
          {t("ops.ch.testAll")}
        </Button>
        <Button onClick={balanceRun.start} loading={balanceRun.running} data-testid="update-all-balances">
          {t("ops.ch.updateAllBalances")}
        </Button>
        <Dropdown
          trigger="click"
          droplist={
            <Menu
              onClickMenuItem={(k) =>
                k === "tag" ? openBatchTag() : confirmThen(t("ops.ch.confirmBatchDelete"), () => void batchDelete())
              }
            >
              <Menu.Item key="tag">{t("ops.ch.batchTag")}</Menu.Item>
              <Menu.Item key="delete" className="sy-menu-danger">
                {t("ops.ch.batchDelete")}
              </Menu.Item>
            </Menu>
          }
        >
          <Button data-testid="batch-menu">
            {t("ops.ch.batchActions", { count: selectedCount })} <IconDown />
          </Button>
        </Dropdown>
        <Dropdown
          trigger="click"
          droplist={
            <Menu
              onClickMenuItem={(k) => {
                if (k === "deleteDisabled") confirmThen(t("ops.ch.confirmDeleteDisabled"), () => void deleteDisabled());
                else if (k === "fix") void fix();
                else navigate("/channel/add");
              }}
            >
              <Menu.Item key="fix">{t("ops.ch.fix")}</Menu.Item>
              <Menu.Item key="deleteDisabled" className="sy-menu-danger">
                {t("ops.ch.deleteDisabled")}
              </Menu.Item>
              <Menu.Item key="page">{t("ops.ch.openFullPage")}</Menu.Item>
            </Menu>
          }
        >
          <Button data-testid="more-menu">
            {t("common.more")} <IconDown />
          </Button>
        </Dropdown>
        <ColumnPicker columns={columnDefs} visible={visible} onChange={update} />
      </div>
      {testRun.visible && testRun.progress && (
        <RunBanner kind="test" progress={testRun.progress} onClose={testRun.dismiss} />
      )}
      {balanceRun.visible && balanceRun.progress && (
        <RunBanner kind="balance" progress={balanceRun.progress} onClose={balanceRun.dismiss} />
      )}
      <ResponsiveTable<ChannelRow>
        testId="channel-table"
        rowKey={rowKey}
        loading={loading}
        data={rows}
        columns={columns}
        actions={actions}
        // A new site's first step: an empty list says so and offers the form (a search that finds nothing does not).
        noDataElement={
          keyword || group || model ? undefined : (
            <Empty
              description={
                <div className="sy-stack" style={{ alignItems: "center", gap: 12 }}>
                  <span>{t("ops.ch.empty")}</span>
                  <Button type="primary" onClick={() => setDrawer(null)} data-testid="add-first-channel">
                    {t("ops.ch.add")}
                  </Button>
                </div>
              }
            />
          )
        }
        rowSelection={{
          type: "checkbox",
          checkStrictly: true,
          selectedRowKeys: selected.map(rowKey),
          onChange: (_keys: unknown, rs: ChannelRow[]) => setSelected(rs),
          checkboxProps: (r: ChannelRow) => ({ disabled: !!r.is_tag }),
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
      <Modal
        title={t("ops.ch.batchTag")}
        visible={batchTag !== null}
        onCancel={() => setBatchTag(null)}
        onOk={submitBatchTag}
      >
        <Input
          value={batchTag ?? ""}
          onChange={setBatchTag}
          placeholder={t("ops.ch.tagPlaceholder")}
          data-testid="batch-tag-input"
        />
      </Modal>
      <Drawer
        visible={drawer !== undefined}
        width={Math.min(720, globalThis.innerWidth ?? 720)}
        footer={null}
        unmountOnExit
        title={drawer ? t("ops.ch.editTitle") : t("ops.ch.addTitle")}
        onCancel={() => setDrawer(undefined)}
      >
        {drawer !== undefined && (
          <ChannelForm
            key={drawer ?? "new"}
            id={drawer ?? undefined}
            onCancel={() => setDrawer(undefined)}
            onSaved={() => {
              setDrawer(undefined);
              void load();
            }}
          />
        )}
      </Drawer>
      {tagEditing && (
        <TagEditor
          row={tagEditing}
          onClose={() => setTagEditing(null)}
          onSaved={() => {
            setTagEditing(null);
            void load();
          }}
        />
      )}
    </Page>
  );
}
