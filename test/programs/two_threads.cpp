// two_threads: each round, main signals two worker threads and waits for both.
// One does twice the work of the other, so only the long loop bounds a round:
// speeding it up by s makes the program up to s faster (until it meets the
// short loop), speeding up the short loop does nothing.
//
// Round: long_work 4 ms || short_work 2 ms, one COZ_PROGRESS per round.
// Variants: -DHALVE_LONG_WORK (real speedup ~50%), -DHALVE_SHORT_WORK (~0%).
// Usage: two_threads [-n ROUNDS] [--exit-status N]; default ~5 s.
#include <coz.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

#ifdef HALVE_LONG_WORK
constexpr uint64_t kLongSteps = 2 * kStepsPerMs;
#else
constexpr uint64_t kLongSteps = 4 * kStepsPerMs;
#endif
#ifdef HALVE_SHORT_WORK
constexpr uint64_t kShortSteps = 1 * kStepsPerMs;
#else
constexpr uint64_t kShortSteps = 2 * kStepsPerMs;
#endif
constexpr uint64_t kDefaultRounds = 1250;  // 4 ms per round: ~5 s

volatile uint64_t g_seed = 0x1234;

// Each loop is a dependent multiply-xor chain on a runtime value: it can be
// neither removed nor vectorized, and all of it sits on the marked line.
__attribute__((noinline)) uint64_t long_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:long_work
  return x;
}

__attribute__((noinline)) uint64_t short_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:short_work
  return x;
}

// Start/finish hand-off between main and the two workers (mutex + condvars,
// so the profiler sees every wait as a pthread wait).
struct Rounds {
  std::mutex mutex;
  std::condition_variable start;
  std::condition_variable done;
  uint64_t round = 0;  // incremented by main to start a round
  int pending = 0;     // workers still busy in this round
  bool stop = false;
};

void worker(Rounds& rounds, uint64_t (*work)(uint64_t, uint64_t), uint64_t steps, uint64_t& state) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(rounds.mutex);
      rounds.start.wait(lock, [&] { return rounds.stop || rounds.round != seen; });
      if (rounds.stop) return;
      seen = rounds.round;
    }
    state = work(state, steps);
    std::lock_guard lock(rounds.mutex);
    if (--rounds.pending == 0) rounds.done.notify_one();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultRounds);
  const coz_programs::Stopwatch stopwatch;

  Rounds rounds;
  uint64_t long_state = g_seed;
  uint64_t short_state = g_seed;
  std::thread long_thread(worker, std::ref(rounds), long_work, kLongSteps, std::ref(long_state));
  std::thread short_thread(worker, std::ref(rounds), short_work, kShortSteps, std::ref(short_state));

  for (uint64_t r = 0; r < args.n; ++r) {
    {
      std::lock_guard lock(rounds.mutex);
      ++rounds.round;
      rounds.pending = 2;
    }
    rounds.start.notify_all();
    {
      std::unique_lock lock(rounds.mutex);
      rounds.done.wait(lock, [&] { return rounds.pending == 0; });
    }
    COZ_PROGRESS;  // @line:round_done
  }
  {
    std::lock_guard lock(rounds.mutex);
    rounds.stop = true;
  }
  rounds.start.notify_all();
  long_thread.join();
  short_thread.join();

  std::printf("two_threads rounds=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(long_state ^ short_state));
  std::fprintf(stderr, "two_threads: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
