// Planning experiments: which speedup, how long; and what one experiment measured.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "config.h"
#include "latency_buckets.h"

namespace coz {

/// What one experiment measured at one progress point.
struct PointResult {
  std::string name;
  bool latency = false;
  uint64_t delta = 0;          // throughput: visits
  uint64_t arrivals = 0;       // latency: COZ_BEGIN visits
  uint64_t departures = 0;     // latency: COZ_END visits
  int64_t difference = 0;      // latency: in flight at the end
  double mean_in_flight = -1;  // latency: time-averaged in flight (< 0: unknown)
  latency::Counts latencies;   // latency: requests begun and ended in it, by virtual latency
};

struct ExperimentResult {
  std::string selected;       // "FILE:LINE"
  double speedup = 0;         // 0..1
  uint64_t duration_ns = 0;   // wall time minus inserted pauses
  uint64_t selected_samples = 0;
  int pid = 0;                // the process that ran it (0: not written)
  uint64_t end_ns = 0;        // when it ended, ns after the process's profiler started (0: not written)
  // The process's threads over the experiment's wall time (core_use.h):
  // cores they kept busy, and threads ready to run that waited for a core,
  // on average; negative when not measured. `cores`: CPUs it could use.
  double cores_busy = -1;
  double waiting_for_core = -1;
  int cores = 0;
  // The program's threads' voluntary context switches over the experiment
  // (each a thread giving up its core to wait: a hand-off), the runtime's
  // own left out; negative when not measured.
  int64_t voluntary_switches = -1;
  std::vector<PointResult> points;
};

/// A point's visit rate, observed over earlier experiments.
struct VisitRate {
  uint64_t visits = 0;
  uint64_t ns = 0;
};

class ExperimentScheduler {
 public:
  ExperimentScheduler(const Config& config, uint64_t seed);

  /// 0 with probability `zero_share` (the baselines; by default the
  /// configured zero_speedup_share); otherwise the fixed speedup if there is
  /// one, else one of 5%, 10%, ..., 100% uniformly.
  double choose_speedup(std::optional<double> zero_share = std::nullopt);

  /// Long enough for every point to get target_visits visits at its observed
  /// rate, within [min, max]. A point too rare to reach the target within the
  /// maximum is left out, so it cannot stretch every experiment (its visits
  /// still accumulate across experiments in the analysis).
  uint64_t choose_length(const std::vector<VisitRate>& rates) const;

  /// Which line to select next, given each line's samples in a window:
  /// every sample equally likely, so a line is chosen in proportion to its
  /// samples. no_line when the window holds none.
  static constexpr size_t no_line = static_cast<size_t>(-1);
  size_t choose_line(const std::vector<uint64_t>& samples_per_line);

  /// Whether the next experiment goes where the monitor aims it
  /// (control.h), with probability aimed_share; the others stay chosen by
  /// samples, so every sampled line keeps its chance, and the estimates
  /// their unaimed experiments (docs/settling.md).
  static constexpr double aimed_share = 0.75;
  bool aim_next();
  /// An index chosen in proportion to `weights`; no_line when all are 0.
  size_t choose_weighted(const std::vector<double>& weights);

  /// Delay inserted per selected sample at this speedup, for samples taken
  /// every `period_ns` of thread CPU time.
  static uint64_t delay_per_sample(double speedup, uint64_t period_ns);

 private:
  const Config& config_;
  std::mt19937_64 rng_;
};

}  // namespace coz
