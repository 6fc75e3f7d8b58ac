// Redemption codes (spec 001 §2, §4 redemption status, §5 rules, §9 defaults): admin only.
import { useCallback, useEffect, useState } from "react";
import { Alert, Button, Drawer, Input, InputNumber, Space, Tag, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { ResponsiveTable, type RColumn, type RowAction } from "../../components/ResponsiveTable.tsx";
import { toast } from "../../lib/toast.ts";
import { copyWithFallback } from "../../components/copy.tsx";
import { api, qs } from "../../api/index.ts";
import { renderQuota, timestampToString } from "../../lib/format.ts";
import {
  REDEMPTION_MAX_BATCH,
  REDEMPTION_NAME_MAX_LENGTH,
  REDEMPTION_STATUS,
} from "../../../server/catalogue/index.ts";
import { asPage, sizeOptions, usePageSize } from "../_shared/paging.ts";
import { downloadText } from "../_shared/download.ts";

interface CodeRow {
  id: number;
  name: string;
  key: string;
  status: number;
  quota: number;
  created_time: number;
  redeemed_time?: number;
  used_user_id: number;
}

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

  const load = useCallback(
    async (p = page, s = size) => {
      setLoading(true);
      const path = keyword.trim()
        ? `/api/redemption/search${qs({ keyword: keyword.trim(), p, page_size: s })}`
        : `/api/redemption/${qs({ p, page_size: s })}`;
      const r = await api.get(path);
      setLoading(false);
      if (!r.success) return toast.error(r.message);
      const { items, total: n } = asPage<CodeRow>(r.data);
      setRows(items);
      setTotal(n);
    },
    [page, size, keyword],
  );

  useEffect(() => {
    void load();
  }, [page, size]);

  const setStatus = async (row: CodeRow, status: number) => {
    const r = await api.put("/api/redemption/?status_only=true", { id: row.id, status });
    if (!r.success) return toast.error(r.message);
    toast.success(
      t(status === REDEMPTION_STATUS.unused ? "ops.redemption.enabledOne" : "ops.redemption.disabledOne", {
        name: row.name,
      }),
    );
    setRows((list) => list.map((x) => (x.id === row.id ? { ...x, status } : x)));
  };

  const remove = async (row: CodeRow) => {
    const r = await api.del(`/api/redemption/${row.id}/`);
    if (!r.success) return toast.error(r.message);
    toast.success(t("ops.redemption.deletedOne", { name: row.name }));
    void load();
  };

  // `from`: the table width (px) from which a column stays in the row; narrower, it moves to the row's details.
  const columns: Array<RColumn<CodeRow>> = [
    { key: "id", title: "ID", dataIndex: "id", from: 700 },
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
      key: "status",
      title: t("ops.status"),
      dataIndex: "status",
      render: (st: number) => <Tag color={STATUS_COLOR[st] ?? "gray"}>{t(`ops.redemption.status.${st}`)}</Tag>,
    },
    {
      key: "quota",
      title: t("ops.quota"),
      dataIndex: "quota",
      align: "right",
      from: 520,
      render: (q: number) => <span className="sy-nowrap">{renderQuota(q)}</span>,
    },
    {
      key: "created",
      title: t("ops.createdTime"),
      dataIndex: "created_time",
      from: 900,
      render: (v: number) => <span className="sy-nowrap">{timestampToString(v)}</span>,
    },
    {
      key: "usedBy",
      title: t("ops.redemption.usedBy"),
      dataIndex: "used_user_id",
      from: 780,
      render: (v: number) => (v ? v : t("ops.redemption.unused")),
    },
  ];

  const actions = (row: CodeRow): RowAction[] => [
    { key: "copy", label: t("ops.copy"), main: true, onClick: () => copyWithFallback(row.key) },
    row.status === REDEMPTION_STATUS.unused
      ? {
          key: "disable",
          label: t("ops.disable"),
          status: "warning",
          main: true,
          onClick: () => setStatus(row, REDEMPTION_STATUS.disabled),
        }
      : {
          key: "enable",
          label: t("ops.enable"),
          status: "success",
          main: true,
          disabled: row.status === REDEMPTION_STATUS.used,
          onClick: () => setStatus(row, REDEMPTION_STATUS.unused),
        },
    {
      key: "edit",
      label: t("ops.edit"),
      main: true,
      disabled: row.status !== REDEMPTION_STATUS.unused,
      onClick: () => setEditing(row),
    },
    {
      key: "delete",
      label: t("ops.delete"),
      status: "danger",
      confirm: t("ops.confirmDelete"),
      onClick: () => remove(row),
    },
  ];

  return (
    <Page title={t("ops.redemption.title")}>
      <div className="sy-toolbar">
        <Input
          allowClear
          placeholder={t("ops.redemption.search")}
          value={keyword}
          onChange={setKeyword}
          className="sy-w-240"
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
          {t("ops.redemption.add")}
        </Button>
      </div>
      <ResponsiveTable<CodeRow>
        testId="redemption-table"
        rowKey="id"
        loading={loading}
        columns={columns}
        data={rows}
        actions={actions}
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
        <CodeDrawer
          code={editing}
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
    if (quota === undefined || !Number.isInteger(quota) || quota <= 0)
      return setError(t("ops.redemption.quotaInvalid"));
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
    if (!r.success) return toast.error(r.message);
    if (!editing && Array.isArray(r.data)) {
      const codes = r.data as string[];
      downloadText(`${finalName}.txt`, codes.join("\n"));
      toast.success(t("ops.redemption.createdDownload", { count: codes.length }));
    } else toast.success(t("ops.saved"));
    onSaved();
  };

  return (
    <Drawer
      visible
      width={Math.min(460, globalThis.innerWidth ?? 460)}
      onCancel={onClose}
      title={editing ? t("ops.redemption.editTitle") : t("ops.redemption.addTitle")}
      footer={
        <Space>
          <Button onClick={onClose}>{t("ops.cancel")}</Button>
          <Button type="primary" loading={saving} onClick={submit}>
            {t("ops.submit")}
          </Button>
        </Space>
      }
    >
      <Space direction="vertical" size="medium" style={{ width: "100%" }}>
        {error && <Alert type="error" content={error} data-testid="form-error" />}
        <label>
          {t("ops.name")}
          <Input value={name} onChange={setName} placeholder={t("ops.redemption.namePlaceholder")} />
        </label>
        <div>
          <div>
            {t("ops.quota")}{" "}
            {quota !== undefined && <Typography.Text type="secondary">({renderQuota(quota)})</Typography.Text>}
          </div>
          <InputNumber
            value={quota}
            min={1}
            precision={0}
            onChange={(v) => setQuota(v === undefined || v === null ? undefined : Number(v))}
          />
        </div>
        {!editing && (
          <div>
            <div>{t("ops.redemption.count")}</div>
            <InputNumber
              value={count}
              min={1}
              max={REDEMPTION_MAX_BATCH}
              precision={0}
              onChange={(v) => setCount(v === undefined || v === null ? undefined : Number(v))}
            />
          </div>
        )}
      </Space>
    </Drawer>
  );
}
