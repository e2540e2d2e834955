// The causal analysis, exactly as docs/analysis.md specifies it (the C++ in
// tools/analysis/ implements the same document; test/vectors/ checks both).
// Section numbers (§) refer to docs/analysis.md. The result has the shape of
// `coz report --json` (§11), snake_case keys and all; undefined numbers are null.
import { Experiment, Profile, SamplingTotals } from "./profile";
import { Callee, conventionalProfile, ConventionalProfile } from "./conventional";
import { contendedWaitingThreads, falseDiscoveryRate, fastHandOffsPerSecond, lineDispersionPriorDof, minSettleExperiments, settleHalfWidth, speedupStepsPerUnit, z95 } from "./constants";
import { compareStrings, kindRank } from "./order";
import { analyzePercentiles, PointPercentiles } from "./percentiles";
import { splitHalfStability, Stability } from "./stability";
import { anytimeHalfWidth, decide, ranksBefore } from "./verdicts";

export type PointKind = "throughput" | "latency";
export type BaselineMode = "local" | "pooled" | "line";
export type BaselineSource = "local" | "pooled" | "line" | "none";
export type Label = "unmeasured" | "insufficient-data" | "positive" | "negative" | "no-effect" | "undecided";

export * from "./constants";
export { anytimeHalfWidth, logEValue, ranksBefore } from "./verdicts";
export type { Stability } from "./stability";
export type { LinePercentiles, PercentileCell, PercentileChange, PointPercentiles } from "./percentiles";
export { percentileLevels, percentileNames } from "./percentiles";

export interface CurvePoint {
  line_speedup: number;
  program_speedup: number;
  se: number | null;
  low: number | null;
  high: number | null;
  experiments: number;
  visits: number; // X
  duration_ns: number;
  value_ns: number; // R
  bound: number | null; // §5.1: the most program speedup the cores allow at this line speedup
  bounded: boolean; // program_speedup was above the bound, and is the bound
  /** Viewer only: each experiment's own program speedup 1 - (y/x)/R0 (x > 0), for the raw points. */
  raw: number[];
}

/** Why a line's label was withheld for good: its point's cores were contended (§5.1), or its hand-offs fast and the label "no effect" (§5.2). */
export type Withheld = "cores-contended" | "fast-hand-offs";

export interface LineEffect {
  line: string;
  point: string;
  kind: PointKind;
  label: Label;
  impact: number;
  impact_se: number | null;
  impact_low: number | null; // the 95% confidence sequence: valid at every look
  impact_high: number | null;
  slope: number | null;
  slope_se: number | null;
  slope_low: number | null;
  slope_high: number | null;
  max_effect: number;
  experiments: number;
  experiments_needed: number | null;
  measured_experiments: number; // experiments of its curve points at s > 0
  untreated_experiments: number; // at s > 0 without a sample in the line: no delay (§2)
  p_value: number | null; // anytime-valid (1 / e-value), of the impact; null when not tested (§7)
  adjusted_low: number | null; // a discovery's interval, widened for the false discovery rate; null otherwise
  adjusted_high: number | null;
  withheld: Withheld | null; // why an undecided label is for good (§5.1, §5.2)
  samples: number;
  sample_share: number;
  function: string;
  function_unit: boolean; // §9: the unit of `function` (coz run --granularity function), not a line
  callee: Callee | null; // where its stack samples mostly continue; null without callee frames
  measured: boolean;
  baseline: BaselineSource;
  baseline_ns: number | null;
  cpu_share: number | null; // §5.1: the line's share of the program's CPU time
  dispersion: number | null; // §3: the φ its intervals use: its point's, or more; null without one
  curve: CurvePoint[];
}

export interface PointSummary {
  name: string;
  kind: PointKind;
  experiments: number;
  dispersion: number | null;
  dispersion_dof: number;
  baseline_ns: number | null;
  baseline_experiments: number;
  baseline_visits: number;
  tested: number; // effects with an interval: the false discovery family
  discoveries: number; // effects labelled positive or negative
  adjusted_level: number | null; // discoveries * α / tested: the level of the discoveries' intervals; null without discoveries
  cores: number | null; // §5.1: over the 0% experiments with core figures
  cores_busy: number | null;
  waiting_for_core: number | null;
  contended: boolean; // threads waited for a core: no confident label
  hand_offs_per_second: number | null; // §5.2: over the 0% experiments with a switch count
  fast_hand_offs: boolean; // at least fastHandOffsPerSecond: no "no effect"
}

