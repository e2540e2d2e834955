#include "sample_signal.h"

#include <ucontext.h>

#include <atomic>
#include <cstring>

#include "exit_signals.h"
#include "real.h"
#include "sys.h"

#ifndef TRAP_PERF
#define TRAP_PERF 6  // glibc < 2.35 does not name it
#endif

namespace coz {
namespace {

/// The program's disposition for one sample signal. Written by the
/// interposed sigaction (any thread, or a handler: sigaction is
/// async-signal-safe), read by the sample handler: each write fills the
/// next of a few slots, then publishes it, so a reader never copies a
/// half-written action (unless as many writes as there are slots happen
/// while it copies one).
struct ProgramAction {
  static constexpr unsigned slots = 4;
  std::atomic<bool> installed{false};  // the runtime's handler is
  struct sigaction actions[slots] = {};
  std::atomic<unsigned> writes{0};
  std::atomic<unsigned> current{0};

  struct sigaction get() const { return actions[current.load(std::memory_order_acquire)]; }

  void set(const struct sigaction& action) {
    unsigned slot = (writes.fetch_add(1, std::memory_order_relaxed) + 1) % slots;
    actions[slot] = action;
    current.store(slot, std::memory_order_release);
  }
};

ProgramAction g_sample_action;
ProgramAction g_trap_action;

bool is_sample_signal(int sig) {
  for (int ours : sample_signals) {
    if (sig == ours) return true;
  }
  return false;
}

/// The program's disposition for `sig`, one of the sample signals.
ProgramAction& program_action_of(int sig) { return sig == trap_signal ? g_trap_action : g_sample_action; }

/// One byte whose address no program can send: the tag of the runtime's
/// timers; its address, the tag of its sigtrap events.
const char g_timer_tag = 0;

/// si_perf_data and si_perf_flags: the kernel's siginfo has them right
/// after si_addr in the fault fields (u64 data, u32 type, u32 flags:
/// asm-generic/siginfo.h), which glibc's siginfo_t does not name.
uint64_t perf_data(const siginfo_t* info) {
  uint64_t data;
  std::memcpy(&data, reinterpret_cast<const char*>(&info->si_addr) + sizeof(void*), sizeof data);
  return data;
}

uint32_t perf_flags(const siginfo_t* info) {
  uint32_t flags;
  std::memcpy(&flags, reinterpret_cast<const char*>(&info->si_addr) + sizeof(void*) + 12, sizeof flags);
  return flags;
}

constexpr uint32_t trap_perf_flag_async = 1u << 0;  // TRAP_PERF_FLAG_ASYNC

/// A trap the kernel raised for the program's own code (int3, a single
/// step, a hardware breakpoint of its own): not sent by a process.
bool is_kernel_trap(const siginfo_t* info) { return info->si_code > 0 || info->si_code == SI_KERNEL; }

void set_mask(const sigset_t& mask) {
  sys::raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&mask), 0, _NSIG / 8);
}

}  // namespace

void* timer_signal_tag() { return const_cast<char*>(&g_timer_tag); }

uint64_t trap_signal_tag() { return reinterpret_cast<uint64_t>(&g_timer_tag); }

bool is_runtime_signal(int sig, const siginfo_t* info) {
  if (sig == trap_signal) return info->si_code == TRAP_PERF && perf_data(info) == trap_signal_tag();
  // Positive codes come from the kernel alone (sigqueue cannot send them to
  // another process); for our signal, the F_SETSIG of the perf_event
  // descriptors: POLL_IN per sample, POLL_HUP at an event limit.
  if (info->si_code > 0) return true;
  return info->si_code == SI_TIMER && info->si_value.sival_ptr == timer_signal_tag();
}

bool trap_arrived_late(const siginfo_t* info) { return perf_flags(info) & trap_perf_flag_async; }

bool install_sample_signal(int sig, void (*handler)(int, siginfo_t*, void*)) {
  if (!is_sample_signal(sig)) return false;
  ProgramAction& program = program_action_of(sig);
  if (program.installed.load(std::memory_order_acquire)) return true;
  struct sigaction current = {};
  if (real::functions().sigaction(sig, nullptr, &current) == 0) program.set(current);
  struct sigaction sa = {};
  sa.sa_sigaction = handler;
  // SA_RESTART: a sample that lands while the thread enters a system call
  // must not make that call fail with EINTR. SA_ONSTACK: never on the
  // program's stack (signal_stack.h).
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigfillset(&sa.sa_mask);  // nothing interrupts the handler (it touches per-thread state)
  if (real::functions().sigaction(sig, &sa, nullptr) != 0) return false;
  program.installed.store(true, std::memory_order_release);
  return true;
}

bool sample_signal_installed(int sig) {
  return is_sample_signal(sig) && program_action_of(sig).installed.load(std::memory_order_acquire);
}

int program_sample_sigaction(int sig, const struct sigaction* action, struct sigaction* old) {
  ProgramAction& program = program_action_of(sig);
  struct sigaction previous = program.get();
  if (action) program.set(*action);
  if (old) *old = previous;
  return 0;
}

void deliver_to_program(int sig, siginfo_t* info, void* context) {
  ProgramAction& program = program_action_of(sig);
  struct sigaction action = program.get();
  // SIG_IGN and SIG_DFL mean the same with SA_SIGINFO (one union member).
  // A trap of the program's own code under SIG_IGN ends it as under SIG_DFL:
  // the kernel forces such traps (force_sig), and would have.
  const bool forced = sig == trap_signal && is_kernel_trap(info);
  if (action.sa_handler == SIG_IGN && !forced) return;
  if (action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN) {
    // Both signals' default action ends the process.
    finish_then_default_action(sig);
    return;
  }
  if (action.sa_flags & SA_RESETHAND) {
    struct sigaction reset = {};
    reset.sa_handler = SIG_DFL;
    program.set(reset);
  }
  // The mask the kernel would have set for the program's handler: the
  // interrupted code's, its sa_mask, and the signal itself unless SA_NODEFER.
  sigset_t mask = static_cast<ucontext_t*>(context)->uc_sigmask;
  sigorset(&mask, &mask, &action.sa_mask);
  if (!(action.sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
  set_mask(mask);
  if (action.sa_flags & SA_SIGINFO) {
    action.sa_sigaction(sig, info, context);
  } else {
    action.sa_handler(sig);
  }
  // Returning restores the interrupted code's mask (from the context).
}

}  // namespace coz
