#include "reentrancy.h"

#include <sys/syscall.h>

#include "sampler.h"
#include "sys.h"

namespace coz {

namespace {
/// The kernel's signal set is 64 bits, glibc's sigset_t larger.
constexpr long kernel_sigset_bytes = 8;
}  // namespace

void SignalsDeferred::hold(sigset_t& outer) {
  if (detail::tls_sealed) return;
  sigset_t held;
  sigfillset(&held);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, sample_signal}) sigdelset(&held, sig);
  // The raw call: the interposed sigprocmask keeps the program's view of its mask.
  sys::raw_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, reinterpret_cast<long>(&held), reinterpret_cast<long>(&outer),
                    kernel_sigset_bytes);
}

void SignalsDeferred::release(const sigset_t& outer) {
  if (detail::tls_sealed) return;
  // The signals held back are handled as this call returns: by the
  // program's handlers, whose calls are the program's, not the runtime's.
  const bool inside = detail::tls_in_runtime;
  detail::tls_in_runtime = false;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  sys::raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&outer), 0, kernel_sigset_bytes);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  detail::tls_in_runtime = inside;
}

}  // namespace coz
