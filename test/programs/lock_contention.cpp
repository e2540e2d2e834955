// lock_contention: 4 workers on a 2-core machine; each iteration does some
// work outside a shared std::mutex, then 3x as much inside it. The critical
// section serializes everything: throughput = 1 / (critical-section time)
// while 4 workers keep the lock busy, so speeding the critical line up by s
// helps by s (CPU would only bound it past s ~ 0.6: 2 cores / 1 ms per
// iteration), speeding the outside line up does nothing.
//
// Per iteration: outside_work 0.25 ms, critical_work 0.75 ms (under the lock);
// COZ_PROGRESS after each completed iteration. The run ends after a fixed
// total number of iterations claimed under the lock, so no thread trails.
// Variants: -DHALVE_CRITICAL_WORK (real speedup ~45-50%), -DHALVE_OUTSIDE_WORK (~0%).
// Usage: lock_contention [-n ITERATIONS] [--exit-status N]; default ~5 s.
#include <coz.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

#ifdef HALVE_OUTSIDE_WORK
constexpr uint64_t kOutsideSteps = kStepsPerMs / 8;
#else
constexpr uint64_t kOutsideSteps = kStepsPerMs / 4;
#endif
#ifdef HALVE_CRITICAL_WORK
constexpr uint64_t kCriticalSteps = kStepsPerMs * 3 / 8;
#else
constexpr uint64_t kCriticalSteps = kStepsPerMs * 3 / 4;
#endif
constexpr uint64_t kDefaultIterations = 6'600;  // 0.75 ms each, serialized: ~5 s
constexpr int kWorkers = 4;

volatile uint64_t g_seed = 0x1234;
volatile uint64_t g_sink = 0;

__attribute__((noinline)) uint64_t outside_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:outside_work
  return x;
}

__attribute__((noinline)) uint64_t critical_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:critical_work
  return x;
}

struct Shared {
  std::mutex mutex;
  uint64_t state = 0;      // chained through every critical section: deterministic
  uint64_t completed = 0;  // iterations claimed so far
};

void worker(Shared& shared, uint64_t total, int id) {
  uint64_t local = g_seed + static_cast<uint64_t>(id);
  for (;;) {
    local = outside_work(local, kOutsideSteps);
    {
      std::lock_guard lock(shared.mutex);
      if (shared.completed == total) break;
      ++shared.completed;
      shared.state = critical_work(shared.state, kCriticalSteps);
    }
    COZ_PROGRESS;  // @line:iteration_done
  }
  g_sink = local;
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultIterations);
  const coz_programs::Stopwatch stopwatch;

  Shared shared;
  shared.state = g_seed;
  std::vector<std::thread> workers;
  for (int id = 0; id < kWorkers; ++id) workers.emplace_back(worker, std::ref(shared), args.n, id);
  for (std::thread& t : workers) t.join();

  std::printf("lock_contention iterations=%llu checksum=%016llx\n",
              static_cast<unsigned long long>(args.n), static_cast<unsigned long long>(shared.state));
  std::fprintf(stderr, "lock_contention: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
