// Verdicts over all the lines of a progress point (docs/analysis.md sections
// 7-8): anytime-valid e-values and confidence sequences, e-BH false discovery
// control, the widened intervals of the discoveries, labels, experiments
// needed, and the ranking.
// Mirrors tools/analysis/verdicts.cpp; every expression is evaluated in the
// order the document writes it, so both sides get the same doubles.
import type { Label, LineEffect, PointSummary } from "./analysis";
import { equivalenceMixtureScale, falseDiscoveryRate, materialLineSpeedup, maxExperimentsNeeded, minSettleExperiments, mixtureScale, settleHalfWidth } from "./constants";
import { compareStrings, kindRank } from "./order";

/**
 * The half-width of a time-uniform (anytime-valid) two-sided confidence sequence
 * at level `alpha` around an estimate with standard error `se`: the normal-mixture
 * boundary se * sqrt((1 + 1/u) * log((1 + u) / alpha²)), u = (mixtureScale / se)².
 * It holds the truth at every look at once with probability 1 - alpha. 0 when se
 * is 0 (or below); null when se is null.
 */
export function anytimeHalfWidth(se: number | null, alpha: number, scale: number = mixtureScale): number | null {
  if (se === null || Number.isNaN(se)) return null;
  if (se <= 0) return 0;
  const u = (scale / se) * (scale / se);
  return se * Math.sqrt((1 + 1 / u) * Math.log((1 + u) / (alpha * alpha)));
}

/**
 * The logarithm of the e-value of "no effect" for an estimate and its standard
 * error (the normal-mixture likelihood ratio): at least log(1/alpha) exactly when
 * |estimate| >= anytimeHalfWidth(se, alpha).
 */
export function logEValue(estimate: number, se: number): number {
  if (se === 0) return estimate === 0 ? 0 : Infinity;
  const u = (mixtureScale / se) * (mixtureScale / se);
  const z = estimate / se;
  return (z * z * u) / (2 * (1 + u)) - 0.5 * Math.log(1 + u);
}

// Measured with an interval (φ defined): one of the point's tests.
const tested = (e: LineEffect) => e.measured && e.impact_se !== null;
// Tested on enough experiments to get a verdict.
const eligible = (e: LineEffect) => tested(e) && e.measured_experiments >= minSettleExperiments;

// "No effect" is an equivalence: two one-sided tests, each at the false discovery
// rate, so the two-sided confidence sequence at twice it.
const noEffectHalfWidth = (e: LineEffect) => anytimeHalfWidth(e.impact_se, 2 * falseDiscoveryRate, equivalenceMixtureScale)!;

function labelOf(e: LineEffect, discovery: boolean): Label {
  if (!e.measured) return "unmeasured";
  if (!tested(e)) return "insufficient-data";
  // An effect inside the no-effect band is none, however sure; its size is read at a 50%
  // line speedup from the slope (docs/analysis.md section 7).
  const material = e.slope === null || !(Math.abs(e.slope) * materialLineSpeedup < settleHalfWidth);
  if (discovery && material) return e.impact > 0 ? "positive" : "negative";
  if (eligible(e) && !material && noEffectHalfWidth(e) <= settleHalfWidth) return "no-effect";
  return "undecided";
}

/**
 * More experiments on this line, at its current split, until its confidence
 * sequence excludes 0 at the level that would make it a discovery (levelNext) or
 * settles within ±h; a thin line needs at least its missing ones. (The boundary
 * at today's standard error: it grows slowly, as the log of the experiments, so
 * this is a little short.)
 */
function experimentsNeeded(e: LineEffect, levelNext: number): number | null {
  if (e.label === "unmeasured" || e.label === "insufficient-data") return null;
  if (e.label !== "undecided") return 0;
  const qe = Math.abs(e.impact) > 0 ? anytimeHalfWidth(e.impact_se, levelNext)! / Math.abs(e.impact) : Infinity;
  const qh = noEffectHalfWidth(e) / settleHalfWidth;
  const f = Math.min(qe * qe, qh * qh);
  const missing = minSettleExperiments - e.measured_experiments;
  return Math.min(maxExperimentsNeeded, Math.max(1, Math.ceil(e.experiments * (f - 1)), missing));
}

/**
 * §7 over `effects`, every effect of one point before any filtering: their
 * anytime-valid p-values (1 / e-value), labels, adjusted intervals and experiments
 * needed, and the point's tested/discoveries/adjusted_level.
 */
export function decide(effects: LineEffect[], point: PointSummary): void {
  let m = 0;
  const logE = effects.map(() => -Infinity);
  const eligibleLogE: number[] = [];
  effects.forEach((e, i) => {
    e.p_value = null;
    e.adjusted_low = null;
    e.adjusted_high = null;
    if (!tested(e)) return;
    ++m;
    logE[i] = logEValue(e.impact, e.impact_se!);
    e.p_value = Math.min(1, Math.exp(-logE[i])); // anytime-valid: 1 / e
    if (eligible(e)) eligibleLogE.push(logE[i]);
  });
  eligibleLogE.sort((x, y) => y - x);
  // e-BH: the largest k whose k-th largest e-value is at least m / (α k).
  let R = 0;
  for (let k = 1; k <= eligibleLogE.length; ++k) {
    if (eligibleLogE[k - 1] >= Math.log(m / (k * falseDiscoveryRate))) R = k;
  }
  point.tested = m;
  point.discoveries = R;
  point.adjusted_level = R > 0 ? (R * falseDiscoveryRate) / m : null;
  const cutoff = R > 0 ? eligibleLogE[R - 1] : Infinity;
  // The level at which an undecided line's confidence sequence must exclude 0 for it to join the discoveries.
  const levelNext = m > 0 ? ((R + 1) * falseDiscoveryRate) / m : falseDiscoveryRate;
  effects.forEach((e, i) => {
    const discovery = eligible(e) && logE[i] >= cutoff;
    if (discovery) {
      const half = anytimeHalfWidth(e.impact_se, point.adjusted_level!)!;
      e.adjusted_low = e.impact - half;
      e.adjusted_high = e.impact + half;
    }
    e.label = labelOf(e, discovery);
    e.experiments_needed = experimentsNeeded(e, levelNext);
  });
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
