// `coz report`: the analysis as a ranked table for a terminal.
#pragma once

#include <cstddef>
#include <ostream>

#include "analysis.h"

namespace coz::analysis {

struct TextReportOptions {
  size_t top = 20;      // lines shown per progress point; 0 = all
  bool colour = false;  // ANSI colours (the caller decides: TTY, --no-color, NO_COLOR)
  size_t width = 100;   // terminal columns; the table uses at most 100 and at least 60
};

void write_text_report(std::ostream& out, const Analysis& analysis, const TextReportOptions& options);

}  // namespace coz::analysis