/** The `sampling` totals as the JSON has them; the two times are null when no record had them. */
export interface SamplingSummary {
  processes: number;
  samples: number;
  in_scope: number;
  lost: number;
  attributed_ns: number | null; // Σ in-scope × period
  cpu_time_ns: number | null; // Σ the processes' CPU time
  steal_ns: number; // Σ the machine's steal time during the processes' runs (0 when none was recorded)
  machine_ns: number; // Σ their wall time × online CPUs, over the same records
}

export interface Warning {
  file: string;
  line: number;
  message: string;
}

export interface Analysis {
  format: "coz-analysis";
  version: 1;
  settings: {
    confidence: number;
    z: number;
    settle_half_width: number;
    speedup_step: number;
    baseline: BaselineMode;
    point: string;
    min_experiments: number;
    false_discovery_rate: number;
    min_settle_experiments: number;
  };
  experiments: number;
  runtime_ns: number;
  experiments_stopped: string[]; // why experiments stopped before a process ended ("settled", "max-time"), one per record
  total_samples: number;
  sampling: SamplingSummary | null; // from `sampling` records; null in older files
  points: PointSummary[];
  effects: LineEffect[];
  /** §13: latency points with request histograms; absent when none has any (as in the C++ JSON). */
  percentiles?: PointPercentiles[];
  profile: ConventionalProfile;
  stability: Stability[]; // §8 split halves; points order; points with measured effects only
  warnings: Warning[];
}

export interface AnalysisOptions {
  baseline?: BaselineMode;
  point?: string;
  minExperiments?: number;
}

/** Seconds of run time per experiment (runtime / experiments): the pace at which more experiments would come; null when unknown. */
export function secondsPerExperiment(a: Analysis): number | null {
  if (a.experiments === 0 || a.runtime_ns === 0) return null;
  return a.runtime_ns / 1e9 / a.experiments;
}

/** Coverage (§1): the share of the program's CPU time that became samples attributed to a line; null when unknown. */
export function samplingCoverage(s: SamplingSummary | null): number | null {
  if (!s || s.attributed_ns === null || s.cpu_time_ns === null || !(s.cpu_time_ns > 0)) return null;
  return s.attributed_ns / s.cpu_time_ns;
}

/** The share of the machine's CPU time a hypervisor took during the run (steal time); 0 when none was recorded. */
export function stealShare(s: SamplingSummary | null): number {
  return s && s.machine_ns > 0 ? s.steal_ns / s.machine_ns : 0;
}

function samplingSummary(t: SamplingTotals): SamplingSummary | null {
  if (t.processes === 0) return null;
  const timed = t.timed > 0;
  return {
    processes: t.processes,
    samples: t.samples,
    in_scope: t.in_scope,
    lost: t.lost,
    attributed_ns: timed ? t.attributed_ns : null,
    cpu_time_ns: timed ? t.cpu_time_ns : null,
    steal_ns: t.steal_ns,
    machine_ns: t.machine_ns,
  };
}

// std::lround: half away from zero.
const lround = (x: number) => Math.sign(x) * Math.round(Math.abs(x));

/** One observation as read (§2), before the local baseline adjusts its y (§4). */
interface Reading {
  line: string;
  bucket: number;
  x: number;
  y: number;
  durationNs: number;
  untreated: boolean;
  experiment: Experiment; // §5.1: its core figures
}

interface Obs {
  x: number;
  y: number; // y' with the local baseline (§4), else y
  cell: Cell;
  near: readonly number[]; // §4 local: N(i), positions in PointData.observations of bucket-0 observations
  xLoc: number; // §4 local: X_i^loc = Σ x over N(i)
}

