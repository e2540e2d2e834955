// SIGINT, SIGTERM and SIGHUP left at their default action end the process
// at once, before the runtime writes its last records (the experiment in
// progress, the samples, the run time): a server stopped the usual way would
// leave a profile without its `runtime` record. While the program leaves one
// of them at SIG_DFL, the runtime's handler stands in: it has the profiler
// thread finish the profile, then delivers the signal again with the default
// action, so the process ends exactly as it would have (same signal, same
// status). The program never sees the handler: sigaction and signal report
// SIG_DFL, and any action the program installs replaces it.
#pragma once

#include <signal.h>

namespace coz {

/// Start-up: stands in for the signals still at SIG_DFL. `finish_profile`
/// is called from the handler (it must be async-signal-safe and bounded).
void install_exit_signal_handlers(void (*finish_profile)());

/// From a handler that has `sig` blocked, for a signal whose disposition is
/// its default action and that action ends the process: finishes the
/// profile, restores SIG_DFL and raises `sig` again, so that the process
/// ends by it once the handler returns (also serves the sample signal,
/// sample_signal.h).
void finish_then_default_action(int sig);

/// The interposed sigaction/signal: true if `sig` is one the runtime stands
/// in for, after doing what the program asked (`result` is sigaction's).
bool exit_signal_sigaction(int sig, const struct sigaction* action, struct sigaction* old, int& result);

}  // namespace coz
