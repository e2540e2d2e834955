// Verdicts over all the lines of a progress point (docs/analysis.md sections
// 7-8): p-values, Benjamini-Hochberg false discovery control, the widened
// intervals of the discoveries, labels, experiments needed, and the ranking.
// Mirrors tools/analysis/verdicts.cpp; every expression is evaluated in the
// order the document writes it, so both sides get the same doubles.
import type { Label, LineEffect, PointSummary } from "./analysis";
import { falseDiscoveryRate, materialLineSpeedup, maxExperimentsNeeded, minSettleExperiments, settleHalfWidth, z95 } from "./constants";
import { compareStrings, kindRank } from "./order";

/** erfc(x) for x >= 0 by a Chebyshev fit (relative error < 1.2e-7). */
export function erfcApprox(x: number): number {
  const t = 1 / (1 + 0.5 * x);
  return t * Math.exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
    + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
    + t * (-0.82215223 + t * 0.17087277)))))))));
}

// Acklam's rational approximation of the normal quantile (coefficients as the document lists them).
const a = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
  1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00];
const b = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
  6.680131188771972e+01, -1.328068155288572e+01];
const c = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
  -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00];
const d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
  3.754408661907416e+00];

/** The z with P(Z > z) = q, for 0 < q <= 0.5 (relative error < 1.2e-9). */
export function upperQuantileApprox(q: number): number {
  let lower: number;
  if (q < 0.02425) {
    const u = Math.sqrt(-2 * Math.log(q));
    lower = (((((c[0] * u + c[1]) * u + c[2]) * u + c[3]) * u + c[4]) * u + c[5]) / ((((d[0] * u + d[1]) * u + d[2]) * u + d[3]) * u + 1);
  } else {
    const v = q - 0.5;
    const w = v * v;
    lower = ((((((a[0] * w + a[1]) * w + a[2]) * w + a[3]) * w + a[4]) * w + a[5]) * v) / (((((b[0] * w + b[1]) * w + b[2]) * w + b[3]) * w + b[4]) * w + 1);
  }
  return -lower;
}

/** The two-sided normal p-value of an estimate and its standard error. */
function pValue(estimate: number, se: number): number {
  if (se === 0) return estimate === 0 ? 1 : 0;
  const z = Math.abs(estimate) / se;
  return erfcApprox(z * 0.7071067811865476);
}

// Measured with an interval (φ defined): one of the point's tests.
const tested = (e: LineEffect) => e.measured && e.impact_se !== null;
// Tested on enough experiments to get a verdict.
const eligible = (e: LineEffect) => tested(e) && e.measured_experiments >= minSettleExperiments;

function labelOf(e: LineEffect, discovery: boolean): Label {
  if (!e.measured) return "unmeasured";
  if (!tested(e)) return "insufficient-data";
  // An effect inside the no-effect band is none, however sure; its size is read at a 50%
  // line speedup from the slope (docs/analysis.md section 7).
  const material = e.slope === null || !(Math.abs(e.slope) * materialLineSpeedup < settleHalfWidth);
  if (discovery && material) return e.impact > 0 ? "positive" : "negative";
  if (eligible(e) && !material && z95 * e.impact_se! <= settleHalfWidth) return "no-effect";
  return "undecided";
}

/**
 * More experiments on this line, at its current split, until its interval
 * excludes 0 at the level that would make it a discovery (zNext) or settles
 * within ±h; a thin line needs at least its missing ones.
 */
function experimentsNeeded(e: LineEffect, zNext: number): number | null {
  if (e.label === "unmeasured" || e.label === "insufficient-data") return null;
  if (e.label !== "undecided") return 0;
  const qe = Math.abs(e.impact) > 0 ? (zNext * e.impact_se!) / Math.abs(e.impact) : Infinity;
  const qh = (z95 * e.impact_se!) / settleHalfWidth;
  const f = Math.min(qe * qe, qh * qh);
  const missing = minSettleExperiments - e.measured_experiments;
  return Math.min(maxExperimentsNeeded, Math.max(1, Math.ceil(e.experiments * (f - 1)), missing));
}

/**
 * §7 over `effects`, every effect of one point before any filtering: their
 * p-values, labels, adjusted intervals and experiments needed, and the point's
 * tested/discoveries/adjusted_z.
 */
export function decide(effects: LineEffect[], point: PointSummary): void {
  let m = 0;
  const eligibleP: number[] = [];
  for (const e of effects) {
    e.p_value = null;
    e.adjusted_low = null;
    e.adjusted_high = null;
    if (!tested(e)) continue;
    ++m;
    e.p_value = pValue(e.impact, e.impact_se!);
    if (eligible(e)) eligibleP.push(e.p_value);
  }
  eligibleP.sort((x, y) => x - y);
  // Benjamini-Hochberg: the largest k with p_(k) <= k * α / m.
  let R = 0;
  for (let k = 1; k <= eligibleP.length; ++k) {
    if (eligibleP[k - 1] <= (k * falseDiscoveryRate) / m) R = k;
  }
  point.tested = m;
  point.discoveries = R;
  point.adjusted_z = R > 0 ? upperQuantileApprox((R * falseDiscoveryRate) / (2 * m)) : null;
  // The |impact| / se an undecided line needs to join the discoveries (the (R+1)-th BH threshold).
  const zNext = m > 0 ? upperQuantileApprox(((R + 1) * falseDiscoveryRate) / (2 * m)) : z95;
  for (const e of effects) {
    const discovery = R > 0 && eligible(e) && e.p_value! <= eligibleP[R - 1];
    if (discovery) {
      e.adjusted_low = e.impact - point.adjusted_z! * e.impact_se!;
      e.adjusted_high = e.impact + point.adjusted_z! * e.impact_se!;
    }
    e.label = labelOf(e, discovery);
    e.experiments_needed = experimentsNeeded(e, zNext);
  }
}

const labelGroups: Label[] = ["positive", "negative", "no-effect", "undecided", "insufficient-data", "unmeasured"];

/** The ranking group: the label's, with thin undecided lines just after the other undecided ones. */
function rankGroup(e: LineEffect): number {
  const i = labelGroups.indexOf(e.label);
  if (i < labelGroups.indexOf("undecided")) return i;
  if (e.label === "undecided") return e.measured_experiments < minSettleExperiments ? i + 0.5 : i;
  return i;
}

/** The bound an effect is ranked by within its label group, larger first; null last. */
function rankBound(e: LineEffect): number | null {
  switch (e.label) {
    case "positive":
      return e.adjusted_low;
    case "negative":
      return e.adjusted_high === null ? null : -e.adjusted_high;
    case "undecided":
      return e.impact_low;
    default:
      return e.impact;
  }
}

/** §8 ranking: label group, then a conservative bound, max_effect, names. */
export function ranksBefore(x: LineEffect, y: LineEffect): number {
  const group = rankGroup(x) - rankGroup(y);
  if (group !== 0) return group;
  const bx = rankBound(x);
  const by = rankBound(y);
  if ((bx === null) !== (by === null)) return bx === null ? 1 : -1;
  if (bx !== null && by !== null && bx !== by) return bx > by ? -1 : 1;
  if (x.max_effect !== y.max_effect) return x.max_effect > y.max_effect ? -1 : 1;
  return compareStrings(x.line, y.line) || compareStrings(x.point, y.point) || kindRank(x.kind) - kindRank(y.kind);
}
