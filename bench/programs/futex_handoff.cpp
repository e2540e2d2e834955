// futex_handoff: two threads take strict turns through a C++20
// std::atomic<uint32_t>::wait/notify_one hand-off (libstdc++ implements it
// with syscall(SYS_futex), not with pthreads). Main runs prepare_work
// (0.6 ms) and hands the item over; the finisher runs finish_work (0.2 ms),
// counts a COZ_PROGRESS and hands the turn back. Nothing overlaps, so both
// lines are on the critical path in proportion to their time:
// halving prepare_work saves 0.3 of 0.8 ms (37.5%), halving finish_work
// saves 0.1 of 0.8 ms (12.5%).
//
// Variants: -DHALVE_PREPARE_WORK (real ~37.5%), -DHALVE_FINISH_WORK (~12.5%).
// Usage: futex_handoff [-n ITEMS] [--exit-status N]; default ~4 s.
#include <coz.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

#ifdef HALVE_PREPARE_WORK
constexpr uint64_t kPrepareSteps = kStepsPerMs * 3 / 10;
#else
constexpr uint64_t kPrepareSteps = kStepsPerMs * 6 / 10;
#endif
#ifdef HALVE_FINISH_WORK
constexpr uint64_t kFinishSteps = kStepsPerMs / 10;
#else
constexpr uint64_t kFinishSteps = kStepsPerMs * 2 / 10;
#endif
constexpr uint64_t kDefaultItems = 5'000;  // 0.8 ms per item: ~4 s

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t prepare_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:prepare_work
  return x;
}

__attribute__((noinline)) uint64_t finish_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:finish_work
  return x;
}

// turn: 0 = main prepares, 1 = the finisher finishes, 2 = stop.
std::atomic<uint32_t> g_turn{0};
uint64_t g_item = 0;  // handed over through g_turn (release/acquire)

void await_turn(uint32_t current_not) {
  for (uint32_t t = g_turn.load(std::memory_order_acquire); t == current_not; t = g_turn.load(std::memory_order_acquire)) {
    g_turn.wait(t, std::memory_order_acquire);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultItems);
  const coz_programs::Stopwatch stopwatch;

  uint64_t checksum = 0;
  std::thread finisher([&] {
    for (;;) {
      await_turn(0);
      if (g_turn.load(std::memory_order_acquire) == 2) return;
      checksum ^= finish_work(g_item, kFinishSteps);
      COZ_PROGRESS_NAMED("item finished");  // @line:item_finished
      g_turn.store(0, std::memory_order_release);
      g_turn.notify_one();
    }
  });

  uint64_t x = g_seed;
  for (uint64_t i = 0; i < args.n; ++i) {
    x = prepare_work(x + i, kPrepareSteps);
    g_item = x;
    g_turn.store(1, std::memory_order_release);
    g_turn.notify_one();
    await_turn(1);
  }
  g_turn.store(2, std::memory_order_release);
  g_turn.notify_one();
  finisher.join();

  std::printf("futex_handoff items=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(checksum));
  std::fprintf(stderr, "futex_handoff: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
