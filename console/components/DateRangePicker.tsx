// The date-time range of the filter forms (components/Filters.tsx): Arco's range picker with presets; on a
// phone two date pickers (a two-month range panel would not fit the screen) and the presets a select.
// A module of its own, loaded on demand: the picker and its date library are the heaviest part of a
// filter form, and the list beside it need not wait for them.
import { DatePicker, Select } from "@arco-design/web-react";
import dayjs, { type Dayjs } from "dayjs";
import { useTranslation } from "react-i18next";
import { useIsMobile } from "../lib/hooks.ts";
import { DATE_TIME_FORMAT, type DateRangeProps, type RangePreset } from "./Filters.tsx";

/** [start, end] of a preset; the end is an hour ahead of now, as the spec's default ranges are. */
export function presetRange(preset: RangePreset, now = dayjs()): [Dayjs, Dayjs] {
  const end = now.add(1, "hour").startOf("minute");
  switch (preset) {
    case "today":
      return [now.startOf("day"), end];
    case "last24h":
      return [now.subtract(24, "hour").startOf("minute"), end];
    case "last7d":
      return [now.subtract(7, "day").startOf("day"), end];
    case "last30d":
      return [now.subtract(30, "day").startOf("day"), end];
    case "thisMonth":
      return [now.startOf("month"), end];
  }
}

const fmt = (d: Dayjs) => d.format(DATE_TIME_FORMAT);
const DEFAULT_PRESETS: RangePreset[] = ["today", "last7d", "last30d", "thisMonth"];

/** A date-time range as two "YYYY-MM-DD HH:mm:ss" strings ("" = open end). */
export default function DateRangePicker({
  value,
  onChange,
  presets = DEFAULT_PRESETS,
  testId = "date-range",
}: DateRangeProps) {
  const { t } = useTranslation();
  const mobile = useIsMobile();
  if (mobile) {
    // Whole days: from the start of the first to the end of the last.
    const day = (edge: "start" | "end") => (s: string | undefined) => {
      const d = s ? dayjs(s) : null;
      const next: [string, string] = [...value];
      next[edge === "start" ? 0 : 1] = d ? fmt(edge === "start" ? d.startOf("day") : d.endOf("day")) : "";
      onChange(next);
    };
    return (
      <div className="sy-range-mobile" data-testid={testId}>
        <Select
          size="default"
          placeholder={t("ops.filter.preset")}
          value={undefined}
          onChange={(p: RangePreset) => onChange(presetRange(p).map(fmt) as [string, string])}
          options={presets.map((p) => ({ value: p, label: t(`ops.filter.${p}`) }))}
        />
        <div className="sy-range-days">
          <DatePicker
            value={value[0] || undefined}
            onChange={day("start")}
            placeholder={t("ops.log.start")}
            style={{ width: "100%" }}
          />
          <DatePicker
            value={value[1] || undefined}
            onChange={day("end")}
            placeholder={t("ops.log.end")}
            style={{ width: "100%" }}
          />
        </div>
      </div>
    );
  }
  return (
    <DatePicker.RangePicker
      data-testid={testId}
      className="sy-range"
      showTime
      format={DATE_TIME_FORMAT}
      value={value[0] || value[1] ? [value[0], value[1]] : undefined}
      onChange={(s: string[] | undefined) => onChange([s?.[0] ?? "", s?.[1] ?? ""])}
      shortcutsPlacementLeft
      shortcuts={presets.map((p) => ({ text: t(`ops.filter.${p}`), value: () => presetRange(p) }))}
      placeholder={[t("ops.log.start"), t("ops.log.end")]}
      style={{ width: "100%" }}
    />
  );
}
