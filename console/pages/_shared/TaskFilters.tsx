// The filter form shared by the drawing log and the creative task log: labelled fields and a date-time
// range with presets (components/Filters.tsx).
import { Input } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { DateRange, Field, FilterBar, type RangePreset } from "../../components/Filters.tsx";

export interface TaskFilterValues {
  channel: string;
  id: string;
  start: string;
  end: string;
}

export function TaskFilters({
  admin,
  values,
  onChange,
  onSearch,
  onReset,
  idLabel,
  presets,
}: {
  admin: boolean;
  values: TaskFilterValues;
  onChange: (v: TaskFilterValues) => void;
  onSearch: () => void;
  onReset?: () => void;
  idLabel: string;
  presets?: RangePreset[];
}) {
  const { t } = useTranslation();
  const set = (k: keyof TaskFilterValues) => (v: string) => onChange({ ...values, [k]: v });
  return (
    <FilterBar onSearch={onSearch} onReset={onReset}>
      <Field label={t("ops.filter.time")} wide>
        <DateRange
          value={[values.start, values.end]}
          presets={presets}
          onChange={([start, end]) => onChange({ ...values, start, end })}
        />
      </Field>
      <Field label={idLabel}>
        <Input allowClear value={values.id} onChange={set("id")} />
      </Field>
      {admin && (
        <Field label={t("ops.log.channelId")}>
          <Input allowClear value={values.channel} onChange={set("channel")} />
        </Field>
      )}
    </FilterBar>
  );
}
