// The console's tables: as wide as their card and never wider. Each optional column names the table
// width it needs (`from`); on a narrower table (a 1280-px window, a phone) it steps out of the row and is
// shown in the row's details instead (the + at the row's start). Texts differ in length between
// languages, so after each layout the table checks that it fits: while it is wider than its card, the
// next optional column (widest `from` first) steps out too, and last the row actions fold into the menu.
// Row actions: the main ones as buttons, the others in a "⋯" menu; on a phone-sized table all in the menu.
import type React from "react";
import { useLayoutEffect, useRef, useState } from "react";
import { IconDown } from "@arco-design/web-react/icon";
import { Button, Descriptions, Dropdown, Menu, Modal, Popconfirm, Table } from "@arco-design/web-react";
import { IconMore } from "@arco-design/web-react/icon";
import { useTranslation } from "react-i18next";

export interface RColumn<T> {
  key: string;
  title: React.ReactNode;
  dataIndex?: string;
  render?: (value: any, row: T, index: number) => React.ReactNode;
  /** Table width (px) from which the column is in the row; narrower, it moves to the row's details. */
  from?: number;
  width?: number;
  align?: "left" | "right" | "center";
  className?: string;
}

export interface RowAction {
  key: string;
  label: string;
  onClick?: () => void;
  status?: "danger" | "warning" | "success";
  disabled?: boolean;
  loading?: boolean;
  /** Asks this question first (a pop-up confirmation on a button, a dialog from the menu). */
  confirm?: string;
  /** Shown as a button while the table is wide enough; otherwise (and without it) in the "⋯" menu. */
  main?: boolean;
  /** A choice of variants (e.g. the model to test with): a split button, or a sub-menu. */
  options?: Array<{ key: string; label: string }>;
  onOption?: (key: string) => void;
  testId?: string;
}

/** Below this table width every row action goes into the menu. */
export const COMPACT_ACTIONS_BELOW = 560;

/** The width of an element, followed as it changes; 0 where nothing is laid out (tests without a browser). */
export function useWidth<E extends HTMLElement>(estimate: () => number = () => 0): [React.RefObject<E | null>, number] {
  const ref = useRef<E | null>(null);
  const [width, setWidth] = useState(estimate);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    setWidth(el.getBoundingClientRect().width);
    if (typeof ResizeObserver === "undefined") return;
    const ro = new ResizeObserver(() => setWidth(el.getBoundingClientRect().width));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, width];
}

function runAction(a: RowAction) {
  if (!a.confirm) return a.onClick?.();
  Modal.confirm({
    title: a.confirm,
    onOk: () => a.onClick?.(),
    okButtonProps: a.status === "danger" ? { status: "danger" } : undefined,
  });
}

/** Buttons for the main actions, a "⋯" menu for the rest (all of them when `compact`). */
export function RowActions({ actions, compact }: { actions: RowAction[]; compact: boolean }) {
  const { t } = useTranslation();
  const shown = compact ? [] : actions.filter((a) => a.main);
  const rest = compact ? actions : actions.filter((a) => !a.main);
  const button = (a: RowAction) => {
    const props = {
      size: "mini" as const,
      status: a.status,
      disabled: a.disabled,
      loading: a.loading,
      "data-testid": a.testId,
    };
    if (a.options?.length) {
      return (
        <Dropdown.Button
          key={a.key}
          {...props}
          onClick={a.onClick}
          icon={<IconDown />}
          droplist={
            <Menu onClickMenuItem={(k) => a.onOption?.(k)}>
              {a.options.map((o) => (
                <Menu.Item key={o.key}>{o.label}</Menu.Item>
              ))}
            </Menu>
          }
        >
          {a.label}
        </Dropdown.Button>
      );
    }
    if (a.confirm) {
      return (
        <Popconfirm key={a.key} title={a.confirm} onOk={a.onClick}>
          <Button {...props}>{a.label}</Button>
        </Popconfirm>
      );
    }
    return (
      <Button key={a.key} {...props} onClick={a.onClick}>
        {a.label}
      </Button>
    );
  };
  const byKey = new Map(rest.map((a) => [a.key, a]));
  const menu = (
    <Menu
      onClickMenuItem={(key) => {
        const [own, option] = key.split("\u0000");
        const a = byKey.get(own);
        if (!a) return;
        if (option !== undefined) a.onOption?.(option);
        else runAction(a);
      }}
    >
      {rest.map((a) =>
        a.options?.length ? (
          <Menu.SubMenu key={a.key} title={a.label}>
            <Menu.Item key={a.key} disabled={a.disabled}>
              {a.label}
            </Menu.Item>
            {a.options.map((o) => (
              <Menu.Item key={`${a.key}\u0000${o.key}`} disabled={a.disabled}>
                {o.label}
              </Menu.Item>
            ))}
          </Menu.SubMenu>
        ) : (
          <Menu.Item
            key={a.key}
            disabled={a.disabled}
            className={a.status === "danger" ? "sy-menu-danger" : undefined}
            data-testid={a.testId}
          >
            {a.label}
          </Menu.Item>
        ),
      )}
    </Menu>
  );
  return (
    <div className="sy-row-actions">
      {shown.map(button)}
      {rest.length > 0 && (
        <Dropdown droplist={menu} trigger="click" position="br">
          <Button size="mini" icon={<IconMore />} aria-label={t("common.more")} data-testid="row-more" />
        </Dropdown>
      )}
    </div>
  );
}

