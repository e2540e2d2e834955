// A tiny lock for the runtime's own shared state.
//
// The runtime cannot use std::mutex: libcoz.so interposes pthread_mutex_lock,
// so its own locking would run through the delay protocol. try_lock() lets
// signal-context code drop work instead of waiting.
#pragma once

#include <sys/syscall.h>

#include <atomic>

#include "sys.h"

namespace coz {

class SpinLock {
 public:
  bool try_lock() { return !flag_.test_and_set(std::memory_order_acquire); }
  void lock() {
    for (unsigned spins = 0; !try_lock(); ++spins) {
      // Spin briefly, then give the CPU away: with many more threads than
      // cores, a preempted holder would otherwise wait behind every spinner's
      // timeslice (1,000 threads starting at once on 2 cores did livelock).
      if (spins < 64) {
        __builtin_ia32_pause();
      } else {
        sys::raw_syscall6(SYS_sched_yield);
      }
    }
  }
  void unlock() { flag_.clear(std::memory_order_release); }

 private:
  std::atomic_flag flag_ = ATOMIC_FLAG_INIT;
};

class SpinGuard {
 public:
  explicit SpinGuard(SpinLock& lock) : lock_(lock) { lock_.lock(); }
  ~SpinGuard() { lock_.unlock(); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  SpinLock& lock_;
};

}  // namespace coz
