// The runtime's own lock: mutual exclusion, and a waiter that sleeps rather
// than spins (a spinning waiter at real-time priority kept the holder off
// its CPU; see futex_lock.h).
#include "futex_lock.h"

#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <thread>
#include <vector>

namespace coz {
namespace {

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

TEST(FutexLock, NoIncrementIsLost) {
  FutexLock lock;
  uint64_t counter = 0;  // deliberately not atomic: only the lock protects it
  constexpr int threads = 4;
  constexpr int increments = 200'000;
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      for (int j = 0; j < increments; ++j) {
        FutexGuard guard(lock);
        ++counter;
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(counter, uint64_t{threads} * increments);
}

TEST(FutexLock, TryLockFailsWhileHeld) {
  FutexLock lock;
  ASSERT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

TEST(FutexLock, WaiterSleepsWhileTheHolderWorks) {
  FutexLock lock;
  std::atomic<bool> waiting{false};
  uint64_t waiter_cpu_ns = 0;
  lock.lock();
  std::thread waiter([&] {
    uint64_t cpu0 = thread_cpu_ns();
    waiting = true;
    lock.lock();
    waiter_cpu_ns = thread_cpu_ns() - cpu0;
    lock.unlock();
  });
  while (!waiting) std::this_thread::yield();
  constexpr uint64_t hold_ns = 100'000'000;
  timespec hold{0, static_cast<long>(hold_ns)};
  nanosleep(&hold, nullptr);
  lock.unlock();
  waiter.join();
  EXPECT_LT(waiter_cpu_ns, hold_ns / 10) << "the waiter burned CPU for most of the 100 ms wait";
}

}  // namespace
}  // namespace coz
