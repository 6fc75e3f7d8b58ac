// A small stacked bar chart in plain SVG: one bar per time bucket, one coloured segment per series.
// The console ships no chart library, and these charts need nothing more than bars, axes and a legend.
import React from "react";

export interface Series { name: string; values: number[] }

const PALETTE = ["#165dff", "#0fc6c2", "#f7ba1e", "#f53f3f", "#722ed1", "#00b42a", "#ff7d00", "#eb0aa4", "#3491fa", "#86909c"];
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

export function StackedBars({ labels, series, format, height = 240, title }: {
  labels: string[]; series: Series[]; format: (n: number) => string; height?: number; title: string;
}) {
  const width = 720;
  const pad = { left: 64, right: 12, top: 12, bottom: 40 };
  const totals = labels.map((_, i) => series.reduce((s, x) => s + (x.values[i] ?? 0), 0));
  const { max, ticks } = axisTicks(Math.max(0, ...totals));
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const slot = labels.length ? plotW / labels.length : plotW;
  const barW = Math.max(2, Math.min(40, slot * 0.7));
  const y = (v: number) => pad.top + plotH - (v / max) * plotH;
  // Show at most ~8 x labels so they never overlap.
  const labelEvery = Math.max(1, Math.ceil(labels.length / 8));
  return (
    <figure style={{ margin: 0 }} data-testid={`chart-${title}`}>
      <svg viewBox={`0 0 ${width} ${height}`} width="100%" role="img" aria-label={title} style={{ maxWidth: 960, display: "block" }}>
        {ticks.map((v) => (
          <g key={v}>
            <line x1={pad.left} x2={width - pad.right} y1={y(v)} y2={y(v)} stroke="var(--color-border-2, #e5e6eb)" />
            <text x={pad.left - 6} y={y(v) + 4} textAnchor="end" fontSize="11" fill="var(--color-text-3, #86909c)">{format(v)}</text>
          </g>
        ))}
        {labels.map((label, i) => {
          let acc = 0;
          const x = pad.left + i * slot + (slot - barW) / 2;
          return (
            <g key={label}>
              {series.map((s, si) => {
                const v = s.values[i] ?? 0;
                if (!v) return null;
                const top = y(acc + v);
                const h = y(acc) - top;
                acc += v;
                return <rect key={s.name} x={x} y={top} width={barW} height={Math.max(h, 0.5)} fill={seriesColor(si)}><title>{`${s.name} · ${label}: ${format(v)}`}</title></rect>;
              })}
              {i % labelEvery === 0 && (
                <text x={x + barW / 2} y={height - pad.bottom + 16} textAnchor="middle" fontSize="11" fill="var(--color-text-3, #86909c)">{label}</text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption style={{ display: "flex", flexWrap: "wrap", gap: 12, fontSize: 12, marginTop: 4 }}>
        {series.map((s, i) => (
          <span key={s.name}><span style={{ display: "inline-block", width: 10, height: 10, background: seriesColor(i), marginRight: 4 }} />{s.name}</span>
        ))}
      </figcaption>
    </figure>
  );
}
