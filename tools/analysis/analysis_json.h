// The analysis as JSON: the data behind `coz report --json`, and the layout
// of the expected results in test/vectors/*/expected.json (which hold a
// subset of these keys).
#pragma once

#include <string>

#include "analysis.h"

namespace coz::analysis {

/// One JSON object, pretty-printed with two-space indents, ending in a newline:
///   {"experiments", "total_samples", "points": [...],
///    "effects": [{"line", "point", "kind", "impact", "max_effect",
///                 "experiments", "samples", "sample_share", "measured",
///                 "global_baseline", "baseline_ns",
///                 "curve": [{"line_speedup", "program_speedup",
///                            "experiments", "visits", "duration_ns", "value_ns"}]}]}
/// Effects are in rank order. Non-finite numbers are written as null.
std::string to_json(const Analysis& analysis);

}  // namespace coz::analysis
