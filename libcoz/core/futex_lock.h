// A small lock for the runtime's own shared state.
//
// The runtime cannot use std::mutex: libcoz.so interposes pthread_mutex_lock,
// so its own locking would run through the delay protocol. This lock calls
// the kernel's futex directly.
//
// A waiter spins briefly, then sleeps in the kernel. It used to spin with
// sched_yield instead, which livelocked with the profiler thread: that thread
// runs at SCHED_FIFO priority, where sched_yield gives the CPU to no ordinary
// thread, so when it woke on the CPU of a thread holding the lock it spun
// until the kernel moved the holder to the other core. Every thread starting
// or exiting meanwhile spun too: ~4% of a thread-churning program's CPU time.
// A sleeping waiter lets the holder run on that very CPU.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>

#include <atomic>

#include "sys.h"

namespace coz {

class FutexLock {
 public:
  bool try_lock() {
    int expected = free;
    return state_.compare_exchange_strong(expected, held, std::memory_order_acquire, std::memory_order_relaxed);
  }

  void lock() {
    // Most holds are a few instructions long: a short spin usually wins.
    for (int spins = 0; spins < 100; ++spins) {
      if (try_lock()) return;
      __builtin_ia32_pause();
    }
    // Mark the lock contended, then sleep until the holder's unlock wakes us.
    while (state_.exchange(contended, std::memory_order_acquire) != free) {
      sys::raw_syscall6(SYS_futex, reinterpret_cast<long>(&state_), FUTEX_WAIT_PRIVATE, contended, 0);
    }
  }

  void unlock() {
    if (state_.exchange(free, std::memory_order_release) == contended) {
      sys::raw_syscall6(SYS_futex, reinterpret_cast<long>(&state_), FUTEX_WAKE_PRIVATE, 1);
    }
  }

 private:
  static constexpr int free = 0;
  static constexpr int held = 1;
  static constexpr int contended = 2;  // held, and a waiter may be asleep
  std::atomic<int> state_{free};
  static_assert(sizeof(std::atomic<int>) == sizeof(int), "the kernel's futex word is an int");
};

class FutexGuard {
 public:
  explicit FutexGuard(FutexLock& lock) : lock_(lock) { lock_.lock(); }
  ~FutexGuard() { lock_.unlock(); }
  FutexGuard(const FutexGuard&) = delete;
  FutexGuard& operator=(const FutexGuard&) = delete;

 private:
  FutexLock& lock_;
};

}  // namespace coz
