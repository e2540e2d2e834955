// The runner of the accuracy space (bench/space/README.md): for each
// generated program, the truth of halving each marked line (interleaved
// plain rounds of the program and its variants, with a 95% interval), the
// prediction (`coz run --fixed-line L --fixed-speedup 50`) and the verdicts
// of a default `coz run`; one row per line and a summary.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "generator.h"

namespace coz_space {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct RunnerConfig {
  std::string coz;          // our `coz`
  std::string programs;     // directory of the space_* binaries
  std::string source_dir;   // the source tree (to find `// @line:` markers)
  std::string scratch;      // profiles
  double truth_seconds = 2.0;   // measured window of each plain run
  int truth_rounds = 6;         // interleaved rounds of the program and every variant
  double truth_max_half_width = 0.04;  // wider: the rounds are repeated once, then the row is listed apart
  double predict_seconds = 10;  // each `--fixed-line` run
  double default_seconds = 15;  // the default run whose verdicts are judged
  bool verdicts = true;         // run the default profile at all
  int nice = 0;                 // of every measured process (-20 as root)
  double max_steal = 0.10;      // a prediction run with more of the machine stolen is taken once more
  std::string rows_path;        // every row appended here as JSON lines (empty: none)
  /// Truths measured before (rows of the same seed and programs): taken
  /// from there instead of measured again, to compare runtimes quickly.
  std::vector<struct LineRow>* known_truths = nullptr;
};

/// One marked line of one program: what halving it really does, what the
/// profiler predicted, and what a default run said.
struct LineRow {
  int program = 0;
  std::string structure, description, marker, location;  // location: "space_lock.cpp:15"
  double base_rate = 0;          // items per second of the plain program (median of its rounds)
  double cores_busy = kNaN;      // its CPU time over the window (median of its rounds)
  double waiting_for_core = kNaN;  // threads ready to run that waited for a core, on average (median)
  double truth = kNaN;    // 1 - base / variant throughput, mean over rounds
  double truth_half_width = kNaN;
  int truth_rounds = 0;
  double predicted = kNaN;   // program speedup at 50%
  double predicted_half_width = kNaN;
  int predicted_experiments = 0;
  bool contended = false;           // the prediction's report found threads waiting for cores (no verdicts)
  double hand_offs = kNaN;          // the prediction's report: the program's voluntary switches per second
  bool fast_hand_offs = false;      // and it called them fast (no "no effect")
  double steal = 0;                 // share of the machine a hypervisor took during the prediction's run
  std::string label = "absent";     // the default run's label of the line ("positive", ...)
  std::string error;                // what went wrong, if anything

  bool truth_steady(double max_half_width) const { return truth_half_width <= max_half_width; }
  double error_points() const { return 100 * (predicted - truth); }
  /// The prediction's interval, widened by the truth's (in quadrature: the
  /// 95% interval of the difference), holds the truth.
  bool covered() const;
  /// A confident label the truth contradicts: "positive"/"negative" with the
  /// truth within +-2 points or of the other sign, or "no-effect" on a line
  /// whose truth is beyond +-2.5 points by more than its own interval.
  bool false_verdict() const;
};

struct Summary {
  int rows = 0, steady_rows = 0, within = 0, covered = 0, predicted_rows = 0, false_verdicts = 0, verdict_rows = 0;
  int confident_rows = 0;  // labelled positive, negative or no-effect
  // The same over the rows of programs whose report did not call them contended.
  int open_steady_rows = 0, open_within = 0, open_predicted_rows = 0, open_covered = 0;
  // And over those it called neither contended nor fast in hand-offs.
  int slow_steady_rows = 0, slow_within = 0, slow_predicted_rows = 0, slow_covered = 0;
  std::vector<std::string> lines() const;  // "within 5 points: 95 of 100 (95.0%)", ...
};

/// Runs the space's measurements for `programs`, printing each row as it
/// is done, and returns the rows.
std::vector<LineRow> run(const RunnerConfig& config, const std::vector<SpaceProgram>& programs);

Summary summarize(const std::vector<LineRow>& rows, double truth_max_half_width);

/// The rows as a Markdown table (steady rows, then those whose truth is wider than the bound).
std::string render_rows(const std::vector<LineRow>& rows, double truth_max_half_width);

/// Rows read back from a `rows_path` file (to summarise an earlier run again).
std::vector<LineRow> read_rows(const std::string& path);

}  // namespace coz_space