class Cell {
  n = 0;
  X = 0;
  Y = 0;
  durationNs = 0;
  untreated = 0; // §2: observations at s > 0 without a sample in the line (no delay)
  obs: Obs[] = [];
  constructor(readonly bucket: number) {}
  /** R = Y / X, or null without an estimate. */
  get R(): number | null {
    return this.X > 0 ? this.Y / this.X : null;
  }
}

interface PointData {
  name: string;
  kind: PointKind;
  observations: Obs[]; // profile order
  cells: Cell[];
  lines: Map<string, Map<number, Cell>>; // line -> bucket -> cell, in first-seen order
  base: { n: number; X: number; Y: number }; // §4: the pool, of the observations' own y
  zeros: number[]; // §4: B, the positions of the bucket-0 observations
  local: boolean; // §4: y adjusted by the local baseline
  readings: Reading[]; // as read, profile order
}

const localNeighbours = 8; // K of §4

/** §4 local: N(i), the K positions of `zeros` (increasing) nearest to i, i itself excluded, the earlier first at equal distance; in increasing order. */
function neighbourhood(zeros: number[], i: number): number[] {
  // The nearest positions are a run of `zeros` around i: widen it one step at a time.
  let hi = 0; // the first of `zeros` at or after i
  for (let end = zeros.length; hi < end; ) {
    const mid = (hi + end) >> 1;
    if (zeros[mid] < i) hi = mid + 1;
    else end = mid;
  }
  let lo = hi - 1; // the last position before i
  if (hi < zeros.length && zeros[hi] === i) ++hi;
  for (let taken = 0; taken < localNeighbours && (lo >= 0 || hi < zeros.length); ++taken) {
    if (hi >= zeros.length || (lo >= 0 && i - zeros[lo] <= zeros[hi] - i)) --lo;
    else ++hi;
  }
  return zeros.slice(lo + 1, hi).filter((j) => j !== i);
}

/**
 * §4 local: each observation compared with the 0% experiments taken just before and
 * after it, so that a drift of the program's speed over the run cancels: y'_i = y_i *
 * (R0 / R_i^loc), with N(i) and X_i^loc for the variance. Neighbours without a usable
 * rate fall back to the whole pool (N(i) = B, y unchanged).
 */
function localBaseline(readings: Reading[], zeros: number[], X0: number, R0: number) {
  return readings.map((o, i) => {
    const near = neighbourhood(zeros, i);
    let X = 0;
    let Y = 0;
    for (const j of near) {
      X += readings[j].x;
      Y += readings[j].y;
    }
    if (near.length === 0 || !(X > 0) || !(Y > 0)) return { y: o.y, near: zeros, xLoc: X0 };
    return { y: o.y * (R0 / (Y / X)), near, xLoc: X };
  });
}

/** §2, §4: a point's observations (profile order), its pool and its cells (first-seen order); y' with the local baseline. */
function pointData(name: string, kind: PointKind, readings: Reading[], mode: BaselineMode): PointData {
  const p: PointData = { name, kind, observations: [], cells: [], lines: new Map(), base: { n: 0, X: 0, Y: 0 }, zeros: [], local: false, readings };
  readings.forEach((o, i) => {
    if (o.bucket !== 0) return;
    ++p.base.n;
    p.base.X += o.x;
    p.base.Y += o.y;
    p.zeros.push(i);
  });
  const R0 = p.base.Y / p.base.X;
  // Without a usable pool nothing is compared, and nothing is adjusted.
  const local = mode === "local" && p.base.X > 0 && R0 > 0 ? localBaseline(readings, p.zeros, p.base.X, R0) : null;
  p.local = local !== null;
  readings.forEach((o, i) => {
    let byBucket = p.lines.get(o.line);
    if (!byBucket) p.lines.set(o.line, (byBucket = new Map()));
    let cell = byBucket.get(o.bucket);
    if (!cell) {
      byBucket.set(o.bucket, (cell = new Cell(o.bucket)));
      p.cells.push(cell);
    }
    const obs: Obs = { x: o.x, cell, ...(local ? local[i] : { y: o.y, near: p.zeros, xLoc: p.base.X }) };
    ++cell.n;
    cell.X += obs.x;
    cell.Y += obs.y;
    cell.durationNs += o.durationNs;
    if (o.untreated) ++cell.untreated;
    cell.obs.push(obs);
    p.observations.push(obs);
  });
  return p;
}

