// The visual model pricing editor and the models-without-ratio list (001 §2–§5). Both edit the same
// rows and save ModelPrice / ModelRatio / CompletionRatio, only the maps that changed.
import { useEffect, useMemo, useState } from "react";
import {
  Button,
  Form,
  Input,
  Message,
  Modal,
  Popconfirm,
  Radio,
  Select,
  Space,
  Table,
  Tag,
} from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api, saveOptions } from "../../../api/index.ts";
import { fieldError } from "../../../components/AuthCard.tsx";
import { ratioColor } from "../../../lib/format.ts";
import { getPageSize, setPageSize } from "../../../lib/storage.ts";
import { PAGE_SIZE_OPTIONS } from "../../../../server/catalogue/index.ts";
import { useSettings } from "../context.tsx";
import {
  applyBatch,
  draftFromRow,
  optionValuesFromRows,
  rowFromDraft,
  rowsFromOptions,
  sameJson,
  unsetModels,
  validateDraft,
  type BatchField,
  type DraftErrors,
  type PriceRow,
  type RowDraft,
} from "../pricing.ts";

const PRICING_KEYS = ["ModelPrice", "ModelRatio", "CompletionRatio"] as const;

function usePricingRows() {
  const { options, commit } = useSettings();
  const [rows, setRows] = useState<PriceRow[]>(() => rowsFromOptions(options));
  const [saving, setSaving] = useState(false);
  const { t } = useTranslation();
  useEffect(() => setRows(rowsFromOptions(options)), [options.ModelPrice, options.ModelRatio, options.CompletionRatio]);
  const save = async (next: PriceRow[] = rows) => {
    const values = optionValuesFromRows(next);
    const original: Record<string, string> = {};
    const current: Record<string, string> = {};
    for (const k of PRICING_KEYS) {
      if (sameJson(options[k], values[k])) continue;
      original[k] = options[k] ?? "";
      current[k] = values[k];
    }
    if (Object.keys(current).length === 0) {
      Message.warning(t("save.nothingChanged"));
      return false;
    }
    setSaving(true);
    const r = await saveOptions(original, current);
    setSaving(false);
    commit(Object.fromEntries(r.saved.map((k) => [k, current[k]])));
    if (r.failed.length === 0) Message.success(t("save.success"));
    else Message.error(r.saved.length ? t("save.partialFailure") : r.failed[0].message || t("save.failed"));
    return r.failed.length === 0;
  };
  return { rows, setRows, save, saving };
}

export function RowEditor({
  row,
  existing,
  onCancel,
  onOk,
}: {
  row: PriceRow | null | "new";
  existing: string[];
  onCancel: () => void;
  onOk: (r: PriceRow) => void;
}) {
  const { t } = useTranslation();
  const isNew = row === "new" || (row !== null && !existing.includes(row.name));
  const [d, setD] = useState<RowDraft>(() => draftFromRow(row === "new" ? null : row));
  const [errors, setErrors] = useState<DraftErrors>({});
  useEffect(() => {
    setD(draftFromRow(row === "new" ? null : row));
    setErrors({});
  }, [row]);
  const set = (patch: Partial<RowDraft>) => {
    const next = { ...d, ...patch };
    setD(next);
    if (Object.keys(errors).length) setErrors(validateDraft(next, existing, isNew));
  };
  const ok = () => {
    const e = validateDraft(d, existing, isNew);
    setErrors(e);
    if (Object.keys(e).length) return;
    onOk(rowFromDraft(d));
  };
  const err = (k: keyof RowDraft) => fieldError(errors[k] ? t(errors[k]!) : null);
  const perRequest = d.mode === "request";
  return (
    <Modal
      title={isNew ? t("pricing.addModel") : t("pricing.editModel")}
      visible={row !== null}
      onOk={ok}
      onCancel={onCancel}
    >
      <Form layout="vertical">
        <Form.Item label={t("pricing.modelName")} {...err("name")}>
          <Input name="model-name" value={d.name} disabled={!isNew} onChange={(v) => set({ name: v })} />
        </Form.Item>
        <Form.Item label={t("pricing.mode")}>
          <Radio.Group
            type="button"
            value={d.mode}
            // Switching to per-token clears the price; switching to per-request clears the ratios.
            onChange={(m) =>
              set(
                m === "request"
                  ? { mode: m, ratio: "", completionRatio: "", tokenPrice: "", completionTokenPrice: "" }
                  : { mode: m, price: "" },
              )
            }
          >
            <Radio value="ratio">{t("pricing.modeRatio")}</Radio>
            <Radio value="tokenPrice">{t("pricing.modeTokenPrice")}</Radio>
            <Radio value="request">{t("pricing.modeRequest")}</Radio>
          </Radio.Group>
        </Form.Item>
        <Form.Item label={t("pricing.price")} extra={t("pricing.priceHelp")} {...err("price")}>
          <Input name="price" value={d.price} disabled={!perRequest} onChange={(v) => set({ price: v })} />
        </Form.Item>
        {d.mode !== "tokenPrice" ? (
          <>
            <Form.Item label={t("pricing.ratio")} {...err("ratio")}>
              <Input name="ratio" value={d.ratio} disabled={perRequest} onChange={(v) => set({ ratio: v })} />
            </Form.Item>
            <Form.Item label={t("pricing.completionRatio")} {...err("completionRatio")}>
              <Input
                name="completionRatio"
                value={d.completionRatio}
                disabled={perRequest}
                onChange={(v) => set({ completionRatio: v })}
              />
            </Form.Item>
          </>
        ) : (
          <>
            <Form.Item label={t("pricing.tokenPrice")} extra={t("pricing.tokenPriceHelp")} {...err("tokenPrice")}>
              <Input name="tokenPrice" value={d.tokenPrice} onChange={(v) => set({ tokenPrice: v })} />
            </Form.Item>
            <Form.Item label={t("pricing.completionTokenPrice")} {...err("completionTokenPrice")}>
              <Input
                name="completionTokenPrice"
                value={d.completionTokenPrice}
                onChange={(v) => set({ completionTokenPrice: v })}
              />
            </Form.Item>
          </>
        )}
      </Form>
    </Modal>
  );
}

