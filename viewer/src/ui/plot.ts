// The causal plot of one line: program speedup vs line speedup, the 95%
// interval band, each experiment as a dot, the fitted slope; and, for a latency
// point with request histograms, the change of its percentiles vs line speedup.
// Hand-written SVG: a few hundred elements, no chart library needed.
import { CurvePoint, LineEffect, LinePercentiles, percentileNames } from "../analysis/analysis";
import { s } from "./dom";
import { count, pct } from "./format";

const W = 460;
const H = 230;
const M = { left: 64, right: 14, top: 12, bottom: 42 };
// The y range follows the estimates and their intervals (within ±100%); single
// experiments outside it are drawn at the edge, so one noisy run cannot flatten the plot.
const rangeLimit = 1.0;

function niceStep(span: number, target: number): number {
  const raw = span / target;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

// Deterministic jitter so overlapping experiments at one speedup stay visible.
const jitter = (i: number) => (((i * 2654435761) % 1000) / 1000 - 0.5) * 0.018;

/** The y range [lo, hi] and its tick step: the values within ±rangeLimit, at least 10% tall, a little beyond. */
function yRange(values: Array<number | null>): { lo: number; hi: number; step: number } {
  let lo = 0;
  let hi = 0;
  for (const v of values) {
    if (v === null || !Number.isFinite(v)) continue;
    lo = Math.min(lo, Math.max(v, -rangeLimit));
    hi = Math.max(hi, Math.min(v, rangeLimit));
  }
  if (hi - lo < 0.1) {
    const mid = (hi + lo) / 2;
    lo = Math.min(lo, mid - 0.05);
    hi = Math.max(hi, mid + 0.05);
  }
  const step = niceStep(hi - lo, 5);
  return { lo: Math.floor(lo / step - 0.15) * step, hi: Math.ceil(hi / step + 0.15) * step, step };
}

/** An empty plot: line speedup (0-100%) across, `yLabel` up, grid and ticks; x() and y() map values into it. */
function plotFrame(values: Array<number | null>, yLabel: string, ariaLabel: string, cls: string) {
  const { lo, hi, step } = yRange(values);
  const x = (v: number) => M.left + v * (W - M.left - M.right);
  const y = (v: number) => M.top + ((hi - Math.max(lo, Math.min(hi, v))) / (hi - lo)) * (H - M.top - M.bottom);

  const svg = s("svg", { class: cls, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": ariaLabel });

  // Grid and axes.
  const grid = s("g", { class: "grid" });
  for (let t = 0; t <= 1.0001; t += 0.25) {
    grid.append(s("line", { x1: x(t), x2: x(t), y1: M.top, y2: H - M.bottom }));
    grid.append(s("text", { x: x(t), y: H - M.bottom + 15, class: "tick", "text-anchor": "middle" }, `${Math.round(t * 100)}%`));
  }
  for (let v = lo; v <= hi + step / 2; v += step) {
    const vv = Math.abs(v) < step / 1e6 ? 0 : v;
    grid.append(s("line", { x1: M.left, x2: W - M.right, y1: y(vv), y2: y(vv), class: vv === 0 ? "zero" : "" }));
    grid.append(
      s("text", { x: M.left - 6, y: y(vv) + 4, class: "tick", "text-anchor": "end" }, vv === 0 ? "0%" : pct(vv, step < 0.01 ? 1 : 0)),
    );
  }
  svg.append(grid);
  svg.append(
    s("text", { x: (M.left + W - M.right) / 2, y: H - 6, class: "axis-label", "text-anchor": "middle" }, "Line speedup"),
    s("text", { x: 0, y: 0, class: "axis-label", "text-anchor": "middle", transform: `translate(13 ${(M.top + H - M.bottom) / 2}) rotate(-90)` }, yLabel),
  );
  return { svg, x, y, lo, hi };
}

export function renderPlot(e: LineEffect): SVGSVGElement {
  const measured = e.curve.filter((p) => p.line_speedup > 0);
  const own0 = e.curve.find((p) => p.line_speedup === 0);
  const values = e.curve.flatMap((p) => [p.program_speedup, p.low, p.high]);
  // Without intervals, let the experiments set the scale.
  if (!e.curve.some((p) => p.low !== null)) e.curve.forEach((p) => values.push(...p.raw));
  const { svg, x, y, lo, hi } = plotFrame(values, "Program speedup", `Program speedup vs line speedup for ${e.line}`, "curve-plot");

  // 95% band: from (0, 0) through each measured point's interval.
  const banded = measured.filter((p) => p.low !== null && p.high !== null);
  if (banded.length > 0) {
    const upper = [`${x(0)},${y(0)}`, ...banded.map((p) => `${x(p.line_speedup)},${y(p.high!)}`)];
    const lower = banded.map((p) => `${x(p.line_speedup)},${y(p.low!)}`).reverse();
    svg.append(s("polygon", { class: "band", points: [...upper, ...lower].join(" ") }));
  }

  // Fitted slope through the origin.
  if (e.slope !== null && measured.length > 0) {
    const end = measured[measured.length - 1].line_speedup;
    svg.append(s("line", { class: "slope", x1: x(0), y1: y(0), x2: x(end), y2: y(e.slope * end) }));
  }

  // Raw experiments.
  const raw = s("g", { class: "raw" });
  let i = 0;
  for (const p of e.curve) {
    for (const v of p.raw) {
      const clipped = v > hi || v < lo;
      raw.append(s("circle", { cx: x(p.line_speedup + jitter(++i)), cy: y(v), r: clipped ? 1.8 : 2.2, class: clipped ? "clipped" : "" }));
    }
  }
  svg.append(raw);

  // The estimate.
  if (measured.length > 0) {
    const d = [`M${x(0)},${y(0)}`, ...measured.map((p) => `L${x(p.line_speedup)},${y(p.program_speedup)}`)].join("");
    svg.append(s("path", { class: "estimate", d }));
  }
  const marks = s("g", { class: "marks" });
  const tip = (p: CurvePoint) =>
    `line ${Math.round(p.line_speedup * 100)}% faster → program ${pct(p.program_speedup)}` +
    (p.low !== null ? ` (95% interval ${pct(p.low)} … ${pct(p.high)})` : "") +
    `\n${p.experiments} experiment${p.experiments === 1 ? "" : "s"}, ${p.visits} visits`;
  for (const p of measured) {
    if (p.low !== null && p.high !== null) {
      marks.append(s("line", { class: "whisker", x1: x(p.line_speedup), x2: x(p.line_speedup), y1: y(p.low), y2: y(p.high) }));
    }
    marks.append(s("circle", { cx: x(p.line_speedup), cy: y(p.program_speedup), r: 3.8, class: "pt" }, s("title", {}, tip(p))));
  }
  if (own0) {
    marks.append(
      s(
        "circle",
        { cx: x(0), cy: y(own0.program_speedup), r: 3.8, class: "pt own0" },
        s("title", {}, `this line's own 0% runs vs the baseline: ${pct(own0.program_speedup)} (phase check)\n${own0.experiments} experiments`),
      ),
    );
  }
  svg.append(marks);
  return svg;
}

/** One curve of the percentile plot: a cell's change and its 95% interval at each measured line speedup. */
interface Series {
  name: string; // "mean", "p50", ...
  points: Array<{ s: number; change: number; low: number | null; high: number | null; tip: string }>;
}

/**
 * A latency point's request latency vs a line's speedup (docs/analysis.md §13):
 * the change of the mean (its program speedup, as in renderPlot) and of each
 * percentile, 1 - q(s) / q(0) (positive: shorter), with their 95% intervals as bars.
 */
export function renderPercentilePlot(e: LineEffect, lp: LinePercentiles): SVGSVGElement {
  const many = (n: number, what: string) => `${count(n)} ${what}${n === 1 ? "" : "s"}`;
  const series: Series[] = [
    {
      name: "mean",
      points: e.curve
        .filter((p) => p.line_speedup > 0)
        .map((p) => ({
          s: p.line_speedup,
          change: p.program_speedup,
          low: p.low,
          high: p.high,
          tip: `line ${Math.round(p.line_speedup * 100)}% faster → mean latency ${pct(p.program_speedup)}` + interval(p.low, p.high) + `\n${many(p.experiments, "experiment")}`,
        })),
    },
    ...percentileNames.map((name, k) => ({
      name,
      points: lp.curve.flatMap((c) => {
        const v = c.levels[k];
        if (v.change === null) return [];
        return [
          {
            s: c.line_speedup,
            change: v.change,
            low: v.low,
            high: v.high,
            tip: `line ${Math.round(c.line_speedup * 100)}% faster → ${name} ${pct(v.change)}` + interval(v.low, v.high) + `\n${many(c.experiments, "experiment")}, ${many(Math.round(c.requests), "request")} (weighted)`,
          },
        ];
      }),
    })),
  ];
  const values = series.flatMap((sr) => sr.points.flatMap((p) => [p.change, p.low, p.high]));
  const { svg, x, y } = plotFrame(values, "Latency change", `Change of the request latency's mean and percentiles vs line speedup for ${e.line}`, "curve-plot percentile-plot");
  series.forEach((sr, i) => {
    if (sr.points.length === 0) return;
    const g = s("g", { class: `series series-${sr.name}`, "data-series": sr.name });
    // Side by side at each speedup, so that the four intervals stay apart.
    const dx = (i - (series.length - 1) / 2) * 0.009;
    g.append(s("path", { class: "estimate", d: [`M${x(0)},${y(0)}`, ...sr.points.map((p) => `L${x(p.s + dx)},${y(p.change)}`)].join("") }));
    for (const p of sr.points) {
      if (p.low !== null && p.high !== null) g.append(s("line", { class: "whisker", x1: x(p.s + dx), x2: x(p.s + dx), y1: y(p.low), y2: y(p.high) }));
    }
    for (const p of sr.points) g.append(s("circle", { cx: x(p.s + dx), cy: y(p.change), r: 3.2, class: "pt" }, s("title", {}, p.tip)));
    svg.append(g);
  });
  return svg;
}

const interval = (low: number | null, high: number | null) => (low !== null && high !== null ? ` (95% interval ${pct(low)} … ${pct(high)})` : "");
