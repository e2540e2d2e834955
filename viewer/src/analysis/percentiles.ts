// Latency percentiles under virtual speedups (docs/analysis.md §13): for each
// latency point whose profile has its requests' histograms, the median, p95
// and p99 of its requests' latency in the untreated program, and how much each
// line's virtual speedup changes them. Mirrors tools/analysis/percentiles.cpp
// step for step (same order of operations, so the numbers agree to rounding);
// the result has the shape of the `percentiles` array of `coz report --json`.
import { materialLineSpeedup, speedupStepsPerUnit, z95 } from "./constants";
import { latencyBucketHigh, latencyBucketLow } from "./latency_buckets";
import { compareStrings } from "./order";
import type { Experiment, LatencyHistogram } from "./profile";

/** The percentiles estimated: the median, p95, p99. */
export const percentileLevels = [0.5, 0.95, 0.99] as const;
export const percentileNames = ["p50", "p95", "p99"] as const;

/** One percentile of one cell (a line at one speedup, or at 50% read off its curve). */
export interface PercentileChange {
  latency_ns: number | null; // the percentile in the cell (null at "at 50%")
  change: number | null; // 1 - q(s) / q(0): positive = shorter
  low: number | null; // 95% interval of `change`
  high: number | null;
}

export interface PercentileCell {
  line_speedup: number;
  experiments: number;
  requests: number; // weighted (inclusion weights)
  levels: PercentileChange[]; // one per level
}

export interface LinePercentiles {
  line: string;
  /** At a 50% line speedup, from the curve (a line through the origin of log(q(s)/q(0)) against s). */
  at_half: PercentileChange[];
  curve: PercentileCell[]; // its speedups above 0, increasing
}

export interface PointPercentiles {
  name: string;
  requests: number; // measured, over every experiment
  baseline_experiments: number; // 0% experiments with requests
  baseline_requests: number; // weighted
  levels: number[];
  baseline_ns: Array<number | null>; // untreated percentiles (null with too few requests)
  design_effect: number[]; // how much requests of one experiment move together
  lines: LinePercentiles[]; // by p99's change at 50%, largest first; undefined last
}

/** A request longer than 3/4 of its experiment counts at most 4 times. */
const maxInclusionWeight = 4.0;
/** A cell estimates a percentile p only with this many requests beyond it (weighted): 2 / (1 - p) in all. */
const minRequestsBeyond = 2.0;

interface WeightedBucket {
  low: number;
  high: number;
  weight: number;
  weightSquared: number;
}

/** One experiment's requests at one point. */
interface ExperimentRequests {
  buckets: WeightedBucket[]; // increasing
  weight: number;
  weightSquared: number;
  requests: number; // as recorded
}

/** The inverse of the chance (d - v) / d that a request of virtual latency v falls wholly inside an experiment of effective duration d. */
function inclusionWeight(v: number, d: number): number {
  if (v >= d) return maxInclusionWeight;
  return Math.min(maxInclusionWeight, d / (d - v));
}

function weigh(h: LatencyHistogram, durationNs: number): ExperimentRequests {
  const r: ExperimentRequests = { buckets: [], weight: 0, weightSquared: 0, requests: 0 };
  const d = durationNs;
  for (const [bucket, n] of h.buckets) {
    const low = latencyBucketLow(bucket);
    const high = latencyBucketHigh(bucket);
    const w = inclusionWeight((low + high) / 2, d);
    const b: WeightedBucket = { low, high, weight: w * n, weightSquared: w * w * n };
    r.weight += b.weight;
    r.weightSquared += b.weightSquared;
    r.requests += n;
    r.buckets.push(b);
  }
  return r;
}

/** The experiments of one cell, merged into one distribution. */
class Cell {
  experiments: ExperimentRequests[] = [];
  private readonly byLow = new Map<number, WeightedBucket>();
  private sorted: WeightedBucket[] | null = null;
  weight = 0;
  weightSquared = 0;

  add(e: ExperimentRequests) {
    this.experiments.push(e);
    for (const b of e.buckets) {
      let m = this.byLow.get(b.low);
      if (!m) this.byLow.set(b.low, (m = { low: b.low, high: b.high, weight: 0, weightSquared: 0 }));
      m.high = b.high;
      m.weight += b.weight;
      m.weightSquared += b.weightSquared;
    }
    this.sorted = null;
    this.weight += e.weight;
    this.weightSquared += e.weightSquared;
  }

