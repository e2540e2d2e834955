// wake_cost: what waking a sleeping thread costs, against how long it slept,
// with no profiler around it (issue #48, docs/delays.md). Thread A waits on
// a futex; thread B spins SLEEP_US, then wakes it and times its own
// FUTEX_WAKE call and how long A took to run again. Prints one line per
// sleep length:
//
//   build/bench/wake_cost [SLEEP_US...]   (default: 2 5 10 20 40 80 160 400)
//
// Why it matters: a virtual speedup pauses the other threads but does not
// shorten their sleeps in real time. Where the hardware makes a wake
// cheaper after a short sleep (an idle CPU still polling, a shallow C-state)
// a really faster line makes its hand-offs cheaper too, and pauses cannot
// show that part.
//
// Measured 2026-12-07 (Firecracker VM, 2 cores, cpuidle haltpoll with
// guest_halt_poll_ns=0, 20,000 wakes each): after sleeps of 2-5 us the
// FUTEX_WAKE call took 1.0 us (median) and the sleeper ran again 8-11 us
// later; after 10 us and more, 7.7-8.5 us and 23-35 us. A two-stage
// pipeline whose consumer (the bottleneck) wakes the producer on every item
// pays ~8 us a wake at 16 us of work an item and ~1 us once that work is
// halved (the producer then sleeps only briefly): halving the line gives
// +55% for real, and the prediction, whose sleeps stay long, +41%.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

std::atomic<int> g_word{0};

uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

void futex_wait(int expected) {
  syscall(SYS_futex, &g_word, FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake() { syscall(SYS_futex, &g_word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0); }

double median_us(std::vector<uint64_t>& ns) {
  std::sort(ns.begin(), ns.end());
  return static_cast<double>(ns[ns.size() / 2]) / 1e3;
}

double p90_us(std::vector<uint64_t>& ns) {
  std::sort(ns.begin(), ns.end());
  return static_cast<double>(ns[ns.size() * 9 / 10]) / 1e3;
}

// Round r: A announces it waits (ready = r + 1) and sleeps while the word
// is 2r; B spins, sets 2r + 1 and wakes it; A notes when it ran and sets
// 2r + 2, which B waits for before the next round.
void measure(uint64_t sleep_us, int rounds) {
  g_word.store(0);
  std::atomic<int> ready{0};
  std::atomic<uint64_t> woke_at{0};
  std::thread sleeper([&] {
    for (int r = 0; r < rounds; ++r) {
      ready.store(r + 1);
      while (g_word.load() == 2 * r) futex_wait(2 * r);
      woke_at.store(now_ns());
      g_word.store(2 * r + 2);
    }
  });
  std::vector<uint64_t> call, latency;
  for (int r = 0; r < rounds; ++r) {
    while (ready.load() != r + 1) {
    }
    const uint64_t spin_start = now_ns();
    while (now_ns() - spin_start < sleep_us * 1000) {
    }
    const uint64_t before = now_ns();
    g_word.store(2 * r + 1);
    futex_wake();
    const uint64_t after = now_ns();
    while (g_word.load() != 2 * r + 2) {
    }
    call.push_back(after - before);
    latency.push_back(woke_at.load() - before);
  }
  sleeper.join();
  std::printf("slept ~%4llu us: wake call %5.1f us (p90 %5.1f), ran again after %5.1f us (p90 %5.1f)\n",
              static_cast<unsigned long long>(sleep_us), median_us(call), p90_us(call), median_us(latency),
              p90_us(latency));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint64_t> sleeps;
  for (int i = 1; i < argc; ++i) sleeps.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sleeps.empty()) sleeps = {2, 5, 10, 20, 40, 80, 160, 400};
  for (uint64_t us : sleeps) measure(us, 20'000);
}
