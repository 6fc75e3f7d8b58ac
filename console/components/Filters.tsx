// Filter forms above the console's lists (usage logs, dashboard, drawing and task logs): labelled fields
// in a grid that fills the card's width and wraps by whole fields, and a date-time range picked with
// Arco's range picker and its presets. On a phone the range is two date pickers (a two-month range
// panel would not fit the screen) and the presets a select.
import React from "react";
import { Button, DatePicker, Select } from "@arco-design/web-react";
import dayjs, { type Dayjs } from "dayjs";
import { useTranslation } from "react-i18next";
import { useIsMobile } from "../lib/hooks.ts";

export const DATE_TIME_FORMAT = "YYYY-MM-DD HH:mm:ss";

/** A labelled field of a filter form; `wide` takes two grid columns where there are two. */
export function Field({ label, children, wide, testId }: { label: React.ReactNode; children: React.ReactNode; wide?: boolean; testId?: string }) {
  return (
    <div className={`sy-field${wide ? " sy-field-wide" : ""}`} data-testid={testId}>
      <span className="sy-field-label">{label}</span>
      {children}
    </div>
  );
}

/** The form (as Arco Pro's search forms): the fields in a grid, the buttons in a column at its right; Enter searches. */
export function FilterBar({ children, onSearch, onReset, loading, extra }: {
  children: React.ReactNode; onSearch: () => void; onReset?: () => void; loading?: boolean; extra?: React.ReactNode;
}) {
  const { t } = useTranslation();
  return (
    <form className="sy-filters" data-testid="filters" onSubmit={(e) => { e.preventDefault(); onSearch(); }}>
      <div className="sy-filter-fields">{children}</div>
      <div className="sy-filter-actions">
        <Button type="primary" htmlType="submit" loading={loading} data-testid="filter-search">{t("ops.search")}</Button>
        {onReset && <Button onClick={onReset} data-testid="filter-reset">{t("ops.filter.reset")}</Button>}
        {extra}
      </div>
    </form>
  );
}

export type RangePreset = "today" | "last24h" | "last7d" | "last30d" | "thisMonth";

/** [start, end] of a preset; the end is an hour ahead of now, as the spec's default ranges are. */
export function presetRange(preset: RangePreset, now = dayjs()): [Dayjs, Dayjs] {
  const end = now.add(1, "hour").startOf("minute");
  switch (preset) {
    case "today": return [now.startOf("day"), end];
    case "last24h": return [now.subtract(24, "hour").startOf("minute"), end];
    case "last7d": return [now.subtract(7, "day").startOf("day"), end];
    case "last30d": return [now.subtract(30, "day").startOf("day"), end];
    case "thisMonth": return [now.startOf("month"), end];
  }
}

const fmt = (d: Dayjs) => d.format(DATE_TIME_FORMAT);

/** A date-time range as two "YYYY-MM-DD HH:mm:ss" strings ("" = open end). */
export function DateRange({ value, onChange, presets = ["today", "last7d", "last30d", "thisMonth"], testId = "date-range" }: {
  value: [string, string]; onChange: (v: [string, string]) => void; presets?: RangePreset[]; testId?: string;
}) {
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
        <Select size="default" placeholder={t("ops.filter.preset")} value={undefined} onChange={(p: RangePreset) => onChange(presetRange(p).map(fmt) as [string, string])}
          options={presets.map((p) => ({ value: p, label: t(`ops.filter.${p}`) }))} />
        <div className="sy-range-days">
          <DatePicker value={value[0] || undefined} onChange={day("start")} placeholder={t("ops.log.start")} style={{ width: "100%" }} />
          <DatePicker value={value[1] || undefined} onChange={day("end")} placeholder={t("ops.log.end")} style={{ width: "100%" }} />
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