  /** The merged buckets by their low bound (std::map order). */
  private merged(): WeightedBucket[] {
    if (!this.sorted) this.sorted = [...this.byLow.values()].sort((a, b) => a.low - b.low);
    return this.sorted;
  }

  /** The latency below which a share p of the weight lies, linear inside its bucket; NaN without buckets. */
  quantile(p: number): number {
    const target = p * this.weight;
    let below = 0;
    const merged = this.merged();
    for (const b of merged) {
      if (below + b.weight >= target && b.weight > 0) return b.low + ((target - below) / b.weight) * (b.high - b.low);
      below += b.weight;
    }
    return merged.length === 0 ? NaN : merged[merged.length - 1].high;
  }

  estimates(p: number): boolean {
    return this.weight * (1 - p) >= minRequestsBeyond && this.experiments.length > 0;
  }
}

/** The weight of `e`'s requests below `q` (linear inside q's bucket). */
function weightBelow(e: ExperimentRequests, q: number): number {
  let below = 0;
  for (const b of e.buckets) {
    if (b.high <= q) {
      below += b.weight;
    } else {
      if (b.low < q) below += (b.weight * (q - b.low)) / (b.high - b.low);
      break;
    }
  }
  return below;
}

/** §13 design effect of percentile p: over every cell with two or more experiments, at least 1. */
function designEffect(cells: Cell[], p: number): number {
  let sum = 0;
  let terms = 0;
  let groups = 0;
  for (const c of cells) {
    if (c.experiments.length < 2 || !c.estimates(p)) continue;
    const q = c.quantile(p);
    let here = 0;
    for (const e of c.experiments) {
      if (e.weightSquared <= 0) continue;
      const off = weightBelow(e, q) - p * e.weight;
      sum += (off * off) / (p * (1 - p) * e.weightSquared);
      ++here;
    }
    if (here > 0) {
      terms += here;
      ++groups;
    }
  }
  if (terms <= groups) return 1.0;
  return Math.max(1.0, sum / (terms - groups));
}

/** The percentile p of a cell and the standard error of its logarithm (Woodruff); NaN with too few requests. */
function percentileWithLogSe(c: Cell, p: number, deff: number): [number, number] {
  if (!c.estimates(p)) return [NaN, NaN];
  const q = c.quantile(p);
  const varShare = (deff * p * (1 - p) * c.weightSquared) / (c.weight * c.weight);
  const spread = z95 * Math.sqrt(varShare);
  const qLow = c.quantile(Math.max(1e-9, p - spread));
  const qHigh = c.quantile(Math.min(1 - 1e-9, p + spread));
  if (!(q > 0) || !(qLow > 0) || !(qHigh > 0)) return [NaN, NaN];
  return [q, (Math.log(qHigh) - Math.log(qLow)) / (2 * z95)];
}

const finite = (v: number): number | null => (Number.isFinite(v) ? v : null);
const undefinedChange = (): PercentileChange => ({ latency_ns: null, change: null, low: null, high: null });

function changeFrom(logRatio: number, se: number): PercentileChange {
  const c = undefinedChange();
  c.change = finite(1 - Math.exp(logRatio));
  if (Number.isFinite(se)) {
    c.low = finite(1 - Math.exp(logRatio + z95 * se));
    c.high = finite(1 - Math.exp(logRatio - z95 * se));
  }
  return c;
}

// std::lround: half away from zero.
const stepOfSpeedup = (speedup: number) => Math.sign(speedup * speedupStepsPerUnit) * Math.round(Math.abs(speedup * speedupStepsPerUnit));

