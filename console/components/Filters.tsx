// Filter forms above the console's lists (usage logs, dashboard, drawing and task logs): labelled fields
// in a grid that fills the card's width and wraps by whole fields, and a date-time range picked with
// Arco's range picker and its presets (components/DateRangePicker.tsx, loaded on demand: until it is
// there, the range shows as text in a read-only box of the same size).
import type React from "react";
import { Suspense, lazy, useEffect, useState } from "react";
import { Button, Input } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";

export const DATE_TIME_FORMAT = "YYYY-MM-DD HH:mm:ss";

/** A labelled field of a filter form; `wide` takes two grid columns where there are two. */
export function Field({
  label,
  children,
  wide,
  testId,
}: {
  label: React.ReactNode;
  children: React.ReactNode;
  wide?: boolean;
  testId?: string;
}) {
  return (
    <div className={`sy-field${wide ? " sy-field-wide" : ""}`} data-testid={testId}>
      <span className="sy-field-label">{label}</span>
      {children}
    </div>
  );
}

/** The form (as Arco Pro's search forms): the fields in a grid, the buttons in a column at its right; Enter searches. */
export function FilterBar({
  children,
  onSearch,
  onReset,
  loading,
  extra,
}: {
  children: React.ReactNode;
  onSearch: () => void;
  onReset?: () => void;
  loading?: boolean;
  extra?: React.ReactNode;
}) {
  const { t } = useTranslation();
  return (
    <form
      className="sy-filters"
      data-testid="filters"
      onSubmit={(e) => {
        e.preventDefault();
        onSearch();
      }}
    >
      <div className="sy-filter-fields">{children}</div>
      <div className="sy-filter-actions">
        <Button type="primary" htmlType="submit" loading={loading} data-testid="filter-search">
          {t("ops.search")}
        </Button>
        {onReset && (
          <Button onClick={onReset} data-testid="filter-reset">
            {t("ops.filter.reset")}
          </Button>
        )}
        {extra}
      </div>
    </form>
  );
}

export type RangePreset = "today" | "last24h" | "last7d" | "last30d" | "thisMonth";

export interface DateRangeProps {
  value: [string, string];
  onChange: (v: [string, string]) => void;
  presets?: RangePreset[];
  testId?: string;
}

const Picker = lazy(() => import("./DateRangePicker.tsx"));

/**
 * A date-time range as two "YYYY-MM-DD HH:mm:ss" strings ("" = open end). The picker is fetched once the
 * page is idle, or at once when the pointer or the keyboard comes to the box, so it never competes with
 * the list the page opens on.
 */
export function DateRange(props: DateRangeProps) {
  const [wanted, setWanted] = useState(false);
  useEffect(() => {
    if (wanted) return;
    const idle = (globalThis as { requestIdleCallback?: (f: () => void, o?: { timeout: number }) => number })
      .requestIdleCallback;
    if (idle) {
      const id = idle(() => setWanted(true), { timeout: 1500 });
      return () => (globalThis as { cancelIdleCallback?: (id: number) => void }).cancelIdleCallback?.(id);
    }
    const id = setTimeout(() => setWanted(true), 100);
    return () => clearTimeout(id);
  }, [wanted]);
  const text = props.value[0] || props.value[1] ? `${props.value[0]} – ${props.value[1]}` : "";
  const placeholder = (
    <Input
      readOnly
      value={text}
      onFocus={() => setWanted(true)}
      onMouseEnter={() => setWanted(true)}
      data-testid="date-range-placeholder"
    />
  );
  if (!wanted) return placeholder;
  return (
    <Suspense fallback={placeholder}>
      <Picker {...props} />
    </Suspense>
  );
}
