// The sample signals, shared with the program. The runtime samples with
// SIGSTKFLT, which a program may use too (issue #14: one that did saw none
// of its 10 signals, and its last raise no longer ended it), and, where the
// kernel sends it for a thread's own perf_event (sigtrap, Linux 5.13+), with
// SIGTRAP, which debuggers and some programs use. The runtime's handler is
// the one installed, and it tells the signals apart by their siginfo: the
// kernel raises the runtime's (perf_event overflows through F_SETSIG, with
// si_code POLL_IN or POLL_HUP; the fallback's CPU-time timers, SI_TIMER with
// the runtime's tag; a sigtrap event's TRAP_PERF with the runtime's tag in
// si_perf_data), while kill, raise, tgkill and sigqueue give SI_USER,
// SI_TKILL or SI_QUEUE, and an int3 or a single step SI_KERNEL or TRAP_*.
// Those go to the program's own disposition, as the kernel would have
// delivered them: its handler, with the same siginfo and context and the
// mask its sigaction asked for; nothing under SIG_IGN; the default action
// (the process ends by the signal). The interposed sigaction and signal keep
// and report the program's disposition.
#pragma once

#include <signal.h>

#include <cstdint>

namespace coz {

/// The signal perf_event raises in the sampled thread through its
/// descriptor, and the timers' signal. A standard signal (pending signals
/// coalesce, so a flood can never overflow the real-time queue and turn into
/// SIGIO), and one that programs rarely use: SIGPROF is left to the
/// program's own profiling timers.
constexpr int sample_signal = SIGSTKFLT;

/// The signal of the samplers without a ring (sampler.cpp): the kernel sends
/// SIGTRAP, no other, for a perf_event opened with sigtrap=1.
constexpr int trap_signal = SIGTRAP;

/// Both, for the wrappers that keep them out of the program's masks.
constexpr int sample_signals[] = {sample_signal, trap_signal};

/// The value the runtime's CPU-time timers send with the sample signal.
void* timer_signal_tag();

/// The value the runtime's sigtrap events carry (perf_event_attr::sig_data).
uint64_t trap_signal_tag();

/// Whether the kernel raised this signal for the runtime (a sample), not the
/// program. Async-signal-safe.
bool is_runtime_signal(int sig, const siginfo_t* info);

/// For one of the runtime's traps: whether the kernel sent it while the
/// thread blocked SIGTRAP (TRAP_PERF_FLAG_ASYNC, Linux 6.0+), so that it
/// arrives later than its sample was taken: a sample of the sample handler
/// itself, which blocks every signal while it runs, or of code that blocked
/// the signal with the raw rt_sigprocmask. Its context is not where the
/// sample was taken.
bool trap_arrived_late(const siginfo_t* info);

/// Installs `handler` for `sig` (sample_signal or trap_signal), keeping the
/// disposition the program had as its own. The handler runs on the thread's
/// alternate signal stack (signal_stack.h), with every signal blocked.
bool install_sample_signal(int sig, void (*handler)(int, siginfo_t*, void*));

/// Whether `sig` is one of the sample signals and the runtime's handler is
/// installed for it: the interposed sigaction then keeps the program's
/// disposition aside, and the interposed masks keep the signal deliverable.
bool sample_signal_installed(int sig);

/// The interposed sigaction for an installed sample signal: reports the
/// program's disposition in `old` and keeps `action` as the program's.
/// Returns 0.
int program_sample_sigaction(int sig, const struct sigaction* action, struct sigaction* old);

/// From the runtime's handler, for a signal the program sent: what the
/// program's disposition does with it. A default action ends the process
/// (after the profile's last records) once the handler returns.
void deliver_to_program(int sig, siginfo_t* info, void* context);

}  // namespace coz