/** §4 local: G_c(j) = Σ u_i / X_i^loc over the cell's observations i with j ∈ N(i) (profile order), u_i = y'_i / Y'_c; j -> G_c(j). */
function localWeights(c: Cell): Map<number, number> {
  const G = new Map<number, number>();
  for (const o of c.obs) {
    const w = (c.Y !== 0 ? o.y / c.Y : 0) / o.xLoc;
    for (const j of o.near) G.set(j, (G.get(j) ?? 0) + w);
  }
  return G;
}

/** §4 local: Σ_j x_j g_j², over the positions j of `g` in increasing order (a j absent from `g` adds 0). */
function weightedSquares(g: Map<number, number>, observations: Obs[]): number {
  let v = 0;
  for (const j of [...g.keys()].sort((a, b) => a - b)) {
    const w = g.get(j)!;
    v += observations[j].x * w * w;
  }
  return v;
}

/** §3: Pearson's sums over one line's own measured observations (s > 0). */
interface LineSums {
  sum: number; // Σ t_i, profile order
  terms: number;
  buckets: Set<number>; // the distinct buckets among them
}

/**
 * §3: Pearson's statistic over every cell of the point; null when N <= K. With the local
 * baseline (§4) a term is divided by 1 + m / X_i^loc (latency: 1 + x / X_i^loc): y' carries
 * its neighbours' noise as well as its own, and the variance counts the neighbours apart.
 * Also each line's sums over its own observations at s > 0, for lineDispersion().
 */
function dispersion(p: PointData): { phi: number | null; dof: number; lines: Map<string, LineSums> } {
  let sum = 0;
  let N = 0;
  const withTerm = new Set<Cell>();
  const lines = new Map<string, LineSums>();
  p.observations.forEach((o, i) => {
    const R = o.cell.R;
    if (R === null || !(R > 0)) return;
    let t: number;
    if (p.kind === "throughput") {
      const m = o.y / R;
      if (!(m > 0)) return;
      t = ((o.x - m) * (o.x - m)) / m;
      if (p.local) t /= 1 + m / o.xLoc;
    } else {
      if (!(o.x > 0)) return;
      t = ((o.y - R * o.x) * (o.y - R * o.x)) / (R * R * o.x);
      if (p.local) t /= 1 + o.x / o.xLoc;
    }
    sum += t;
    ++N;
    withTerm.add(o.cell);
    if (o.cell.bucket > 0) {
      const line = p.readings[i].line;
      let l = lines.get(line);
      if (!l) lines.set(line, (l = { sum: 0, terms: 0, buckets: new Set() }));
      l.sum += t;
      ++l.terms;
      l.buckets.add(o.cell.bucket);
    }
  });
  const K = withTerm.size;
  return { phi: N > K ? sum / (N - K) : null, dof: N - K, lines };
}

/**
 * §3: the dispersion a line's intervals use: the point's, unless the line's own measured
 * experiments spread more; theirs is shrunk toward the point's as if the point's were
 * lineDispersionPriorDof more degrees of freedom, so that one wild experiment of a thin
 * line widens its interval without deciding it.
 */
function lineDispersion(phi: number | null, l: LineSums | undefined): number | null {
  if (phi === null) return null;
  if (!l) return phi;
  const dof = l.terms - l.buckets.size;
  if (dof <= 0) return phi;
  const own = (l.sum + lineDispersionPriorDof * phi) / (dof + lineDispersionPriorDof);
  return phi < own ? own : phi; // std::max
}

/**
 * §6: L = Σ a_k Δ_k and its interval, Var(L) = φ (Σ a² r² / X + (Σ a r)² / X0). With the
 * local baseline (§4, G = each measured point's G_k) the shared term is Σ_j x_j h_j²,
 * h_j = Σ_k a_k r_k G_k(j): points whose neighbours overlap share their errors.
 */