/** Every latency point with request histograms, by name (empty when none has any). */
export function analyzePercentiles(experiments: Experiment[]): PointPercentiles[] {
  const byPoint = new Map<string, Array<{ e: Experiment; requests: ExperimentRequests }>>();
  for (const e of experiments) {
    if (e.durationNs === 0) continue;
    for (const h of e.latencyHistograms) {
      let list = byPoint.get(h.name);
      if (!list) byPoint.set(h.name, (list = []));
      list.push({ e, requests: weigh(h, e.durationNs) });
    }
  }
  const out: PointPercentiles[] = [];
  for (const name of [...byPoint.keys()].sort(compareStrings)) {
    let requests = 0;
    const baseline = new Cell();
    const lines = new Map<string, Map<number, Cell>>(); // line -> speedup step -> cell
    for (const { e, requests: r } of byPoint.get(name)!) {
      requests += r.requests;
      const step = stepOfSpeedup(e.speedup);
      if (step === 0) {
        baseline.add(r);
      } else {
        let steps = lines.get(e.selected);
        if (!steps) lines.set(e.selected, (steps = new Map()));
        let cell = steps.get(step);
        if (!cell) steps.set(step, (cell = new Cell()));
        cell.add(r);
      }
    }
    // std::map order: lines by name (bytes), steps increasing.
    const lineOrder = [...lines.keys()].sort(compareStrings).map((line) => {
      const steps = lines.get(line)!;
      return { line, steps: [...steps.keys()].sort((a, b) => a - b).map((step) => ({ step, cell: steps.get(step)! })) };
    });
    const cells: Cell[] = [baseline];
    for (const { steps } of lineOrder) for (const { cell } of steps) cells.push(cell);

    const baselineNs: number[] = [];
    const baseLogSe: number[] = [];
    const deffs: number[] = [];
    percentileLevels.forEach((p, k) => {
      deffs[k] = designEffect(cells, p);
      const [q, se] = percentileWithLogSe(baseline, p, deffs[k]);
      baselineNs[k] = q;
      baseLogSe[k] = se;
    });

    const point: PointPercentiles = {
      name,
      requests,
      baseline_experiments: baseline.experiments.length,
      baseline_requests: baseline.weight,
      levels: [...percentileLevels],
      baseline_ns: baselineNs.map(finite),
      design_effect: deffs,
      lines: [],
    };
    for (const { line, steps } of lineOrder) {
      const lp: LinePercentiles = {
        line,
        at_half: percentileLevels.map(undefinedChange),
        curve: steps.map(({ step, cell }) => ({
          line_speedup: step / speedupStepsPerUnit,
          experiments: cell.experiments.length,
          requests: cell.weight,
          levels: percentileLevels.map(undefinedChange),
        })),
      };
      percentileLevels.forEach((p, k) => {
        // log(q(s)/q(0)) = beta * s, weighted by each cell's own precision;
        // its variance counts the shared baseline once (as §6).
        let sumWss = 0;
        let sumWsy = 0;
        const parts: Array<[number, number]> = []; // (w*s, own variance)
        steps.forEach(({ cell }, i) => {
          const pc = lp.curve[i];
          const [q, se] = percentileWithLogSe(cell, p, deffs[k]);
          pc.levels[k].latency_ns = finite(q);
          if (!Number.isFinite(q) || !Number.isFinite(baselineNs[k])) return;
          const logRatio = Math.log(q / baselineNs[k]);
          const c = changeFrom(logRatio, Math.hypot(se, baseLogSe[k]));
          pc.levels[k].change = c.change;
          pc.levels[k].low = c.low;
          pc.levels[k].high = c.high;
          if (!Number.isFinite(se) || se <= 0) return;
          const s = pc.line_speedup;
          const w = 1 / (se * se);
          sumWss += w * s * s;
          sumWsy += w * s * logRatio;
          parts.push([w * s, se * se]);
        });
        if (sumWss <= 0) return;
        const beta = sumWsy / sumWss;
        let own = 0;
        let shared = 0;
        for (const [ws, v] of parts) {
          const a = ws / sumWss;
          own += a * a * v;
          shared += a;
        }
        const seBeta = Math.sqrt(own + shared * shared * baseLogSe[k] * baseLogSe[k]);
        lp.at_half[k] = changeFrom(beta * materialLineSpeedup, seBeta * materialLineSpeedup);
      });
      point.lines.push(lp);
    }
    // By p99's change at 50%, largest first; undefined last (a stable sort, as the C++).
    const p99 = percentileLevels.length - 1;
    point.lines.sort((a, b) => {
      const x = a.at_half[p99].change;
      const y = b.at_half[p99].change;
      if ((x === null) !== (y === null)) return x === null ? 1 : -1;
      return x === null || y === null ? 0 : y - x;
    });
    out.push(point);
  }
  return out;
}
