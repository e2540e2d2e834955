// A tiny lock for the runtime's own shared state.
//
// The runtime cannot use std::mutex: libcoz.so interposes pthread_mutex_lock,
// so its own locking would run through the delay protocol. try_lock() lets
// signal-context code drop work instead of waiting.
#pragma once

#include <atomic>

namespace coz {

class SpinLock {
 public:
  bool try_lock() { return !flag_.test_and_set(std::memory_order_acquire); }
  void lock() {
    while (!try_lock()) {
      while (flag_.test(std::memory_order_relaxed)) __builtin_ia32_pause();
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