function linear(a: number[], m: CurvePoint[], r: number[], phi: number | null, X0: number, G: Map<number, number>[] | null, observations: Obs[]) {
  let L = 0;
  let A = 0;
  let B = 0;
  for (let k = 0; k < m.length; ++k) {
    L += a[k] * m[k].program_speedup;
    A += (a[k] * a[k] * r[k] * r[k]) / m[k].visits;
    B += a[k] * r[k];
  }
  if (phi === null) return { value: L, se: null, low: null, high: null };
  let shared: number;
  if (G === null) shared = (B * B) / X0;
  else {
    const h = new Map<number, number>(); // accumulated in increasing k for every j
    G.forEach((g, k) => {
      const w = a[k] * r[k];
      for (const [j, v] of g) h.set(j, (h.get(j) ?? 0) + w * v);
    });
    shared = weightedSquares(h, observations);
  }
  const se = Math.sqrt(phi * (A + shared));
  return { value: L, se, low: L - z95 * se, high: L + z95 * se };
}

/** §5.1: the cores of a point, over its 0% observations with core figures. */
function summarizeCores(p: PointData, summary: PointSummary) {
  let weight = 0;
  let busy = 0;
  let waiting = 0;
  let cores = 0;
  for (const i of p.zeros) {
    const e = p.readings[i].experiment;
    if (e.cores === 0) continue;
    const w = e.durationNs;
    cores = Math.max(cores, e.cores);
    weight += w;
    busy += w * e.coresBusy;
    waiting += w * e.waitingForCore;
  }
  if (cores === 0 || weight === 0) return;
  summary.cores = cores;
  summary.cores_busy = busy / weight;
  summary.waiting_for_core = waiting / weight;
  summary.contended = summary.waiting_for_core >= contendedWaitingThreads;
}

/** §5.1: the most program speedup the cores allow at line speedup s for a line of CPU share f, in a contended point; null elsewhere, when unknown or for latency. */
function coreBound(summary: PointSummary, s: number, f: number | null): number | null {
  if (summary.kind !== "throughput" || !summary.contended || summary.cores === null || summary.cores_busy === null || f === null)
    return null;
  return 1 - (summary.cores_busy / summary.cores) * (1 - s * f);
}

/** §5.2: the program's hand-offs, over the same 0% observations (a speedup's pauses make threads wait for each other). */
function summarizeHandOffs(p: PointData, summary: PointSummary) {
  let switches = 0;
  let seconds = 0;
  for (const i of p.zeros) {
    const e = p.readings[i].experiment;
    if (e.voluntarySwitches === null) continue;
    switches += e.voluntarySwitches;
    seconds += e.durationNs / 1e9;
  }
  if (seconds <= 0) return;
  summary.hand_offs_per_second = switches / seconds;
  summary.fast_hand_offs = summary.hand_offs_per_second >= fastHandOffsPerSecond;
}

function withhold(e: LineEffect, why: Withheld) {
  e.label = "undecided";
  e.withheld = why;
  e.experiments_needed = null;
}

/** §5.1: in a contended point no line gets a confident label. §5.2: where hand-offs are fast, no line is "no effect" (its statistics stay). */
function withholdLabels(effects: LineEffect[], summary: PointSummary) {
  if (summary.contended) {
    for (const e of effects) {
      if (e.label !== "positive" && e.label !== "negative" && e.label !== "no-effect" && e.label !== "undecided") continue;
      withhold(e, "cores-contended");
      e.adjusted_low = e.adjusted_high = null;
    }
    summary.discoveries = 0;
    summary.adjusted_level = null;
  } else if (summary.fast_hand_offs) {
    for (const e of effects) if (e.label === "no-effect") withhold(e, "fast-hand-offs");
  }
}

