// Column visibility for wide tables, remembered in local storage under the table's key
// (channels-table-columns, logs-table-columns; spec 001 §2).
import type React from "react";
import { useState } from "react";
import { Button, Checkbox, Modal } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { readJson, writeJson } from "../../lib/storage.ts";

export function useColumnVisibility(storageKey: string, keys: string[]) {
  const [visible, setVisible] = useState<Record<string, boolean>>(() => {
    const saved = readJson<Record<string, boolean>>(storageKey, {});
    return Object.fromEntries(keys.map((k) => [k, saved[k] !== false]));
  });
  const update = (next: Record<string, boolean>) => {
    setVisible(next);
    writeJson(storageKey, next);
  };
  return { visible, update };
}

export function ColumnPicker({
  columns,
  visible,
  onChange,
}: {
  columns: Array<{ key: string; title: React.ReactNode }>;
  visible: Record<string, boolean>;
  onChange: (v: Record<string, boolean>) => void;
}) {
  const { t } = useTranslation();
  const [open, setOpen] = useState(false);
  const [draft, setDraft] = useState(visible);
  return (
    <>
      <Button
        onClick={() => {
          setDraft(visible);
          setOpen(true);
        }}
      >
        {t("ops.columns")}
      </Button>
      <Modal
        title={t("ops.columns")}
        visible={open}
        onCancel={() => setOpen(false)}
        onOk={() => {
          onChange(draft);
          setOpen(false);
        }}
      >
        <Checkbox
          checked={columns.every((c) => draft[c.key])}
          onChange={(on) => setDraft(Object.fromEntries(columns.map((c) => [c.key, on])))}
        >
          {t("ops.selectAll")}
        </Checkbox>
        <div style={{ display: "grid", gridTemplateColumns: "1fr 1fr", gap: 8, marginTop: 12 }}>
          {columns.map((c) => (
            <Checkbox key={c.key} checked={!!draft[c.key]} onChange={(on) => setDraft({ ...draft, [c.key]: on })}>
              {c.title}
            </Checkbox>
          ))}
        </div>
      </Modal>
    </>
  );
}
