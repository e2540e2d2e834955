// The analysis as JSON: `coz report --json` and `--compare --json`, and the
// layout of test/vectors/*/expected.json. The schema is documented, key by
// key, in docs/analysis.md section 11; changing it means bumping "version".
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "analysis.h"
#include "compare.h"

namespace coz::analysis {

constexpr int json_schema_version = 1;

/// One JSON object ending in a newline. Every documented key is always
/// present; NaN and infinities (undefined numbers) are written as null.
std::string to_json(const Analysis& analysis);
/// The same, written to `out` as it is made (a large profile's JSON need not
/// be held in memory whole).
void write_json(std::ostream& out, const Analysis& analysis);

/// `--compare --json`; the file lists name what was read for each side.
std::string to_json(const Comparison& comparison, const Analysis& before, const Analysis& after,
                    const std::vector<std::string>& before_files, const std::vector<std::string>& after_files);

}  // namespace coz::analysis
