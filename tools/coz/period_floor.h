// The shortest sampling period this machine affords (`coz run --period`).
#pragma once

#include <cstdint>
#include <string>

namespace coz::cli {

/// The period to sample at for a requested `requested_ns` below 1 ms: the
/// requested one, or a longer one where one expiry of the task clock's
/// timer costs the sampled thread more than a quarter of it as experiments
/// shorten it (measured in `coz run`'s own thread before the program
/// starts, at a 50-us period: ~15 ms). sample_policy::affordable_period_ns
/// says why. `note` is set to a line for the user when the period was
/// lengthened.
uint64_t affordable_period(uint64_t requested_ns, std::string& note);

}  // namespace coz::cli
