// The sample signal, shared with the program. The runtime samples with
// SIGSTKFLT, which a program may use too (issue #14: one that did saw none
// of its 10 signals, and its last raise no longer ended it). The runtime's
// handler is the one installed, and it tells the signals apart by their
// siginfo: the kernel raises the runtime's (perf_event overflows through
// F_SETSIG, with si_code POLL_IN or POLL_HUP; the fallback's CPU-time
// timers, SI_TIMER with the runtime's tag), while kill, raise, tgkill and
// sigqueue give SI_USER, SI_TKILL or SI_QUEUE. Those go to the program's own
// disposition, as the kernel would have delivered them: its handler, with
// the same siginfo and context and the mask its sigaction asked for;
// nothing under SIG_IGN; the default action (the process ends by the
// signal). The interposed sigaction and signal keep and report the
// program's disposition.
#pragma once

#include <signal.h>

namespace coz {

/// The signal perf_event raises in the sampled thread. A standard signal
/// (pending signals coalesce, so a flood can never overflow the real-time
/// queue and turn into SIGIO), and one that programs rarely use: SIGPROF is
/// left to the program's own profiling timers.
constexpr int sample_signal = SIGSTKFLT;

/// The value the runtime's CPU-time timers send with the sample signal.
void* timer_signal_tag();

/// Whether the kernel raised this signal for the runtime (a sample), not the
/// program. Async-signal-safe.
bool is_runtime_signal(const siginfo_t* info);

/// Installs `handler` for the sample signal, keeping the disposition the
/// program had as its own. The handler runs on the thread's alternate
/// signal stack (signal_stack.h), with every signal blocked.
bool install_sample_signal(void (*handler)(int, siginfo_t*, void*));

/// Whether the runtime's handler is installed (the interposed sigaction
/// then keeps the program's disposition aside).
bool sample_signal_installed();

/// The interposed sigaction for the sample signal: reports the program's
/// disposition in `old` and keeps `action` as the program's. Returns 0.
int program_sample_sigaction(const struct sigaction* action, struct sigaction* old);

/// From the runtime's handler, for a signal the program sent: what the
/// program's disposition does with it. A default action ends the process
/// (after the profile's last records) once the handler returns.
void deliver_to_program(int sig, siginfo_t* info, void* context);

}  // namespace coz