function makeEffect(
  p: PointData,
  line: string,
  cells: Map<number, Cell>,
  phi: number | null,
  mode: BaselineMode,
  summary: PointSummary,
  cpuShare: number | null,
): LineEffect {
  const buckets = [...cells.keys()].sort((x, y) => x - y);
  const e: LineEffect = {
    line,
    point: p.name,
    kind: p.kind,
    label: "unmeasured",
    impact: 0,
    impact_se: null,
    impact_low: null,
    impact_high: null,
    slope: null,
    slope_se: null,
    slope_low: null,
    slope_high: null,
    max_effect: 0,
    experiments: buckets.reduce((n, b) => n + cells.get(b)!.n, 0),
    experiments_needed: null,
    measured_experiments: 0,
    untreated_experiments: buckets.reduce((n, b) => n + cells.get(b)!.untreated, 0),
    p_value: null,
    adjusted_low: null,
    adjusted_high: null,
    withheld: null,
    samples: 0,
    sample_share: 0,
    function: "",
    function_unit: false,
    callee: null,
    measured: false,
    baseline: "none",
    baseline_ns: null,
    cpu_share: cpuShare,
    dispersion: null,
    curve: [],
  };

  // §4: the pool (the local baseline compares with it too, its y being y'), or with
  // --baseline line the line's own usable 0% cell.
  let R0: number | null = null;
  let X0 = 0;
  const own = cells.get(0);
  if (mode === "line" && own && own.X > 0 && own.R! > 0) {
    R0 = own.R!;
    X0 = own.X;
    e.baseline = "line";
  } else if (p.base.X > 0 && p.base.Y / p.base.X > 0) {
    R0 = p.base.Y / p.base.X;
    X0 = p.base.X;
    e.baseline = mode === "local" ? "local" : "pooled";
  }
  if (R0 === null) return e; // unmeasured
  e.baseline_ns = R0;
  e.dispersion = phi;

  // §5: the curve.
  const measured: CurvePoint[] = [];
  let untreatedMeasured = 0; // of measured_experiments
  const ratios: number[] = [];
  const weights: Map<number, number>[] = []; // §4 local: G_k of each measured point
  for (const b of buckets) {
    const c = cells.get(b)!;
    const R = c.R;
    if (R === null) continue;
    let r = R / R0;
    const point: CurvePoint = {
      line_speedup: b / speedupStepsPerUnit,
      program_speedup: 1 - r,
      se: null,
      low: null,
      high: null,
      experiments: c.n,
      visits: c.X,
      duration_ns: c.durationNs,
      value_ns: R,
      bound: null,
      bounded: false,
      raw: c.obs.filter((o) => o.x > 0).map((o) => 1 - o.y / o.x / R0!),
    };
    if (b > 0) {
      const g = e.baseline === "local" ? localWeights(c) : null;
      point.bound = coreBound(summary, point.line_speedup, cpuShare);
      if (point.bound !== null && point.program_speedup > point.bound) {
        point.program_speedup = point.bound;
        r = 1 - point.bound;
        point.bounded = true;
      }
      if (phi !== null) {
        // The baseline's relative variance over φ: 1 / X0, or the neighbours' V_c (§4).
        const baseVar = g === null ? 1 / X0 : weightedSquares(g, p.observations);
        const se = r * Math.sqrt(phi * (1 / c.X + baseVar));
        point.se = se;
        point.low = point.program_speedup - z95 * se;
        point.high = point.program_speedup + z95 * se;
        if (point.bound !== null) point.high = point.bound;
      }
      measured.push(point);
      ratios.push(r);
      if (g) weights.push(g);
      e.measured_experiments += c.n;
      untreatedMeasured += c.untreated;
    }
    e.curve.push(point);
  }
  // Every speedup of the line inserted no delay: nothing was tried, and its
  // points at s > 0 are baselines by another name (§2).
  if (measured.length > 0 && untreatedMeasured === e.measured_experiments) {
    measured.length = 0;
    weights.length = 0;
    e.measured_experiments = 0;
    e.curve = e.curve.filter((q) => q.line_speedup === 0);
  }

  const m = measured.length;
  const G = e.baseline === "local" ? weights : null; // §4: the shared term of §6 from the neighbours
  if (m > 0) {
    e.measured = true;
    e.max_effect = Math.max(...measured.map((q) => q.program_speedup));
    // §6 impact: trapezoid from (0, 0), as coefficients.
    const s = (k: number) => (k === 0 ? 0 : measured[k - 1].line_speedup); // s_0 = 0, s_k 1-based
    const sm = s(m);
    const aImpact = measured.map((_, i) => {
      const k = i + 1;
      return k < m ? (s(k + 1) - s(k - 1)) / (2 * sm) : (s(m) - s(m - 1)) / (2 * sm);
    });
    const impact = linear(aImpact, measured, ratios, phi, X0, G, p.observations);
    e.impact = impact.value;
    e.impact_se = impact.se;
    // The 95% confidence sequence: the user and the monitor look many times.
    const half = anytimeHalfWidth(impact.se, falseDiscoveryRate);
    e.impact_low = half === null ? null : impact.value - half;
    e.impact_high = half === null ? null : impact.value + half;
    // §6 slope: weighted least squares through the origin.
    let D = 0;
    for (const q of measured) D += q.visits * q.line_speedup * q.line_speedup;
    const aSlope = measured.map((q) => (q.visits * q.line_speedup) / D);
    const slope = linear(aSlope, measured, ratios, phi, X0, G, p.observations);
    e.slope = slope.value;
    e.slope_se = slope.se;
    e.slope_low = slope.low;
    e.slope_high = slope.high;
  }
  return e; // labelled by decide(), over the whole point
}

