// Latency percentiles under virtual speedups (issue #53): for each latency
// point whose profile has its requests' histograms, the median, 95th and
// 99th percentile of its requests' latency in the untreated program, and
// how much each line's virtual speedup changes them. docs/analysis.md section 13 is the
// specification.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis_constants.h"
#include "profile.h"

namespace coz::analysis {

/// The percentiles estimated: the median, p95, p99.
constexpr std::array<double, 3> percentile_levels = {0.50, 0.95, 0.99};
constexpr size_t percentile_count = percentile_levels.size();
/// "p50", "p95", "p99".
const char* percentile_name(size_t level);

/// One percentile of one cell (a line at one speedup, or at 50% read off
/// its curve): the latency, and its change against the untreated program's.
struct PercentileChange {
  double latency_ns = undefined;  // the percentile in the cell (NaN at "at 50%")
  double change = undefined;      // 1 - q(s) / q(0): positive = shorter
  double low = undefined;         // 95% interval of `change`
  double high = undefined;
};

struct PercentileCell {
  double line_speedup = 0.0;
  uint64_t experiments = 0;
  double requests = 0.0;  // weighted (docs/analysis.md section 13: inclusion weights)
  std::array<PercentileChange, percentile_count> levels{};
};

struct LinePercentiles {
  std::string line;
  std::vector<PercentileCell> curve;  // its speedups above 0, increasing
  /// At a 50% line speedup, from the curve (a line through the origin of
  /// log(q(s)/q(0)) against s).
  std::array<PercentileChange, percentile_count> at_half{};
};

struct PointPercentiles {
  std::string point;
  uint64_t requests = 0;              // measured, over every experiment
  uint64_t baseline_experiments = 0;  // 0% experiments with requests
  double baseline_requests = 0.0;
  std::array<double, percentile_count> baseline_ns{};  // untreated percentiles (NaN if too few requests)
  std::array<double, percentile_count> design_effect{};  // how much requests of one experiment move together
  std::vector<LinePercentiles> lines;  // by p99's change at 50%, largest first; undefined last
};

/// Every latency point with request histograms, by name.
std::vector<PointPercentiles> analyze_percentiles(const Profile& profile);

}  // namespace coz::analysis
