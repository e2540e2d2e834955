// The one line `coz run` keeps updated on a terminal while the program runs
// (docs/settling.md): elapsed time, experiments, the leading line with its
// interval, lines settled and open, and the time left to settle the top lines.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "settling.h"

namespace coz::cli {

struct StatusInput {
  uint64_t elapsed_ns = 0;
  uint64_t run_experiments = 0;  // written by this run's processes
  const analysis::Settling* state = nullptr;
  size_t top = analysis::default_settle_top;
  std::optional<double> seconds_left;  // to settle the top lines; nullopt: unknown
  std::string stopped;                 // why the experiments stopped; empty: running
};

/// The status text, at most `width` columns (no escape sequences).
std::string format_status(const StatusInput& in, size_t width);

}  // namespace coz::cli