/** §2-§8 over some experiments: every point's summary, and the effects the options keep, ranked. */
/** Whether the point `name` is the one asked for as `wanted`: the same name, or without the " [PROGRAM]" of `coz run --system`. */
export function pointIs(name: string, wanted: string): boolean {
  return name === wanted || (name.length > wanted.length + 3 && name.startsWith(wanted + " [") && name.endsWith("]"));
}

type CpuShares = (line: string) => number | null;

function causalEffects(experiments: Experiment[], mode: BaselineMode, only: string, minExperiments: number, cpuShares: CpuShares) {
  // §2: observations per point key, in profile order.
  const readings = new Map<string, { name: string; kind: PointKind; readings: Reading[] }>();
  const observe = (name: string, kind: PointKind, e: Experiment, bucket: number, x: number, y: number, untreated: boolean) => {
    const key = `${kindRank(kind)}\u0000${name}`;
    let r = readings.get(key);
    if (!r) readings.set(key, (r = { name, kind, readings: [] }));
    r.readings.push({ line: e.selected, bucket, x, y, durationNs: e.durationNs, untreated, experiment: e });
  };
  for (const e of experiments) {
    const bucket = lround(e.speedup * speedupStepsPerUnit);
    const untreated = bucket > 0 && e.selectedSamples === 0;
    for (const t of e.throughput) observe(t.name, "throughput", e, bucket, t.delta, e.durationNs, untreated);
    for (const l of e.latency) {
      if (!(e.durationNs > 0)) continue;
      const L = l.meanInFlight >= 0 ? l.meanInFlight : l.difference;
      observe(l.name, "latency", e, bucket, l.arrivals, e.durationNs * L, untreated);
    }
  }
  // Then the baseline (§4) and the cells.
  const points = [...readings.values()].map((r) => pointData(r.name, r.kind, r.readings, mode));

  const summaries: PointSummary[] = [];
  const effects: LineEffect[] = [];
  for (const p of points) {
    const { phi, dof, lines } = dispersion(p);
    const baseUsable = p.base.X > 0 && p.base.Y / p.base.X > 0;
    const summary: PointSummary = {
      name: p.name,
      kind: p.kind,
      experiments: p.observations.length,
      dispersion: phi,
      dispersion_dof: dof,
      baseline_ns: baseUsable ? p.base.Y / p.base.X : null,
      baseline_experiments: p.base.n,
      baseline_visits: p.base.X,
      tested: 0,
      discoveries: 0,
      adjusted_level: null,
      cores: null,
      cores_busy: null,
      waiting_for_core: null,
      contended: false,
      hand_offs_per_second: null,
      fast_hand_offs: false,
    };
    summarizeCores(p, summary);
    summarizeHandOffs(p, summary);
    // Verdicts are over every line of the point, whatever the filters keep.
    const all = [...p.lines].map(([line, cells]) => makeEffect(p, line, cells, lineDispersion(phi, lines.get(line)), mode, summary, cpuShares(line)));
    decide(all, summary);
    withholdLabels(all, summary);
    summaries.push(summary);
    if (only !== "" && !pointIs(p.name, only)) continue;
    for (const e of all) if (e.experiments >= minExperiments) effects.push(e);
  }
  summaries.sort((a, b) => compareStrings(a.name, b.name) || kindRank(a.kind) - kindRank(b.kind));
  effects.sort(ranksBefore);
  return { points: summaries, effects };
}

