// spinner: a thread keeps a core busy on a line nobody waits for. Main
// processes items (0.5 ms of work each, one COZ_PROGRESS per item); a second
// thread spins in spin_work until main is done. Speeding spin_work up changes
// nothing: it spins until main stops it.
//
// What it checks: at high speedups of spin_work every other thread owes
// s / (1 - s) times what it ran, paid several ms at a time; an experiment
// counted before those payments end, or payments that slow the paused
// thread down afterwards, read as an effect (+29% or -8% at 95% before the
// runtime waited for them and slept in slices).
//
// Usage: spinner [-n ITEMS] [--exit-status N]; default ~3 s.
#include <coz.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

constexpr uint64_t kItemSteps = kStepsPerMs / 2;    // 0.5 ms
constexpr uint64_t kSpinSteps = kStepsPerMs / 10;   // one chunk: 0.1 ms
constexpr uint64_t kDefaultItems = 6'000;

volatile uint64_t g_seed = 0x1234;
volatile uint64_t g_spun = 0;

__attribute__((noinline)) uint64_t item_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:item_work
  return x;
}

__attribute__((noinline)) uint64_t spin_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 30)) * 0xd6e8feb86659fd93ULL + i;  // @line:spin_work
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultItems);
  const coz_programs::Stopwatch stopwatch;

  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    uint64_t s = g_seed;
    while (!stop.load(std::memory_order_relaxed)) s = spin_work(s, kSpinSteps);
    g_spun = s;
  });

  uint64_t checksum = 0;
  for (uint64_t i = 0; i < args.n; ++i) {
    checksum ^= item_work(g_seed + i, kItemSteps);
    COZ_PROGRESS_NAMED("item done");  // @line:item_done
  }
  stop.store(true, std::memory_order_relaxed);
  spinner.join();

  std::printf("spinner items=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(checksum));
  std::fprintf(stderr, "spinner: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
