// Public model pricing (spec 001 §2 Pricing page, §9 price display).
import { useEffect, useMemo, useState } from "react";
import { Alert, Button, Input, Message, Space, Tag, Tooltip } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { ResponsiveTable, type RColumn } from "../../components/ResponsiveTable.tsx";
import { copyWithFallback } from "../../components/copy.tsx";
import { api } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import { DEFAULT_GROUP } from "../../../server/catalogue/index.ts";

export interface PricingEntry {
  model_name: string;
  quota_type: number;
  model_ratio: number;
  completion_ratio: number;
  enable_groups: string[];
  model_price: number;
}

/** Default order: available in the viewed group first, then per-token before per-request, then gpt* names first. */
export function sortPricing(list: PricingEntry[], group: string): PricingEntry[] {
  const rank = (e: PricingEntry) => [
    e.enable_groups.includes(group) ? 0 : 1,
    e.quota_type === 1 ? 1 : 0,
    e.model_name.toLowerCase().startsWith("gpt") ? 0 : 1,
  ];
  return [...list].sort((a, b) => {
    const ra = rank(a);
    const rb = rank(b);
    for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return ra[i] - rb[i];
    return a.model_name.localeCompare(b.model_name);
  });
}

/** Case-insensitive substring match on the model name. */
export const matchesModel = (name: string, query: string) => name.toLowerCase().includes(query.trim().toLowerCase());

/** Dollars per 1M tokens: prompt = ratio × 2 × group ratio; completion adds the completion ratio. Fixed = price × group ratio. */
export function priceText(
  e: PricingEntry,
  groupRatio: number,
): { prompt?: string; completion?: string; fixed?: string } {
  if (e.quota_type === 1) return { fixed: `$${(e.model_price * groupRatio).toFixed(4).replace(/\.?0+$/, "")}` };
  const prompt = e.model_ratio * 2 * groupRatio;
  const fmt = (n: number) => `$${Number(n.toFixed(4))}`;
  return { prompt: fmt(prompt), completion: fmt(prompt * e.completion_ratio) };
}

