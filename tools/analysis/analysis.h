// Causal analysis of a profile: program speedup as a function of line speedup,
// with 95% confidence intervals, plus the conventional profile of the same run.
// docs/analysis.md is the specification (the viewer mirrors it); undefined
// numbers (no interval, no baseline) are NaN here and null in JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis_constants.h"
#include "percentiles.h"
#include "profile.h"

namespace coz::analysis {

enum class PointKind { Throughput, Latency };
enum class Baseline { Local, Pooled, Line };             // the option (docs/analysis.md section 4)
enum class BaselineSource { None, Local, Pooled, Line };  // what an effect got
enum class Label { Unmeasured, InsufficientData, Positive, Negative, NoEffect, Undecided };
/// Why a line's label was withheld for good (it is then Undecided, with no
/// experiments needed): its point's cores were contended (section 5.1), or
/// its hand-offs fast, and the label "no effect" (section 5.2).
enum class Withheld { No, CoresContended, FastHandOffs };

/// "throughput" / "latency"; "local" / "pooled" / "line" / "none"; "positive", "no-effect", ...
/// (the names used in reports and JSON).
const char* to_string(PointKind kind);
const char* to_string(Baseline baseline);
/// The baseline named "local", "pooled" or "line"; nullopt for anything else.
std::optional<Baseline> baseline_named(std::string_view name);
const char* to_string(BaselineSource source);
const char* to_string(Label label);
/// "cores-contended" / "fast-hand-offs"; "" for Withheld::No.
const char* to_string(Withheld withheld);

/// One cell of the curve: all experiments on one line at one speedup step, for one point.
struct SpeedupEstimate {
  double line_speedup = 0.0;     // 0..1, a multiple of 0.05
  double program_speedup = 0.0;  // 1 - R(s)/R(0): positive = the program got better
  double se = 0.0;               // NaN at s = 0 and when the dispersion is undefined
  double low = 0.0;              // program_speedup -/+ z95 * se
  double high = 0.0;
  uint64_t experiments = 0;
  uint64_t visits = 0;           // X: progress visits (throughput) or arrivals (latency)
  uint64_t duration_ns = 0;      // effective duration pooled
  double value_ns = 0.0;         // R: period P(s) (throughput) or mean latency W(s), in ns
  double bound = undefined;      // the most the cores allow at this speedup (docs/analysis.md section 5.1)
  bool bounded = false;          // program_speedup was above the bound, and is the bound
};

/// The out-of-scope function in which a line's sampled call stacks continue
/// most often (docs/analysis.md section 9): e.g. memcpy [libc.so.6] called from the line.
struct Callee {
  std::string function;        // demangled name, or the offset in hex ("0x1f40") without a symbol
  std::string library;         // the object's base name ("libc.so.6")
  uint64_t samples = 0;        // the line's stack samples that continue in this callee
  uint64_t stack_samples = 0;  // all stack samples whose innermost in-scope frame is the line
  double share = 0.0;          // samples / stack_samples, 0..1
};

/// Everything known about one (line, progress point) pair.
struct LineEffect {
  std::string line;   // "FILE:LINE"
  std::string point;  // progress point name
  PointKind kind = PointKind::Throughput;
  Label label = Label::Unmeasured;
  Withheld withheld = Withheld::No;
  std::vector<SpeedupEstimate> curve;  // increasing line_speedup; s = 0 only from the line's own 0% runs
  double impact = 0.0;  // mean program speedup over the measured range (trapezoid)
  double impact_se = 0.0;
  double impact_low = 0.0;   // the 95% confidence sequence: valid at every look
  double impact_high = 0.0;
  double slope = 0.0;  // weighted least squares through the origin; NaN when unmeasured
  double slope_se = 0.0;
  double slope_low = 0.0;
  double slope_high = 0.0;
  double max_effect = 0.0;    // largest program speedup at s > 0
  uint64_t experiments = 0;   // the line's observations of the point, its 0% ones included
  std::optional<uint64_t> experiments_needed;  // 0 when settled; nullopt when unknowable
  uint64_t measured_experiments = 0;  // experiments of its curve points at s > 0
  uint64_t untreated_experiments = 0;  // at s > 0 without a sample in the line: no delay, counted at 0%
  double p_value = undefined;       // anytime-valid (1 / e-value), of the impact; NaN when not tested (docs/analysis.md section 7)
  double adjusted_low = undefined;  // the discoveries' interval widened for the false discovery rate; NaN otherwise
  double adjusted_high = undefined;
  uint64_t samples = 0;       // samples attributed to the line (conventional profile)
  double sample_share = 0.0;  // samples / all samples, 0..1
  std::string function;       // from `samples function=`; empty when unknown
  bool function_unit = false; // the unit of `function` (coz run --granularity function), not a line
  std::optional<Callee> callee;  // where its stack samples mostly continue; none without callee frames
  bool measured = false;      // the curve has a point at s > 0
  BaselineSource baseline = BaselineSource::None;
  double baseline_ns = 0.0;   // R(0) used; NaN without a baseline
  double cpu_share = undefined;  // the line's share of the program's CPU time (section 5.1)
  double dispersion = undefined;  // the phi its intervals use: its point's, or more (section 3)
};

/// Per progress point: the noise estimate and the pooled baseline.
struct PointSummary {
  std::string name;
  PointKind kind = PointKind::Throughput;
  uint64_t experiments = 0;       // observations of the point
  double dispersion = 0.0;        // phi; NaN when undefined (no cell with two observations)
  int64_t dispersion_dof = 0;     // N - K
  double baseline_ns = 0.0;       // pooled R(0); NaN when unusable
  uint64_t baseline_experiments = 0;
  uint64_t baseline_visits = 0;   // X(0)
  uint64_t tested = 0;            // effects with an interval: the false discovery family
  uint64_t discoveries = 0;       // effects labelled positive or negative
  double adjusted_level = undefined;  // discoveries * alpha / tested: the level of the discoveries' intervals; NaN without
  // The cores over its 0% experiments (section 5.1); NaN / 0 without core figures.
  uint64_t cores = 0;
  double cores_busy = undefined;
  double waiting_for_core = undefined;
  bool contended = false;  // threads waited for a core: no confident label
  // The program's hand-offs over its 0% experiments (section 5.2); NaN without figures.
  double hand_offs_per_second = undefined;
  bool fast_hand_offs = false;  // at least fast_hand_offs_per_second: no "no effect"
};

/// Split-half agreement of a point's top lines (docs/analysis.md section 8).
struct Stability {
  std::string name;
  PointKind kind = PointKind::Throughput;
  uint64_t top = 0;    // K: lines compared
  uint64_t agree = 0;  // of them, in both halves' top K
};

// The conventional profile of the same runs.
struct LineSamples {
  std::string location;
  std::string function;
  uint64_t samples = 0;
  double share = 0.0;
  // Shared, not inline: a profile can have millions of lines, few of them
  // with a callee (an inline Callee made every line 80 bytes larger).
  std::shared_ptr<const Callee> callee;
};
struct FunctionSamples {
  std::string function;
  uint64_t samples = 0;
  double share = 0.0;
  uint64_t lines = 0;
};
struct StackSamples {
  std::string frames;  // raw, ';'-separated, outermost first
  uint64_t count = 0;
  double share = 0.0;
};
struct BlockedSite {
  std::string site;
  std::string kind;
  uint64_t time_ns = 0;
  uint64_t count = 0;
};
struct ConventionalProfile {
  std::vector<LineSamples> lines;
  std::vector<FunctionSamples> functions;
  std::vector<StackSamples> stacks;
  std::vector<BlockedSite> blocked;
  std::map<std::string, Callee> callees;  // in-scope frame -> its top callee (lines and effects copy it)
};

/// One frame of a `stack` record. In-scope frames are `FILE:LINE` (or
/// `BINARY:FUNCTION` without debug info, BINARY an absolute path), followed
/// under `coz run --system` by ` [PROGRAM]` (is_location); an out-of-scope
/// callee is written `FUNCTION [LIBRARY]`: it ends with `]` and contains
/// ` [`, LIBRARY being between the last ` [` and the final `]`. Empty frames,
/// and callee-shaped ones with an empty FUNCTION or LIBRARY, are skipped.
struct StackFrame {
  enum class Kind { InScope, Callee, Skipped };
  Kind kind = Kind::InScope;
  std::string_view function;  // callee frames only
  std::string_view library;   // callee frames only
};
StackFrame parse_stack_frame(std::string_view frame);

/// Whether `text` is shaped as an in-scope location without its ` [PROGRAM]`:
/// it ends with `:LINE`, or is `/PATH:FUNCTION`. A function name (a callee's)
/// is neither.
bool is_location(std::string_view text);

/// Whether the point named `name` is the one a user asked for as `wanted`:
/// the same name, or without the ` [PROGRAM]` that `coz run --system` adds.
bool point_is(std::string_view name, std::string_view wanted);

struct AnalysisOptions {
  uint64_t min_experiments = 1;  // drop effects with fewer experiments
  std::string point;             // keep only this progress point (empty: all)
  Baseline baseline = Baseline::Local;
};

struct Analysis {
  AnalysisOptions options;
  std::vector<LineEffect> effects;  // ranked: largest impact first
  uint64_t experiments = 0;
  uint64_t total_samples = 0;
  uint64_t runtime_ns = 0;
  std::vector<std::string> experiments_stopped;  // Profile::experiments_stopped
  std::vector<PointSummary> points;  // every progress point seen, by name then kind
  std::vector<Stability> stability;  // points order; points with measured effects only
  ConventionalProfile profile;
  std::optional<SamplingTotals> sampling;  // from `sampling` records; none in older files
  std::vector<WarningPlace> warnings;
  std::vector<PointPercentiles> percentiles;  // latency points with request histograms (percentiles.h)
};

Analysis analyze(const Profile& profile, const AnalysisOptions& options = {});

/// Seconds of run time per experiment in the profile (runtime / experiments),
/// the pace at which more experiments would come; NaN when unknown.
double seconds_per_experiment(const Analysis& analysis);

/// For `FILE:FUNCTION`, an experiment unit of `coz run --granularity function`
/// with no `samples` record of its own: the longest FUNCTION that some
/// location's `function=` names (docs/analysis.md section 9); "" otherwise.
std::string function_of_unit(const Profile& profile, const std::string& name);

/// The conventional-profile part alone (analyze() fills Analysis::profile with it).
ConventionalProfile conventional_profile(const Profile& profile);

}  // namespace coz::analysis
