// The filter row shared by the drawing log and the creative task log.
import React from "react";
import { Button, Input, Space } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";

export interface TaskFilterValues { channel: string; id: string; start: string; end: string }

export function TaskFilters({ admin, values, onChange, onSearch, idLabel }: {
  admin: boolean; values: TaskFilterValues; onChange: (v: TaskFilterValues) => void; onSearch: () => void; idLabel: string;
}) {
  const { t } = useTranslation();
  const set = (k: keyof TaskFilterValues) => (v: string) => onChange({ ...values, [k]: v });
  return (
    <Space wrap style={{ marginBottom: 12 }}>
      {admin && <Input placeholder={t("ops.log.channelId")} value={values.channel} onChange={set("channel")} style={{ width: 120 }} />}
      <Input placeholder={idLabel} value={values.id} onChange={set("id")} style={{ width: 200 }} />
      <Input placeholder={t("ops.log.start")} value={values.start} onChange={set("start")} style={{ width: 190 }} />
      <Input placeholder={t("ops.log.end")} value={values.end} onChange={set("end")} style={{ width: 190 }} />
      <Button type="primary" onClick={onSearch}>{t("ops.search")}</Button>
    </Space>
  );
}
