// The benchmark suite: the ground-truth programs, how each is driven, and
// the settings of one harness run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json.h"
#include "process.h"

namespace coz_bench {

/// One line of a program with a build variant in which it is really made faster.
struct LineCase {
  std::string marker;   // `// @line:MARKER` in the source
  std::string variant;  // binary of the variant whose loop on that line does half the work
  double designed;      // real speedup the program's structure implies (for the reader)
  bool no_effect;       // designed to have no effect: the tighter target applies
};

struct BenchProgram {
  std::string name;       // binary (and `<name>_dwarf3` for coz-profiler)
  std::string source;     // relative to the source tree
  std::string structure;  // the causal structure, in a few words
  uint64_t nominal_units;  // -n giving nominal_s of plain run time
  double nominal_s;
  std::string metric;  // what the program prints on stderr: "elapsed" (s) or "mean_latency" (ms)
  std::string point;   // progress point name, or "@MARKER" for an unnamed COZ_PROGRESS at that line
  std::vector<LineCase> lines;
  bool system = false;  // run under `coz run --system` (one experiment across the program's processes)
};

const std::vector<BenchProgram>& suite();

struct Config {
  std::string source_dir = COZ_SOURCE_DIR;
  std::string coz;           // our `coz` (build path)
  std::string coz_profiler;  // Debian's /usr/bin/coz; empty when not installed
  std::string programs;      // directory of the built programs
  std::string bigdwarf;      // the generated start-up program
  std::string space_programs;  // the space_* programs (bench/space)
  uint64_t space_seed = 0;   // the space's seed; 0: a fresh one
  int space_count = 60;      // generated programs
  std::string scratch;       // profiles and working directories
  double run_s = 4.0;        // plain run time each program is scaled to (accuracy)
  double overhead_run_s = 3.0;  // the same, for the overhead rounds
  int truth_rounds = 3;      // interleaved plain runs of base and variants
  int profile_runs = 1;      // `coz run --fixed-line` runs per line, pooled
  int overhead_rounds = 3;   // interleaved rounds of every overhead mode
  int startup_rounds = 5;
  int answer_runs = 5;        // time to answer: runs per program and profiler
  // Time to answer: interleaved plain runs behind the truth every run is judged
  // by. More than the accuracy table's: one truth decides all the runs, and on
  // a host with two speeds 3 rounds put lib_memcpy's anywhere from +39% to +58%.
  int answer_truth_rounds = 9;
  double answer_cap_s = 60;   // a run not right by then is ended
  int nice = 0;              // niceness of every measured process (-20 as root)
  bool quick = false;
  std::vector<std::string> only;  // program names to run (empty: all)
};

/// Whether `--only` (if given) names the program.
bool included(const Config& config, const BenchProgram& program);

/// "-n UNITS" scaled to `seconds` of plain run time.
std::vector<std::string> program_args(const BenchProgram& program, double seconds);

/// FILE:LINE (file name only, which `--fixed-line` accepts as a path suffix)
/// of `// @line:MARKER` in the program's source; empty if not found.
std::string marked_line(const BenchProgram& program, const std::string& marker);

/// Whether `location` ("path/file.cpp:12") names `suffix` ("file.cpp:12").
bool location_matches(const std::string& location, const std::string& suffix);

/// Whether `point` (as a profile names it) is the program's progress point.
bool point_matches(const BenchProgram& program, const std::string& point);

/// Options for a measured run under `config`.
RunOptions measured(const Config& config, double expected_s, const std::string& cwd = "");

/// One measured plain run of `binary` (the program or one of its variants,
/// in config.programs) with `args`: the program's metric, or NaN with
/// `error` set (how the run ended) when it failed or printed no metric.
double plain_metric(const Config& config, const BenchProgram& program, const std::string& binary,
                    const std::vector<std::string>& args, std::string& error);

/// The analysis of `profile` by our `coz report --json` (run at `nice`);
/// nullopt with `error` set on failure.
std::optional<json::Value> report_json(const Config& config, const std::string& profile, std::string& error,
                                       int nice = 0);

}  // namespace coz_bench