/** §9: for FILE:FUNCTION without a samples record, the longest FUNCTION some location's function= names; "" otherwise. */
export function functionOfUnit(profile: Profile, name: string): string {
  let best = "";
  for (const fn of profile.functions.values()) {
    if (fn.length <= best.length || name.length <= fn.length) continue;
    if (name.endsWith(fn) && name[name.length - fn.length - 1] === ":") best = fn;
  }
  return best;
}

/** §9: a line's samples, or for a function unit (coz run --granularity function) those of every line of the function. */
function lineSamples(profile: Profile, line: string): { samples: number; function: string; unit: boolean } {
  if (profile.samples.has(line)) return { samples: profile.samples.get(line)!, function: profile.functions.get(line) ?? "", unit: false };
  const unit = functionOfUnit(profile, line);
  if (unit === "") return { samples: 0, function: profile.functions.get(line) ?? "", unit: false };
  let samples = 0;
  for (const [location, fn] of profile.functions) if (fn === unit) samples += profile.samples.get(location) ?? 0;
  return { samples, function: unit, unit: true };
}

export function analyze(profile: Profile, options: AnalysisOptions = {}): Analysis {
  const mode = options.baseline ?? "local";
  const only = options.point ?? "";
  const minExperiments = options.minExperiments ?? 1;

  const conv = conventionalProfile(profile);
  const totalSamples = conv.total_samples;
  // §5.1: samples * attributed_ns / (total_samples * cpu_time_ns).
  const t = profile.sampling;
  const shares = new Map<string, number>(); // asked for every line of every point, and again by each half
  const cpuShares: CpuShares = (line) => {
    if (totalSamples === 0 || t.timed === 0 || t.cpu_time_ns === 0) return null;
    let f = shares.get(line);
    if (f === undefined) shares.set(line, (f = (lineSamples(profile, line).samples * t.attributed_ns) / (totalSamples * t.cpu_time_ns)));
    return f;
  };
  const { points, effects } = causalEffects(profile.experiments, mode, only, minExperiments, cpuShares);
  const stability = splitHalfStability(profile.experiments, points, effects, (half) => causalEffects(half, mode, only, minExperiments, cpuShares).effects);
  for (const e of effects) {
    const count = lineSamples(profile, e.line);
    e.samples = count.samples;
    e.function = count.function;
    e.function_unit = count.unit;
    e.sample_share = totalSamples > 0 ? e.samples / totalSamples : 0;
    e.callee = conv.callees.get(e.line) ?? null;
  }

  const percentiles = analyzePercentiles(profile.experiments);
  return {
    format: "coz-analysis",
    version: 1,
    settings: {
      confidence: 0.95,
      z: z95,
      settle_half_width: settleHalfWidth,
      speedup_step: 1 / speedupStepsPerUnit,
      baseline: mode,
      point: only,
      min_experiments: minExperiments,
      false_discovery_rate: falseDiscoveryRate,
      min_settle_experiments: minSettleExperiments,
    },
    experiments: profile.experiments.length,
    runtime_ns: profile.runtimeNs,
    experiments_stopped: [...profile.experimentsStopped],
    total_samples: totalSamples,
    sampling: samplingSummary(profile.sampling),
    points,
    effects,
    ...(percentiles.length > 0 ? { percentiles } : {}),
    profile: conv.profile,
    stability,
    warnings: profile.warnings.map((w) => ({ ...w })),
  };
}

export type { ConventionalProfile };
