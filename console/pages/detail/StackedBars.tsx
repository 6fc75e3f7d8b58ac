// Stacked bar chart of the dashboard, drawn with recharts: one bar per time bucket, one coloured segment
// per series (model), whole-number axis ticks, a tooltip per bucket and a legend. Only the /detail page
// imports this file, so the chart library stays in that page's lazily loaded chunk.
import { useMemo } from "react";
import { Bar, BarChart, CartesianGrid, Legend, Tooltip, XAxis, YAxis } from "recharts";

export interface Series {
  name: string;
  values: number[];
}

const PALETTE = [
  "#165dff",
  "#0fc6c2",
  "#f7ba1e",
  "#f53f3f",
  "#722ed1",
  "#00b42a",
  "#ff7d00",
  "#eb0aa4",
  "#3491fa",
  "#86909c",
];
export const seriesColor = (i: number) => PALETTE[i % PALETTE.length];

/** Whole-number axis ticks at a 1-2-5 step, so small counts never show repeated labels. */
export function axisTicks(top: number): { max: number; ticks: number[] } {
  const raw = Math.max(1, top) / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw)!);
  const max = Math.max(step, Math.ceil(Math.max(1, top) / step) * step);
  const ticks: number[] = [];
  for (let v = 0; v <= max; v += step) ticks.push(v);
  return { max, ticks };
}

interface Bucket {
  label: string;
  values: number[];
}

export function StackedBars({
  labels,
  series,
  format,
  height = 260,
  title,
}: {
  labels: string[];
  series: Series[];
  format: (n: number) => string;
  height?: number;
  title: string;
}) {
  // One datum per bucket. Values are read by index through function data keys: model names may hold
  // dots ("gpt-4.1"), which recharts would read as nested paths if used as string keys.
  const data = useMemo<Bucket[]>(
    () => labels.map((label, i) => ({ label, values: series.map((s) => s.values[i] ?? 0) })),
    [labels, series],
  );
  const { max, ticks } = axisTicks(Math.max(0, ...data.map((d) => d.values.reduce((a, b) => a + b, 0))));
  return (
    <figure style={{ margin: 0 }} className="sy-chart" data-testid={`chart-${title}`} aria-label={title}>
      <BarChart
        responsive
        data={data}
        style={{ width: "100%", maxWidth: 1200, height }}
        margin={{ top: 8, right: 12, bottom: 0, left: 0 }}
      >
        <CartesianGrid vertical={false} strokeDasharray="3 3" />
        <XAxis dataKey="label" tickLine={false} interval="preserveStartEnd" minTickGap={16} fontSize={11} />
        <YAxis
          domain={[0, max]}
          ticks={ticks}
          allowDecimals={false}
          tickFormatter={(v: number) => format(v)}
          width={72}
          fontSize={11}
        />
        <Tooltip
          formatter={(v) => format(Number(v))}
          wrapperStyle={{ zIndex: 10 }}
          contentStyle={{
            background: "var(--color-bg-popup)",
            border: "1px solid var(--color-border-2)",
            borderRadius: 4,
            fontSize: 12,
          }}
          labelStyle={{ color: "var(--color-text-1)", marginBottom: 4 }}
        />
        <Legend wrapperStyle={{ fontSize: 12 }} />
        {series.map((s, i) => (
          <Bar
            key={s.name}
            name={s.name}
            dataKey={(d: Bucket) => d.values[i]}
            stackId="models"
            fill={seriesColor(i)}
            maxBarSize={40}
            animationDuration={300}
          />
        ))}
      </BarChart>
    </figure>
  );
}