export interface ResponsiveTableProps<T> {
  columns: Array<RColumn<T>>;
  data: T[];
  rowKey: string | ((row: T) => string | number);
  loading?: boolean;
  /** The row's actions; the column is left out without it. */
  actions?: (row: T) => RowAction[] | React.ReactNode;
  actionsTitle?: React.ReactNode;
  pagination?: any;
  rowSelection?: any;
  /** More details of a row, below those of the columns that stepped out. */
  expandedRowRender?: (row: T) => React.ReactNode;
  className?: string;
  noDataElement?: React.ReactNode;
  testId?: string;
}

/**
 * The width a table in a page card will have, read before it is laid out: the shell's content area less
 * its padding and the card's. Rendering the first time with (nearly) the right columns saves a whole
 * render of every row with every column (a quarter of a second on a busy machine for the usage log).
 */
function estimateTableWidth(): number {
  const content = globalThis.document?.querySelector(".sy-content");
  if (!content || !content.clientWidth) return 0;
  const padding = (el: Element) => {
    const cs = getComputedStyle(el);
    return (Number.parseFloat(cs.paddingLeft) || 0) + (Number.parseFloat(cs.paddingRight) || 0);
  };
  return Math.max(0, content.clientWidth - padding(content) - 32);
}

export function ResponsiveTable<T extends Record<string, any>>(props: ResponsiveTableProps<T>) {
  const { t } = useTranslation();
  const [ref, measured] = useWidth<HTMLDivElement>(estimateTableWidth);
  // Unmeasured (no layout engine): everything in the row.
  const width = measured || Infinity;
  // How many more columns stepped out because the table did not fit; counted again when the width changes.
  const [fit, setFit] = useState({ width: 0, dropped: 0 });
  const dropped = fit.width === width ? fit.dropped : 0;
  const byWidth = props.columns.filter((c) => !c.from || width >= c.from);
  const optional = byWidth.filter((c) => c.from).sort((a, b) => b.from! - a.from!);
  const out = new Set(optional.slice(0, dropped).map((c) => c.key));
  const compact = width < COMPACT_ACTIONS_BELOW || dropped > optional.length;
  const inRow = byWidth.filter((c) => !out.has(c.key));
  const stepped = props.columns.filter((c) => !inRow.includes(c));
  useLayoutEffect(() => {
    const box = ref.current;
    const table = box?.querySelector("table");
    if (!box || !table || !measured) return;
    if (table.getBoundingClientRect().width > box.getBoundingClientRect().width + 1 && dropped <= optional.length) {
      setFit({ width, dropped: dropped + 1 });
    }
  });
  const columns: any[] = inRow.map((c) => ({
    ...c,
    render: c.render ? (v: unknown, r: T, i: number) => c.render!(v, r, i) : undefined,
  }));
  if (props.actions) {
    columns.push({
      // On a phone the column is one "⋯" button: no title to widen it.
      key: "actions",
      title: compact ? "" : (props.actionsTitle ?? t("ops.actions")),
      className: "sy-actions-cell",
      render: (_: unknown, row: T) => {
        const a = props.actions!(row);
        return Array.isArray(a) ? <RowActions actions={a} compact={compact} /> : a;
      },
    });
  }
  const details = (row: T) => {
    const items = stepped
      .map((c) => {
        const value = c.dataIndex ? row[c.dataIndex] : undefined;
        return { label: c.title, value: c.render ? c.render(value, row, 0) : (value as React.ReactNode) };
      })
      .filter((d) => d.value !== "" && d.value !== null && d.value !== undefined);
    const extra = props.expandedRowRender?.(row);
    if (!items.length && !extra) return null;
    return (
      <div className="sy-row-details" data-testid="row-details">
        {items.length > 0 && (
          <Descriptions column={compact ? 1 : 2} size="small" data={items} layout="inline-horizontal" />
        )}
        {extra}
      </div>
    );
  };
  const expandable = stepped.length > 0 || !!props.expandedRowRender;
  return (
    <div
      ref={ref}
      className={`sy-rtable${compact ? " sy-rtable-compact" : ""}${props.className ? ` ${props.className}` : ""}`}
      data-testid={props.testId}
    >
      <Table
        rowKey={props.rowKey as any}
        loading={props.loading}
        columns={columns}
        data={props.data}
        // A phone-sized table pages with "‹ 2 / 5 ›" only: the total and the size picker need a wider row.
        pagination={
          props.pagination && compact
            ? { ...props.pagination, simple: true, sizeCanChange: false, showTotal: false }
            : props.pagination
        }
        rowSelection={props.rowSelection}
        noDataElement={props.noDataElement}
        expandedRowRender={expandable ? details : undefined}
        border={false}
      />
    </div>
  );
}
