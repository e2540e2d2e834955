// Before/after comparison of two analyses (e.g. the profiles of two commits):
// docs/analysis.md section 10.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis.h"

namespace coz::analysis {

enum class Verdict { More, Less, Same, OnlyBefore, OnlyAfter, Unknown };

/// "more", "less", "same", "only-before", "only-after", "unknown".
const char* to_string(Verdict verdict);

/// The program itself, per progress point: how much faster AFTER is than BEFORE
/// (their pooled 0% baselines).
struct ComparedPoint {
  std::string name;
  PointKind kind = PointKind::Throughput;
  double before_ns = 0.0;
  double after_ns = 0.0;
  double speedup = 0.0;  // 1 - after/before: positive = AFTER is faster
  double se = 0.0;       // NaN when either dispersion is undefined
  double low = 0.0;
  double high = 0.0;
};

/// One line's summary on one side of the comparison.
struct EffectSide {
  double impact = 0.0;
  double impact_se = 0.0;
  double impact_low = 0.0;
  double impact_high = 0.0;
  double slope = 0.0;
  Label label = Label::Unmeasured;
  uint64_t experiments = 0;
};

struct ComparedLine {
  std::string line;
  std::string point;
  PointKind kind = PointKind::Throughput;
  std::optional<EffectSide> before;
  std::optional<EffectSide> after;
  double change = 0.0;  // after.impact - before.impact; NaN when not comparable
  double change_se = 0.0;
  double change_low = 0.0;
  double change_high = 0.0;
  Verdict verdict = Verdict::Unknown;
};

struct Comparison {
  std::vector<ComparedPoint> points;  // by name, then kind
  std::vector<ComparedLine> lines;    // largest |change| first
};

Comparison compare(const Analysis& before, const Analysis& after);

}  // namespace coz::analysis
