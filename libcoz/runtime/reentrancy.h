// The reentrancy guard: a per-thread flag set while the runtime does its own
// work on a thread of the program (the bookkeeping around a wait,
// registering a thread, mapping a library, its start-up, fork handlers and
// exit), and for the whole life of its own profiler thread.
//
// The libraries the runtime calls while it works (the allocator, the C++
// library, libelfin, fmt) may call functions libcoz.so interposes: a
// program's allocator that takes a pthread mutex, a read of a /proc file.
// Those calls are the runtime's, not the program's: they must reach the real
// function with no bookkeeping, which would re-enter the bookkeeping in
// progress (a wait recorded inside the recording of a wait, a thread paying
// its delays in the middle of paying them). A signal handler of the program
// that interrupts that work goes straight through too. The wrappers' shared
// shapes (wait.h) and the few wrappers with more to do check in_runtime().
#pragma once

#include <signal.h>

#include <atomic>

namespace coz {

namespace detail {
// Initial-exec TLS (coz_core's model): no allocation, no lock, and
// async-signal-safe to read.
inline thread_local bool tls_in_runtime = false;
inline thread_local bool tls_sealed = false;
}  // namespace detail

/// Whether the calling thread is inside the runtime's own work.
inline bool in_runtime() { return detail::tls_in_runtime; }

/// Whether the calling thread was sealed against its seccomp confinement
/// (seal_current_thread): its filter may allow none of the runtime's own
/// system calls, not a signal mask's change, not a sleep.
inline bool sealed() { return detail::tls_sealed; }

/// Marks the calling thread as inside the runtime's own work for its scope
/// (nests: the outer state is restored).
class RuntimeSection {
 public:
  RuntimeSection() : outer_(detail::tls_in_runtime) {
    detail::tls_in_runtime = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // before the work, as a signal handler sees it
  }
  ~RuntimeSection() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    detail::tls_in_runtime = outer_;
  }
  RuntimeSection(const RuntimeSection&) = delete;
  RuntimeSection& operator=(const RuntimeSection&) = delete;

  /// For a thread that must never run the runtime's bookkeeping again (its
  /// own profiler thread; a thread sealed by seccomp strict mode).
  static void enter_for_good() { detail::tls_in_runtime = true; }

 private:
  bool outer_;
};

/// Holds the program's asynchronous signals back for its scope (they are
/// delivered when it ends), around the runtime's work that holds locks its
/// exit path needs: a handler of the program that called exit() there
/// would run the runtime's last records on this thread, which would wait
/// forever for the lock the interrupted work holds (mapping a library
/// loaded with dlopen, the thread list). Faults (SIGSEGV, SIGBUS, ...) stay
/// deliverable, and so does the sample signal, whose handler takes no lock.
/// Two system calls: for work that is rare or long, not for every wait. None
/// on a sealed thread (its program's signals cannot run the runtime's exit
/// there: the profiler thread writes the last records, runtime.cpp).
class SignalsDeferred {
 public:
  SignalsDeferred() { hold(outer_); }
  ~SignalsDeferred() { release(outer_); }
  /// The same across calls (the fork handlers): `outer` keeps the mask to restore.
  static void hold(sigset_t& outer);
  static void release(const sigset_t& outer);
  SignalsDeferred(const SignalsDeferred&) = delete;
  SignalsDeferred& operator=(const SignalsDeferred&) = delete;

 private:
  sigset_t outer_;
};

}  // namespace coz
