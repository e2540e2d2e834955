// `coz report`: the analysis as a ranked table for a terminal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "analysis.h"
#include "compare.h"

namespace coz::analysis {

struct TextReportOptions {
  size_t top = 20;      // lines shown per progress point; 0 = all
  bool colour = false;  // ANSI colours (the caller decides: TTY, --no-color, NO_COLOR)
  size_t width = 100;   // terminal columns; the table uses at most 100 and at least 60
};

void write_text_report(std::ostream& out, const Analysis& analysis, const TextReportOptions& options);

/// What the compare table's header says about the two sides.
struct CompareTextInfo {
  std::string before_name;
  std::string after_name;
  uint64_t before_experiments = 0;
  uint64_t after_experiments = 0;
};

/// `coz report --compare`: per progress point, the program's own change, then
/// a table of lines whose impact changed most.
void write_compare_report(std::ostream& out, const Comparison& comparison, const CompareTextInfo& info,
                          const TextReportOptions& options);

}  // namespace coz::analysis
