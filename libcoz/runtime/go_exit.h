// A Go program ends with its own raw exit_group (runtime.exit), not through
// the C library's exit: no destructor runs, and the profile lost its last
// records (the sampling totals, the run's time, the samples since the last
// experiment). In a Go program the runtime redirects runtime.exit to its own
// exit path, which finishes the profile first (issue #52).
#pragma once

#include <cstdint>

namespace coz {

/// Redirects the Go program's runtime.exit, at `address` in memory, to call
/// `finish` (on a stack of the runtime's: a goroutine's may be 2 KiB) and
/// then end the process with runtime.exit's status. Only if its code is the
/// one known (Go 1.19 to 1.26: load the status, exit_group, ret); false, and
/// nothing changed, otherwise. At start-up, before the Go program runs.
bool redirect_go_exit(uint64_t address, void (*finish)());

}  // namespace coz
