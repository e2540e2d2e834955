// Verdicts over all the lines of a progress point (docs/analysis.md sections
// 7-8): p-values, Benjamini-Hochberg false discovery control, the widened
// intervals of the discoveries, labels, experiments needed, and the ranking.
// The viewer mirrors it in viewer/src/analysis/verdicts.ts.
#pragma once

#include <vector>

#include "analysis.h"

namespace coz::analysis {

/// The false discovery rate the verdicts control, over all lines of a point.
constexpr double false_discovery_rate = 0.05;
/// Measured experiments a line needs before it gets any verdict.
constexpr uint64_t min_settle_experiments = 10;

/// erfc(x) for x >= 0 by a Chebyshev fit (relative error < 1.2e-7): the
/// same expression, in the same order, as the viewer's.
double erfc_approx(double x);
/// The z with P(Z > z) = q, for 0 < q <= 0.5 (Acklam's approximation).
double upper_quantile_approx(double q);

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