export default function PricingPage() {
  const { t } = useTranslation();
  const { user } = useApp();
  const [entries, setEntries] = useState<PricingEntry[]>([]);
  const [groupRatio, setGroupRatio] = useState<Record<string, number>>({});
  const [usable, setUsable] = useState<Record<string, string>>({});
  const [viewGroup, setViewGroup] = useState<string>(user?.group || DEFAULT_GROUP);
  const [search, setSearch] = useState("");
  const [selected, setSelected] = useState<string[]>([]);
  const [loading, setLoading] = useState(true);

  useEffect(() => {
    void api.get("/api/pricing").then((r) => {
      setLoading(false);
      if (!r.success) return Message.error(r.message);
      setEntries(Array.isArray(r.data) ? r.data : []);
      setGroupRatio((r.group_ratio as Record<string, number>) ?? {});
      setUsable((r.usable_group as Record<string, string>) ?? {});
    });
  }, []);

  const ratio = groupRatio[viewGroup] ?? 1;
  const shown = useMemo(
    () =>
      sortPricing(
        entries.filter((e) => matchesModel(e.model_name, search)),
        viewGroup,
      ),
    [entries, search, viewGroup],
  );

  // `from`: the table width (px) from which a column stays in the row; narrower, it moves to the row's details.
  const columns: Array<RColumn<PricingEntry>> = [
    {
      title: t("ops.pricing.available"),
      key: "available",
      render: (_: unknown, e: PricingEntry) =>
        e.enable_groups.includes(viewGroup) ? (
          <Tag color="green" data-testid="available">
            ✓
          </Tag>
        ) : (
          <Tooltip content={t("ops.pricing.notAvailable", { group: viewGroup })}>
            <Tag color="gray">✗</Tag>
          </Tooltip>
        ),
    },
    {
      key: "model",
      title: t("ops.pricing.model"),
      dataIndex: "model_name",
      render: (v: string) => (
        <span
          className="sy-clip sy-link-primary"
          title={v}
          style={{ maxWidth: 260 }}
          onClick={() => copyWithFallback(v)}
        >
          {v}
        </span>
      ),
    },
    {
      key: "billing",
      title: t("ops.pricing.billing"),
      dataIndex: "quota_type",
      from: 760,
      render: (v: number) => (
        <Tag color={v === 1 ? "orange" : "cyan"}>{t(v === 1 ? "ops.pricing.perRequest" : "ops.pricing.perToken")}</Tag>
      ),
    },
    {
      key: "groups",
      title: t("ops.pricing.groups"),
      dataIndex: "enable_groups",
      from: 900,
      render: (gs: string[]) => (
        <Space size={2} wrap>
          {gs.map((g) => (
            <Tag
              key={g}
              color={g === viewGroup ? "blue" : undefined}
              style={{ cursor: "pointer" }}
              onClick={() => setViewGroup(g)}
            >
              {g}
            </Tag>
          ))}
        </Space>
      ),
    },
    {
      title: t("ops.pricing.ratios"),
      key: "ratios",
      from: 640,
      render: (_: unknown, e: PricingEntry) =>
        e.quota_type === 1 ? (
          "-"
        ) : (
          <div className="sy-nowrap" style={{ fontSize: 12 }}>
            <div>
              {t("ops.pricing.modelRatio")}: {e.model_ratio}
            </div>
            <div>
              {t("ops.pricing.completionRatio")}: {e.completion_ratio}
            </div>
            <div>
              {t("ops.pricing.groupRatio")}: {ratio}
            </div>
          </div>
        ),
    },
    {
      title: t("ops.pricing.price"),
      key: "price",
      render: (_: unknown, e: PricingEntry) => {
        const p = priceText(e, ratio);
        return p.fixed ? (
          <span>
            {t("ops.pricing.fixedPrice")}: {p.fixed}
          </span>
        ) : (
          <div className="sy-nowrap" style={{ fontSize: 12 }}>
            <div>
              {t("ops.pricing.promptPrice")}: {p.prompt} / 1M
            </div>
            <div>
              {t("ops.pricing.completionPrice")}: {p.completion} / 1M
            </div>
          </div>
        );
      },
    },
  ];

  return (
    <Page title={t("ops.pricing.title")}>
      <Space direction="vertical" style={{ width: "100%", marginBottom: 12 }}>
        {user ? (
          <Alert
            type="success"
            content={t("ops.pricing.groupBanner", {
              group: user.group || DEFAULT_GROUP,
              ratio: groupRatio[user.group || DEFAULT_GROUP] ?? 1,
            })}
          />
        ) : (
          <Alert type="warning" content={t("ops.pricing.guestWarning")} data-testid="guest-warning" />
        )}
        <Alert type="info" content={t("ops.pricing.formula")} />
        {viewGroup !== (user?.group || DEFAULT_GROUP) && (
          <Alert
            type="info"
            content={t("ops.pricing.viewing", { group: viewGroup, desc: usable[viewGroup] ?? "", ratio })}
            action={
              <Button size="mini" onClick={() => setViewGroup(user?.group || DEFAULT_GROUP)}>
                {t("ops.pricing.backToMine")}
              </Button>
            }
          />
        )}
      </Space>
      <div className="sy-toolbar">
        <Input
          allowClear
          value={search}
          onChange={setSearch}
          placeholder={t("ops.pricing.search")}
          className="sy-w-240"
          data-testid="pricing-search"
        />
        <Button type="primary" disabled={selected.length === 0} onClick={() => copyWithFallback(selected.join(","))}>
          {t("ops.pricing.copySelected")}
        </Button>
      </div>
      <ResponsiveTable<PricingEntry>
        testId="pricing-table"
        rowKey="model_name"
        loading={loading}
        columns={columns}
        data={shown}
        rowSelection={{
          type: "checkbox",
          selectedRowKeys: selected,
          onChange: (keys: unknown) => setSelected(keys as string[]),
        }}
        pagination={{ pageSize: 20, sizeCanChange: true, sizeOptions: [10, 20, 50, 100], showTotal: true }}
      />
    </Page>
  );
}
