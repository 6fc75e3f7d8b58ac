// Redemption codes (spec 001 §2, §4 redemption status, §5 rules, §9 defaults): admin only.
import React, { useCallback, useEffect, useState } from "react";
import { Alert, Button, Drawer, Input, InputNumber, Message, Popconfirm, Space, Table, Tag, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { copyWithFallback } from "../../components/copy.tsx";
import { api, qs } from "../../api/index.ts";
import { renderQuota, timestampToString } from "../../lib/format.ts";
import { REDEMPTION_MAX_BATCH, REDEMPTION_NAME_MAX_LENGTH, REDEMPTION_STATUS } from "../../../server/catalogue/index.ts";
import { asPage, sizeOptions, usePageSize } from "../_shared/paging.ts";
import { downloadText } from "../_shared/download.ts";

interface CodeRow { id: number; name: string; key: string; status: number; quota: number; created_time: number; redeemed_time?: number; used_user_id: number }

const STATUS_COLOR: Record<number, string> = { 1: "green", 2: "red", 3: "gray" };
export const NEW_CODE_QUOTA = 100_000;

export default function RedemptionPage() {
  const { t } = useTranslation();
  const [rows, setRows] = useState<CodeRow[]>([]);
  const [total, setTotal] = useState(0);
  const [page, setPage] = useState(1);
  const [size, setSize] = usePageSize("redemption");
  const [keyword, setKeyword] = useState("");
  const [loading, setLoading] = useState(false);
  const [editing, setEditing] = useState<CodeRow | null | undefined>(undefined);

  const load = useCallback(async (p = page, s = size) => {
    setLoading(true);
    const path = keyword.trim()
      ? `/api/redemption/search${qs({ keyword: keyword.trim(), p, page_size: s })}`
      : `/api/redemption/${qs({ p, page_size: s })}`;
    const r = await api.get(path);
    setLoading(false);
    if (!r.success) return Message.error(r.message);
    const { items, total: n } = asPage<CodeRow>(r.data);
    setRows(items);
    setTotal(n);
  }, [page, size, keyword]);

  useEffect(() => {
    void load();
  }, [page, size]);

  const setStatus = async (row: CodeRow, status: number) => {
    const r = await api.put("/api/redemption/?status_only=true", { id: row.id, status });
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.done"));
    setRows((list) => list.map((x) => (x.id === row.id ? { ...x, status } : x)));
  };

  const remove = async (row: CodeRow) => {
    const r = await api.del(`/api/redemption/${row.id}/`);
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.deleted"));
    void load();
  };

  const columns = [
    { title: "ID", dataIndex: "id", width: 70 },
    { title: t("ops.name"), dataIndex: "name" },
    { title: t("ops.status"), dataIndex: "status", render: (s: number) => <Tag color={STATUS_COLOR[s] ?? "gray"}>{t(`ops.redemption.status.${s}`)}</Tag> },
    { title: t("ops.quota"), dataIndex: "quota", render: (q: number) => renderQuota(q) },
    { title: t("ops.createdTime"), dataIndex: "created_time", render: (v: number) => timestampToString(v) },
    { title: t("ops.redemption.usedBy"), dataIndex: "used_user_id", render: (v: number) => (v ? v : t("ops.redemption.unused")) },
    {
      title: t("ops.actions"), key: "actions",
      render: (_: unknown, row: CodeRow) => (
        <Space size={4}>
          <Button size="mini" onClick={() => copyWithFallback(row.key)}>{t("ops.copy")}</Button>
          {row.status === REDEMPTION_STATUS.unused
            ? <Button size="mini" status="warning" onClick={() => setStatus(row, REDEMPTION_STATUS.disabled)}>{t("ops.disable")}</Button>
            : <Button size="mini" status="success" disabled={row.status === REDEMPTION_STATUS.used} onClick={() => setStatus(row, REDEMPTION_STATUS.unused)}>{t("ops.enable")}</Button>}
          <Button size="mini" disabled={row.status !== REDEMPTION_STATUS.unused} onClick={() => setEditing(row)}>{t("ops.edit")}</Button>
          <Popconfirm title={t("ops.confirmDelete")} onOk={() => remove(row)}>
            <Button size="mini" status="danger">{t("ops.delete")}</Button>
          </Popconfirm>
        </Space>
      ),
    },
  ];

  return (
    <Page title={t("ops.redemption.title")}>
      <Space wrap style={{ marginBottom: 16 }}>
        <Input allowClear placeholder={t("ops.redemption.search")} value={keyword} onChange={setKeyword} style={{ width: 240 }}
          onPressEnter={() => { setPage(1); void load(1); }} />
        <Button type="primary" onClick={() => { setPage(1); void load(1); }}>{t("ops.search")}</Button>
        <Button type="primary" onClick={() => setEditing(null)}>{t("ops.redemption.add")}</Button>
      </Space>
      <Table rowKey="id" loading={loading} columns={columns} data={rows} scroll={{ x: 800 }}
        pagination={{
          current: page, pageSize: size, total, showTotal: true, sizeCanChange: true, sizeOptions,
          onChange: (p, s) => { if (s !== size) { setSize(s); setPage(1); } else setPage(p); },
        }} />
      {editing !== undefined && (
        <CodeDrawer code={editing} onClose={() => setEditing(undefined)} onSaved={() => { setEditing(undefined); void load(); }} />
      )}
    </Page>
  );
}

function CodeDrawer({ code, onClose, onSaved }: { code: CodeRow | null; onClose: () => void; onSaved: () => void }) {
  const { t } = useTranslation();
  const editing = !!code;
  const [name, setName] = useState(code?.name ?? "");
  const [quota, setQuota] = useState<number | undefined>(code?.quota ?? NEW_CODE_QUOTA);
  const [count, setCount] = useState<number | undefined>(1);
  const [error, setError] = useState("");
  const [saving, setSaving] = useState(false);

  const submit = async () => {
    setError("");
    if (quota === undefined || !Number.isInteger(quota) || quota <= 0) return setError(t("ops.redemption.quotaInvalid"));
    // An empty name falls back to the formatted quota (spec 001 §5).
    const finalName = name.trim() || renderQuota(quota);
    if (finalName.length > REDEMPTION_NAME_MAX_LENGTH) return setError(t("ops.redemption.nameLength"));
    if (!editing && (count === undefined || !Number.isInteger(count) || count <= 0 || count > REDEMPTION_MAX_BATCH)) {
      return setError(t("ops.redemption.countInvalid"));
    }
    setSaving(true);
    const r = editing
      ? await api.put("/api/redemption/", { id: code!.id, name: finalName, quota })
      : await api.post<string[]>("/api/redemption/", { name: finalName, quota, count });
    setSaving(false);
    if (!r.success) return Message.error(r.message);
    if (!editing && Array.isArray(r.data)) {
      const codes = r.data as string[];
      downloadText(`${finalName}.txt`, codes.join("\n"));
      Message.success(t("ops.redemption.createdDownload", { count: codes.length }));
    } else Message.success(t("ops.saved"));
    onSaved();
  };

  return (
    <Drawer visible width={Math.min(460, globalThis.innerWidth ?? 460)} onCancel={onClose}
      title={editing ? t("ops.redemption.editTitle") : t("ops.redemption.addTitle")}
      footer={<Space><Button onClick={onClose}>{t("ops.cancel")}</Button><Button type="primary" loading={saving} onClick={submit}>{t("ops.submit")}</Button></Space>}>
      <Space direction="vertical" size="medium" style={{ width: "100%" }}>
        {error && <Alert type="error" content={error} data-testid="form-error" />}
        <label>{t("ops.name")}
          <Input value={name} onChange={setName} placeholder={t("ops.redemption.namePlaceholder")} />
        </label>
        <div>
          <div>{t("ops.quota")} {quota !== undefined && <Typography.Text type="secondary">({renderQuota(quota)})</Typography.Text>}</div>
          <InputNumber value={quota} min={1} precision={0} onChange={(v) => setQuota(v === undefined || v === null ? undefined : Number(v))} />
        </div>
        {!editing && (
          <div>
            <div>{t("ops.redemption.count")}</div>
            <InputNumber value={count} min={1} max={REDEMPTION_MAX_BATCH} precision={0} onChange={(v) => setCount(v === undefined || v === null ? undefined : Number(v))} />
          </div>
        )}
      </Space>
    </Drawer>
  );
}
