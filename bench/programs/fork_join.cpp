// fork_join: each round, main forks two threads (std::thread, so
// pthread_create/pthread_join) that compute unequal parts, joins both, and
// counts one COZ_PROGRESS. left_part takes 3 ms, right_part 2 ms: a round is
// max(left, right) = 3 ms. Halving left_part makes a round max(1.5, 2) = 2 ms,
// a real speedup of 1/3, not 1/2: the right part becomes the critical path.
// Halving right_part does nothing. A profiler that scales the hottest line's
// share linearly predicts 50% for left_part; the causal answer is ~33%.
//
// Variants: -DHALVE_LEFT_WORK (real ~33%), -DHALVE_RIGHT_WORK (~0%).
// Usage: fork_join [-n ROUNDS] [--exit-status N]; default ~4 s.
#include <coz.h>

#include <cstdint>
#include <cstdio>
#include <thread>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

#ifdef HALVE_LEFT_WORK
constexpr uint64_t kLeftSteps = kStepsPerMs * 3 / 2;
#else
constexpr uint64_t kLeftSteps = kStepsPerMs * 3;
#endif
#ifdef HALVE_RIGHT_WORK
constexpr uint64_t kRightSteps = kStepsPerMs * 1;
#else
constexpr uint64_t kRightSteps = kStepsPerMs * 2;
#endif
constexpr uint64_t kDefaultRounds = 1'300;  // 3 ms per round: ~4 s

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t left_part(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:left_part
  return x;
}

__attribute__((noinline)) uint64_t right_part(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:right_part
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultRounds);
  const coz_programs::Stopwatch stopwatch;

  uint64_t left = g_seed;
  uint64_t right = g_seed;
  for (uint64_t r = 0; r < args.n; ++r) {
    std::thread left_thread([&] { left = left_part(left + r, kLeftSteps); });
    std::thread right_thread([&] { right = right_part(right + r, kRightSteps); });
    left_thread.join();
    right_thread.join();
    COZ_PROGRESS_NAMED("round");  // @line:round_done
  }

  std::printf("fork_join rounds=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(left ^ right));
  std::fprintf(stderr, "fork_join: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
