// The measurements; each returns its section of RESULTS.md.
#pragma once

#include "stats.h"
#include "suite.h"

namespace coz_bench {

Section measure_accuracy(const Config& config);
Section measure_overhead(const Config& config);
Section measure_startup(const Config& config);
Section measure_unwind(const Config& config);
Section measure_call_cost(const Config& config);
Section measure_time_to_answer(const Config& config);
Section measure_space(const Config& config);

/// Progress on stderr while the harness runs (not part of the results).
void progress(const std::string& message);

}  // namespace coz_bench
