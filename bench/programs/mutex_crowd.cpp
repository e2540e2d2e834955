// mutex_crowd: 64 threads on one std::mutex. Each iteration does ~2 us of
// work outside the lock, then ~0.5 us inside it, then counts a COZ_PROGRESS.
// On 2 cores most lock calls find the mutex held and sleep in the kernel:
// the overhead table's program for contended locking with many threads
// (issue #15; a full run once lost 37% of its iterations here).
//
// Usage: mutex_crowd [-n ITERATIONS] [--exit-status N] (all threads
// together); default ~4 s.
#include <coz.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

constexpr uint64_t kOutsideSteps = kStepsPerMs * 2 / 1000;
constexpr uint64_t kCriticalSteps = kStepsPerMs / 2 / 1000;
constexpr uint64_t kDefaultIterations = 2'000'000;
constexpr int kThreads = 64;

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
  uint64_t state = 0;
  uint64_t claimed = 0;  // iterations claimed so far, under the lock
};

void worker(Shared& shared, uint64_t total, int id) {
  uint64_t local = g_seed + static_cast<uint64_t>(id);
  for (;;) {
    local = outside_work(local, kOutsideSteps);
    {
      std::lock_guard lock(shared.mutex);
      if (shared.claimed == total) break;
      ++shared.claimed;
      shared.state = critical_work(shared.state, kCriticalSteps);
    }
    COZ_PROGRESS_NAMED("iteration");
  }
  g_sink = local;
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultIterations);
  const coz_programs::Stopwatch stopwatch;
  Shared shared;
  shared.state = g_seed;
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) threads.emplace_back(worker, std::ref(shared), args.n, id);
  for (std::thread& t : threads) t.join();
  const double elapsed = stopwatch.seconds();
  std::printf("mutex_crowd iterations=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(shared.state));
  std::fprintf(stderr, "mutex_crowd: elapsed=%.3f s (%.0f iterations/s)\n", elapsed, double(args.n) / elapsed);
  return args.exit_status;
}
