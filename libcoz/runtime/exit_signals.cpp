#include "exit_signals.h"

#include <errno.h>

#include <atomic>
#include <iterator>

#include "real.h"
#include "sys.h"

namespace coz {
namespace {

constexpr int exit_signals[] = {SIGINT, SIGTERM, SIGHUP};

/// Per signal number: the runtime's handler is installed and the program
/// believes the action is SIG_DFL.
std::atomic<bool> g_standing_in[NSIG] = {};
void (*g_finish_profile)() = nullptr;

bool is_exit_signal(int sig) {
  for (int s : exit_signals) {
    if (s == sig) return true;
  }
  return false;
}

void on_exit_signal(int sig, siginfo_t*, void*) {
  int saved_errno = errno;
  finish_then_default_action(sig);
  errno = saved_errno;
}

/// Installs the handler for `sig`: false if the kernel refused.
bool stand_in(int sig) {
  struct sigaction action = {};
  action.sa_sigaction = &on_exit_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&action.sa_mask);  // the profile is finished once, with nothing else arriving
  if (real::functions().sigaction(sig, &action, nullptr) != 0) return false;
  g_standing_in[sig].store(true, std::memory_order_relaxed);
  return true;
}

}  // namespace

void finish_then_default_action(int sig) {
  if (g_finish_profile) g_finish_profile();
  // The default action, and the signal once more: it stays pending (blocked
  // while the handler runs) and ends the process when the handler returns.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  real::functions().sigaction(sig, &dfl, nullptr);
  g_standing_in[sig].store(false, std::memory_order_relaxed);
  sys::raw_syscall6(SYS_tgkill, sys::getpid(), sys::gettid(), sig);
}

void install_exit_signal_handlers(void (*finish_profile)()) {
  g_finish_profile = finish_profile;
  for (int sig : exit_signals) {
    struct sigaction current = {};
    if (real::functions().sigaction(sig, nullptr, &current) != 0) continue;
    bool is_default = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
    if (is_default) stand_in(sig);
  }
}

bool exit_signal_sigaction(int sig, const struct sigaction* action, struct sigaction* old, int& result) {
  if (!is_exit_signal(sig) || !g_standing_in[sig].load(std::memory_order_relaxed)) return false;
  if (old) {
    *old = {};
    old->sa_handler = SIG_DFL;
  }
  result = 0;
  if (!action) return true;
  bool to_default = !(action->sa_flags & SA_SIGINFO) && action->sa_handler == SIG_DFL;
  if (to_default) return true;  // what the program asked for is what it already sees
  g_standing_in[sig].store(false, std::memory_order_relaxed);
  result = real::functions().sigaction(sig, action, nullptr);
  return true;
}

}  // namespace coz
