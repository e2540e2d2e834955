// The analysis's constants and its grid of speedups (docs/analysis.md), apart
// so that the parts of the analysis in files of their own (percentiles.h)
// share them.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>

namespace coz::analysis {

/// An undefined number (no interval, no baseline).
constexpr double undefined = std::numeric_limits<double>::quiet_NaN();
/// Two-sided 95% normal quantile.
constexpr double z95 = 1.959963984540054;
/// An interval this narrow (±2.5 percentage points) around 0 settles a line as "no effect".
constexpr double settle_half_width = 0.025;
/// Where a line's effect is read to tell whether it is material (outside
/// ±settle_half_width): at a 50% line speedup, slope * 0.5.
constexpr double material_line_speedup = 0.5;
/// The runtime picks line speedups in 5% steps; estimates are pooled per step.
constexpr int speedup_steps_per_unit = 20;
/// The step of an experiment's speedup (0.24 and 0.26 pool with 0.25), and back.
inline int speedup_bucket(double speedup) { return static_cast<int>(std::lround(speedup * speedup_steps_per_unit)); }
inline double bucket_speedup(int bucket) { return static_cast<double>(bucket) / speedup_steps_per_unit; }
/// Split-half stability compares this many top lines of each point.
constexpr size_t stability_top = 5;
/// The local baseline compares each experiment with this many 0% experiments,
/// the nearest in time (docs/analysis.md section 4).
constexpr size_t local_neighbours = 8;
/// A line's own dispersion is shrunk toward its point's as if the point's
/// were this many more degrees of freedom (docs/analysis.md section 3).
constexpr double line_dispersion_prior_dof = 10.0;
/// experiments_needed is capped here: beyond it the answer is "never", in practice.
constexpr double max_experiments_needed = 1e9;
/// A point whose untreated program kept this many threads waiting for a core,
/// on average, is contended (docs/analysis.md section 5.1).
constexpr double contended_waiting_threads = 0.1;
/// Voluntary context switches per second, over a point's 0% experiments,
/// from which its hand-offs are fast (docs/analysis.md section 5.2): its
/// speed-ups read low, and a line's "no effect" cannot be told from a small
/// real effect, so none is given.
constexpr double fast_hand_offs_per_second = 20000.0;

}  // namespace coz::analysis
