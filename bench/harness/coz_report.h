// `coz report --json` of a profile, parsed: what the bench's sections and
// the space runner read.
#pragma once

#include <optional>
#include <string>

#include "json.h"

namespace coz_bench {

/// Runs `COZ report --json PROFILE` (at `nice`, 2 minutes at most) and
/// parses its output; nullopt with `error` set when either fails.
std::optional<json::Value> coz_report_json(const std::string& coz, const std::string& profile, std::string& error,
                                           int nice = 0);

}  // namespace coz_bench
