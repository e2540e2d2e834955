// Verdicts over all the lines of a progress point (docs/analysis.md sections
// 7-8): anytime-valid e-values and confidence sequences, e-BH false discovery
// control, the widened intervals of the discoveries, labels, experiments
// needed, and the ranking.
// The viewer mirrors it in viewer/src/analysis/verdicts.ts.
#pragma once

#include <vector>

#include "analysis.h"

namespace coz::analysis {

/// The false discovery rate the verdicts control, over all lines of a point.
constexpr double false_discovery_rate = 0.05;
/// Measured experiments a line needs before it gets any verdict.
constexpr uint64_t min_settle_experiments = 10;

/// The scale of the normal mixture behind every confidence sequence (in
/// program speedup): the boundary is tightest where an impact's standard
/// error is near it, a few points, where verdicts are reached.
constexpr double mixture_scale = 0.05;
/// The mixture scale of the "no effect" test (an equivalence within
/// +-settle_half_width): its decisions land where se is near 0.009, and
/// there this scale asks ~9% fewer experiments than mixture_scale.
constexpr double equivalence_mixture_scale = 0.025;

/// The half-width of a time-uniform (anytime-valid) two-sided confidence
/// sequence at level `alpha` around an estimate with standard error `se`:
/// se * sqrt((1 + 1/u) * log((1 + u) / alpha^2)), u = (scale / se)^2,
/// the normal-mixture boundary. Such intervals hold the truth at every look
/// at once with probability 1 - alpha. 0 when se is 0; NaN when se is NaN.
double anytime_half_width(double se, double alpha, double scale = mixture_scale);
/// The logarithm of the e-value of "no effect" for an estimate and its
/// standard error: the normal-mixture likelihood ratio. It is at least
/// log(1/alpha) exactly when |estimate| >= anytime_half_width(se, alpha).
double log_e_value(double estimate, double se);

/// Labels, p-values and adjusted intervals for `effects`, all the effects of
/// one progress point (before any filtering); fills the point's summary.
void decide(std::vector<LineEffect>& effects, PointSummary& point);

/// Section 8's order: label group, then a conservative bound.
bool ranks_before(const LineEffect& a, const LineEffect& b);

/// Undecided for good: a line of a contended point (docs/analysis.md section
/// 5.1), which more experiments would not settle.
inline bool undecidable(const LineEffect& e) { return e.label == Label::Undecided && !e.experiments_needed; }

/// Unmeasured because every speedup of it inserted no delay (section 2): the
/// line runs too rarely to be tried, and more experiments would not change that.
inline bool rarely_runs(const LineEffect& e) { return e.label == Label::Unmeasured && e.untreated_experiments > 0; }

}  // namespace coz::analysis
