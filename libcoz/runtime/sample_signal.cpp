#include "sample_signal.h"

#include <ucontext.h>

#include <atomic>

#include "exit_signals.h"
#include "real.h"
#include "sys.h"

namespace coz {
namespace {

std::atomic<bool> g_installed{false};

/// The program's disposition for the sample signal. Written by the
/// interposed sigaction (any thread, or a handler: sigaction is
/// async-signal-safe), read by the sample handler: each write fills the
/// next of a few slots, then publishes it, so a reader never copies a
/// half-written action (unless as many writes as there are slots happen
/// while it copies one).
constexpr unsigned action_slots = 4;
struct sigaction g_actions[action_slots] = {};
std::atomic<unsigned> g_writes{0};
std::atomic<unsigned> g_current{0};

struct sigaction program_action() { return g_actions[g_current.load(std::memory_order_acquire)]; }

void set_program_action(const struct sigaction& action) {
  unsigned slot = (g_writes.fetch_add(1, std::memory_order_relaxed) + 1) % action_slots;
  g_actions[slot] = action;
  g_current.store(slot, std::memory_order_release);
}

/// One byte whose address no program can send: the tag of the runtime's timers.
const char g_timer_tag = 0;

void set_mask(const sigset_t& mask) {
  sys::raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&mask), 0, _NSIG / 8);
}

}  // namespace

void* timer_signal_tag() { return const_cast<char*>(&g_timer_tag); }

bool is_runtime_signal(const siginfo_t* info) {
  // Positive codes come from the kernel alone (sigqueue cannot send them to
  // another process); for our signal, the F_SETSIG of the perf_event
  // descriptors: POLL_IN per sample, POLL_HUP at an event limit.
  if (info->si_code > 0) return true;
  return info->si_code == SI_TIMER && info->si_value.sival_ptr == timer_signal_tag();
}

bool install_sample_signal(void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction current = {};
  if (real::functions().sigaction(sample_signal, nullptr, &current) == 0) set_program_action(current);
  struct sigaction sa = {};
  sa.sa_sigaction = handler;
  // SA_RESTART: a sample that lands while the thread enters a system call
  // must not make that call fail with EINTR. SA_ONSTACK: never on the
  // program's stack (signal_stack.h).
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigfillset(&sa.sa_mask);  // nothing interrupts the handler (it touches per-thread state)
  if (real::functions().sigaction(sample_signal, &sa, nullptr) != 0) return false;
  g_installed.store(true, std::memory_order_release);
  return true;
}

bool sample_signal_installed() { return g_installed.load(std::memory_order_acquire); }

int program_sample_sigaction(const struct sigaction* action, struct sigaction* old) {
  struct sigaction previous = program_action();
  if (action) set_program_action(*action);
  if (old) *old = previous;
  return 0;
}

void deliver_to_program(int sig, siginfo_t* info, void* context) {
  struct sigaction action = program_action();
  // SIG_IGN and SIG_DFL mean the same with SA_SIGINFO (one union member).
  if (action.sa_handler == SIG_IGN) return;
  if (action.sa_handler == SIG_DFL) {
    // SIGSTKFLT's default action ends the process.
    finish_then_default_action(sig);
    return;
  }
  if (action.sa_flags & SA_RESETHAND) {
    struct sigaction reset = {};
    reset.sa_handler = SIG_DFL;
    set_program_action(reset);
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
