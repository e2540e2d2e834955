// How settled a profile's answer is, and where the next experiments should
// go to settle it (docs/settling.md): what `coz run`'s status line shows,
// what `--until-settled` waits for, and the weights the monitor aims the
// runtime's experiments with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis.h"

namespace coz::analysis {

/// The top lines `--until-settled` waits for, per progress point, by default.
constexpr size_t default_settle_top = 3;

/// Whether a label is a verdict: speeds up, slows down, or no effect.
bool settled_label(Label label);

/// One open line counts at most this many experiments toward a time left:
/// past it, the line is practically never settled at this noise.
constexpr uint64_t max_counted_experiments = 10'000;
/// The experiments a line without a verdict still needs, as far as known
/// (section 7's experiments_needed, at most max_counted_experiments).
uint64_t experiments_to_settle(const LineEffect& e);
/// A time left to settle: "<1 s", "42 s", "3 min", "1.5 h" (the viewer's
/// aboutSeconds is the same).
std::string format_settle_time(double seconds);

/// One progress point's state.
struct PointSettling {
  std::string point;
  PointKind kind = PointKind::Throughput;
  // The first line of the report's ranking for the point (empty: none measured).
  std::string leader;
  Label leader_label = Label::Unmeasured;
  double leader_impact = 0.0;
  double leader_half_width = 0.0;  // NaN without an interval
  size_t settled = 0;  // lines with a verdict
  size_t open = 0;     // measured lines without one yet
  // Lines that keep the top N from being settled: a top-N line without a
  // verdict, or an undecided line whose interval reaches past the N-th's.
  std::vector<std::string> blocking;
  size_t thin_blocking = 0;  // of `blocking`, those short of min_settle_experiments measured
  uint64_t experiments_to_settle = 0;  // summed over `blocking` (each capped)
  bool contended = false;  // threads waited for a core: no verdicts, never settled
  bool top_settled = false;
};

struct Settling {
  std::vector<PointSettling> points;
  bool settled = false;  // some point measured, and every point's top N settled
  bool contended = false;  // some point is contended (docs/analysis.md section 5.1)
  uint64_t experiments_to_settle = 0;
};

Settling settle_state(const Analysis& analysis, size_t top = default_settle_top);

/// An experiment unit and how much the next experiments should go to it.
struct AimWeight {
  std::string unit;
  double weight = 0.0;
};
/// Weights for every unit the analysis measured: blocking units most,
/// other open units less, settled ones little; each times (0.1 + its share
/// of the samples), so open units with many samples come first. `state`:
/// settle_state of the same analysis (its blocking units).
std::vector<AimWeight> aim_weights(const Analysis& analysis, const Settling& state);

/// The share of 0% experiments while the aim holds: every line's estimate
/// shares the baselines, so with the experiments on L blocking units the
/// width of each interval is least near a share of 1 / (1 + sqrt(L)),
/// kept within [0.25, 0.5]; but 0.25 while a blocking unit still lacks its
/// min_settle_experiments measured ones, which 0% experiments do not add to.
/// 0 (the runtime's own) when nothing blocks.
double aim_baseline_share(const Settling& state);

/// The run's experiments until its answer is settled, as far as known: each
/// blocking line needs its experiments_to_settle, at its own share of the
/// run's experiments (`aimed_share` of them by `aim`, the weights aim_weights
/// gave for the same state, the rest by samples, as the runtime chooses; all
/// by samples when `aim` is empty), and the answer waits for the slowest.
/// The sum of the lines' needs over the aimed share, as the status line said
/// before, assumed the aim gave the blocking lines everything: in
/// coz_verdict_sim it was reached by a median 1.0 of settled runs but fell
/// short by far where a line's share was small.
double run_experiments_left(const Analysis& analysis, const Settling& state, const std::vector<AimWeight>& aim,
                            double aimed_share);

}  // namespace coz::analysis