function BatchDialog({
  visible,
  onCancel,
  onApply,
}: {
  visible: boolean;
  onCancel: () => void;
  onApply: (field: BatchField, v: string, v2: string) => void;
}) {
  const { t } = useTranslation();
  const [field, setField] = useState<BatchField>("ratio");
  const [v, setV] = useState("");
  const [v2, setV2] = useState("");
  return (
    <Modal title={t("pricing.batchSet")} visible={visible} onCancel={onCancel} onOk={() => onApply(field, v, v2)}>
      <Form layout="vertical">
        <Form.Item label={t("pricing.batchField")}>
          <Select
            value={field}
            onChange={setField}
            options={[
              { value: "price", label: t("pricing.price") },
              { value: "ratio", label: t("pricing.ratio") },
              { value: "completionRatio", label: t("pricing.completionRatio") },
              { value: "both", label: t("pricing.bothRatios") },
            ]}
          />
        </Form.Item>
        <Form.Item label={field === "both" ? t("pricing.ratio") : t("pricing.fillValue")}>
          <Input name="batch-value" value={v} onChange={setV} />
        </Form.Item>
        {field === "both" && (
          <Form.Item label={t("pricing.completionRatio")}>
            <Input name="batch-value2" value={v2} onChange={setV2} />
          </Form.Item>
        )}
      </Form>
    </Modal>
  );
}

