// The default granularity (`--granularity auto`): in a large program, first
// functions, then lines inside the functions that matter.
//
// A server under load spreads its samples over hundreds of lines; at a line
// per experiment, a 45-s run gave most of them 1-4 experiments, too few to
// settle anything. Functions are ten times fewer: the first phase runs
// experiments on whole functions (LineMap::group_by_function) until the
// ones that speed the program up stand out, and the second phase runs line
// experiments only on the lines of those functions. A small program (few
// lines with samples) keeps line experiments from the start.
//
// This class is the decision only: the profiler thread tells it what it sees
// (samples per line, each experiment's result) and asks which phase it is in
// and which functions won. docs/granularity.md has the reasoning behind
// the thresholds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "experiment.h"

namespace coz {

class TwoPhase {
 public:
  enum class Phase { Undecided, Functions, Lines };

  struct Limits {
    uint64_t samples_to_decide = 1000;  // samples seen before the program's size is judged
    size_t large_program_lines = 50;    // lines with samples that make a program large
    size_t function_experiments = 150;  // experiments of the first phase
    size_t max_winners = 3;             // functions whose lines the second phase tests
    size_t min_unit_experiments = 5;    // speedup experiments a function needs to be judged
    double min_winner_slope = 0.05;     // rate gain at a 100% speedup a winner needs (choose_winners)
  };

  explicit TwoPhase(Limits limits) : limits_(limits) {}

  Phase phase() const { return phase_; }

  /// While undecided: judges the program's size once `total_samples` reach
  /// the limit. `sampled_lines`: lines with at least one sample.
  void observe_samples(uint64_t total_samples, size_t sampled_lines);

  /// An experiment that ended. In the first phase, `unit` is the selected
  /// function unit's name; its result is kept, and after the last one of
  /// the phase, the winners are chosen and the phase becomes Lines.
  void record(const ExperimentResult& result);

  /// The functions (unit names) whose lines the second phase tests; empty
  /// when the first phase found none that stands out (then every line is).
  const std::vector<std::string>& winners() const { return winners_; }

  /// One line per function judged (enough experiments), for `coz run -v`.
  std::vector<std::string> summary() const;

  /// A function's estimated gain in progress rate per unit of line speedup
  /// (rate / baseline rate - 1 at 100%), from its experiments against the
  /// pooled baselines (exposed for tests).
  struct Estimate {
    double slope = 0;
    double se = 0;
    size_t experiments = 0;
  };
  std::optional<Estimate> estimate(const std::string& unit) const;

 private:
  struct Observation {
    double speedup;
    double rate;    // visits per effective ns
    double weight;  // the experiment's effective ns
  };
  /// The pooled 0% experiments' visits per ns; none before there are any.
  std::optional<double> base_rate() const;
  double noise_variance(double base_rate) const;
  void choose_winners();
  /// Visits per ns of an experiment: its throughput points' visits (or its
  /// latency points' departures when it has no throughput point).
  static std::optional<double> rate_of(const ExperimentResult& r);

  Limits limits_;
  Phase phase_ = Phase::Undecided;
  size_t experiments_ = 0;
  std::vector<Observation> baselines_;
  std::map<std::string, std::vector<Observation>> by_unit_;
  std::vector<std::string> winners_;
};

}  // namespace coz
