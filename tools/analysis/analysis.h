// Causal analysis of a profile: program speedup as a function of line speedup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profile.h"

namespace coz::analysis {

enum class PointKind { Throughput, Latency };

/// "throughput" or "latency" (the names used in reports and JSON).
const char* to_string(PointKind kind);

/// One experiment's contribution to a pooled estimate, kept so that
/// confidence intervals (bootstrap over experiments) can be added later
/// without re-reading the profile.
struct Observation {
  uint64_t duration_ns = 0;
  uint64_t visits = 0;     // throughput: delta; latency: arrivals
  double in_flight = 0.0;  // latency only: mean in flight L (mean-in-flight, else difference)
};

/// Pooled result of all experiments on one line at one speedup, for one point.
struct SpeedupEstimate {
  double line_speedup = 0.0;     // 0..1
  double program_speedup = 0.0;  // (P(0) - P(s)) / P(0); positive = the program got better
  uint64_t experiments = 0;
  uint64_t visits = 0;           // progress visits (throughput) or arrivals (latency) pooled
  uint64_t duration_ns = 0;      // effective duration pooled
  double value_ns = 0.0;         // pooled period P(s) (throughput) or mean latency W(s), in ns
  std::vector<Observation> observations;  // one per experiment, in profile order
};

/// Everything known about one (line, progress point) pair.
struct LineEffect {
  std::string line;   // "FILE:LINE"
  std::string point;  // progress point name
  PointKind kind = PointKind::Throughput;
  std::vector<SpeedupEstimate> curve;  // sorted by line_speedup; index 0 is the 0% baseline when present
  double impact = 0.0;        // summary used for ranking (see analysis.cpp)
  double max_effect = 0.0;    // largest program speedup measured on the curve
  uint64_t experiments = 0;   // experiments behind the curve, baseline included
  uint64_t samples = 0;       // samples attributed to the line (conventional profile)
  double sample_share = 0.0;  // samples / all samples, 0..1
  bool measured = false;      // the curve has a point at a non-zero line speedup
  bool global_baseline = false;  // P(0) came from all lines' 0% experiments (this line had none usable)
  double baseline_ns = 0.0;   // P(0) or W(0) used, in ns; 0 when there is none
};

struct AnalysisOptions {
  uint64_t min_experiments = 1;  // drop lines with fewer experiments
  std::string point;             // keep only this progress point (empty: all)
};

struct Analysis {
  std::vector<LineEffect> effects;  // ranked: largest impact first
  uint64_t experiments = 0;
  uint64_t total_samples = 0;
  std::vector<std::string> points;  // every progress point seen
};

Analysis analyze(const Profile& profile, const AnalysisOptions& options = {});

}  // namespace coz::analysis