export function VisualPricingEditor() {
  const { t } = useTranslation();
  const { rows, setRows, save, saving } = usePricingRows();
  const [search, setSearch] = useState("");
  const [editing, setEditing] = useState<PriceRow | null | "new">(null);
  const [selected, setSelected] = useState<string[]>([]);
  const [batchOpen, setBatchOpen] = useState(false);
  const [size, setSize] = useState(() => getPageSize("model-pricing"));
  const shown = useMemo(
    () => rows.filter((r) => r.name.toLowerCase().includes(search.trim().toLowerCase())),
    [rows, search],
  );
  const names = rows.map((r) => r.name);

  const upsert = (r: PriceRow) => {
    setRows((list) =>
      list.some((x) => x.name === r.name)
        ? list.map((x) => (x.name === r.name ? r : x))
        : [...list, r].sort((a, b) => a.name.localeCompare(b.name)),
    );
    setEditing(null);
  };

  const openBatch = () => {
    if (selected.length === 0) {
      Message.warning(t("pricing.batchNoSelection"));
      return;
    }
    setBatchOpen(true);
  };

  const columns = [
    {
      title: t("pricing.modelName"),
      dataIndex: "name",
      render: (n: string) => <span style={{ whiteSpace: "nowrap" }}>{n}</span>,
    },
    {
      title: t("pricing.billing"),
      dataIndex: "billing",
      render: (_: unknown, r: PriceRow) =>
        r.price !== undefined ? (
          <Tag color="purple">{t("pricing.perRequest")}</Tag>
        ) : (
          <Tag color="cyan">{t("pricing.perToken")}</Tag>
        ),
    },
    { title: t("pricing.price"), dataIndex: "price", render: (v?: number) => (v === undefined ? "-" : `$${v}`) },
    {
      title: t("pricing.ratio"),
      dataIndex: "ratio",
      render: (v?: number) => (v === undefined ? "-" : <Tag color={ratioColor(v)}>{v}</Tag>),
    },
    {
      title: t("pricing.completionRatio"),
      dataIndex: "completionRatio",
      render: (v?: number) => (v === undefined ? "-" : v),
    },
    {
      title: t("common.actions"),
      dataIndex: "actions",
      render: (_: unknown, r: PriceRow) => (
        <Space>
          <Button size="mini" onClick={() => setEditing(r)}>
            {t("common.edit")}
          </Button>
          <Popconfirm
            title={t("pricing.confirmDelete")}
            onOk={() => setRows((list) => list.filter((x) => x.name !== r.name))}
          >
            <Button size="mini" status="danger">
              {t("common.delete")}
            </Button>
          </Popconfirm>
        </Space>
      ),
    },
  ];

  return (
    <div>
      <Space wrap style={{ marginBottom: 12 }}>
        <Input.Search
          allowClear
          placeholder={t("pricing.search")}
          value={search}
          onChange={setSearch}
          style={{ width: 240 }}
        />
        <Button onClick={() => setEditing("new")}>{t("pricing.addModel")}</Button>
        <Button onClick={openBatch}>{t("pricing.batchSet")}</Button>
        <Button type="primary" loading={saving} onClick={() => void save()}>
          {t("pricing.save")}
        </Button>
      </Space>
      <Table
        rowKey="name"
        columns={columns as any}
        data={shown}
        scroll={{ x: true }}
        rowSelection={{
          type: "checkbox",
          selectedRowKeys: selected,
          onChange: (keys) => setSelected(keys as string[]),
        }}
        pagination={{
          pageSize: size,
          sizeCanChange: true,
          sizeOptions: [...PAGE_SIZE_OPTIONS],
          showTotal: true,
          onPageSizeChange: (s) => {
            setSize(s);
            setPageSize(s, "model-pricing");
          },
        }}
      />
      <RowEditor row={editing} existing={names} onCancel={() => setEditing(null)} onOk={upsert} />
      <BatchDialog
        visible={batchOpen}
        onCancel={() => setBatchOpen(false)}
        onApply={(field, v, v2) => {
          const r = applyBatch(rows, selected, field, v, v2);
          if ("error" in r) {
            Message.error(t(r.error));
            return;
          }
          setRows(r.rows);
          setBatchOpen(false);
        }}
      />
    </div>
  );
}

export function UnsetModels() {
  const { t } = useTranslation();
  const { rows, save } = usePricingRows();
  const [enabled, setEnabled] = useState<string[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<PriceRow | null>(null);
  const [size, setSize] = useState(() => getPageSize("unset-models"));
  useEffect(() => {
    void api.get<string[]>("/api/channel/models_enabled").then((r) => {
      if (r.success) setEnabled(r.data ?? []);
      else setError(r.message || t("pricing.enabledModelsFailed"));
    });
  }, []);
  const list = unsetModels(enabled ?? [], rows);
  return (
    <div>
      {error && (
        <Tag color="red" style={{ marginBottom: 12 }}>
          {t("pricing.enabledModelsFailed")}: {error}
        </Tag>
      )}
      <Table
        rowKey="name"
        loading={enabled === null && !error}
        data={list.map((name) => ({ name }))}
        columns={[
          { title: t("pricing.modelName"), dataIndex: "name" },
          {
            title: t("common.actions"),
            dataIndex: "a",
            render: (_: unknown, r: { name: string }) => (
              <Button size="mini" type="primary" onClick={() => setEditing({ name: r.name })}>
                {t("pricing.setPrice")}
              </Button>
            ),
          },
        ]}
        pagination={{
          pageSize: size,
          sizeCanChange: true,
          sizeOptions: [...PAGE_SIZE_OPTIONS],
          onPageSizeChange: (s) => {
            setSize(s);
            setPageSize(s, "unset-models");
          },
        }}
      />
      <RowEditor
        row={editing}
        existing={rows.map((r) => r.name)}
        onCancel={() => setEditing(null)}
        onOk={(r) => {
          setEditing(null);
          void save([...rows.filter((x) => x.name !== r.name), r]);
        }}
      />
    </div>
  );
}
