// shared_lib: each call does 0.75 ms in libhotloop.so's hot_loop and 0.25 ms
// in this executable's main_work, then one COZ_PROGRESS_NAMED("call").
// Single-threaded, so speeding the hot loop up by s shortens a call by 0.75 s.
// Variant: shared_lib_main_fast_hot links the HALVE_HOT_LOOP library
// (real speedup ~37.5%).
// Usage: shared_lib_main [-n CALLS] [--exit-status N]; default ~5 s.
#include <coz.h>

#include <cstdint>
#include <cstdio>

#include "hotloop.h"
#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

constexpr uint64_t kHotSteps = kStepsPerMs * 3 / 4;
constexpr uint64_t kMainSteps = kStepsPerMs / 4;
constexpr uint64_t kDefaultCalls = 5'000;  // 1 ms per call: ~5 s

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t main_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:main_work
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultCalls);
  const coz_programs::Stopwatch stopwatch;

  uint64_t x = g_seed;
  for (uint64_t i = 0; i < args.n; ++i) {
    x = hot_loop(x, kHotSteps);
    x = main_work(x, kMainSteps);
    COZ_PROGRESS_NAMED("call");  // @line:call_done
  }

  std::printf("shared_lib calls=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(x));
  std::fprintf(stderr, "shared_lib: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
