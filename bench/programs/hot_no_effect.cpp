// hot_no_effect: the hottest line by samples has no causal effect. Main
// processes items through three stages (stage_a, stage_b, stage_c, 0.2 ms
// each; one COZ_PROGRESS per item). A second thread spins in refresh_stats
// for the whole run, refreshing a statistic nobody waits for; it stops when
// main is done. On 2 cores the spinner owns one core: its line gets ~half of
// all samples, each stage ~1/6, yet only the stages decide the run time.
// Halving stage_b saves 0.1 of 0.6 ms per item (16.7%); halving
// refresh_stats's work per chunk changes nothing (it still spins until main
// stops it).
//
// Variants: -DHALVE_STAGE_B_WORK (real ~16.7%), -DHALVE_REFRESH_WORK (~0%).
// Usage: hot_no_effect [-n ITEMS] [--exit-status N]; default ~4 s.
#include <coz.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

constexpr uint64_t kStageSteps = kStepsPerMs / 5;  // 0.2 ms
#ifdef HALVE_STAGE_B_WORK
constexpr uint64_t kStageBSteps = kStageSteps / 2;
#else
constexpr uint64_t kStageBSteps = kStageSteps;
#endif
#ifdef HALVE_REFRESH_WORK
constexpr uint64_t kRefreshSteps = kStepsPerMs / 20;
#else
constexpr uint64_t kRefreshSteps = kStepsPerMs / 10;  // one chunk: 0.1 ms
#endif
constexpr uint64_t kDefaultItems = 6'600;  // 0.6 ms per item: ~4 s

volatile uint64_t g_seed = 0x1234;
volatile uint64_t g_stats = 0;  // written by the spinner, read by nobody on the critical path

__attribute__((noinline)) uint64_t stage_a(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:stage_a
  return x;
}

__attribute__((noinline)) uint64_t stage_b(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:stage_b
  return x;
}

__attribute__((noinline)) uint64_t stage_c(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 27)) * 0x9e3779b97f4a7c15ULL + i;  // @line:stage_c
  return x;
}

__attribute__((noinline)) uint64_t refresh_stats(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 30)) * 0xd6e8feb86659fd93ULL + i;  // @line:refresh_stats
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultItems);
  const coz_programs::Stopwatch stopwatch;

  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    uint64_t s = g_seed;
    while (!stop.load(std::memory_order_relaxed)) s = refresh_stats(s, kRefreshSteps);
    g_stats = s;
  });

  uint64_t checksum = 0;
  for (uint64_t i = 0; i < args.n; ++i) {
    uint64_t x = stage_a(g_seed + i, kStageSteps);
    x = stage_b(x, kStageBSteps);
    checksum ^= stage_c(x, kStageSteps);
    COZ_PROGRESS_NAMED("item done");  // @line:item_done
  }
  stop.store(true, std::memory_order_relaxed);
  spinner.join();

  std::printf("hot_no_effect items=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(checksum));
  std::fprintf(stderr, "hot_no_effect: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
