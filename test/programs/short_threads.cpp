// short_threads: a detached thread per task, each shorter than the
// scheduler's tick. Each round, main starts two detached threads, one for
// task_a (2.5 ms), one for task_b (1.5 ms), and waits on a condition
// variable until both have counted themselves done; then it counts one
// COZ_PROGRESS. A round is max(a, b) = 2.5 ms; halving task_a makes it
// max(1.25, 1.5) = 1.5 ms, a real speedup of ~40%; halving task_b does
// nothing. Every thread is new, sampled from its first period (a random
// phase) to its end, and what ends a round is a condition variable signalled
// by the last thread, not a join. (Main waits rather than doing task_b
// itself: a thread started by a busy main often sat on main's CPU for a
// while, and the truth moved with the scheduler.) Threads this short are
// what CPU-time timers, which fire on the 4 ms tick, sample worst
// (bench/RESULTS.md, stop 37).
//
// Variants: -DHALVE_TASK_A (real ~40%), -DHALVE_TASK_B (~0%). Ground truth:
// test/integration/integration_test.cpp.
// Usage: short_threads [-n ROUNDS] [--exit-status N]; default ~3.5 s.
#include <coz.h>
#include <pthread.h>

#include <cstdint>
#include <cstdio>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

#ifdef HALVE_TASK_A
constexpr uint64_t kTaskASteps = kStepsPerMs * 5 / 4;
#else
constexpr uint64_t kTaskASteps = kStepsPerMs * 5 / 2;
#endif
#ifdef HALVE_TASK_B
constexpr uint64_t kTaskBSteps = kStepsPerMs * 3 / 4;
#else
constexpr uint64_t kTaskBSteps = kStepsPerMs * 3 / 2;
#endif
constexpr uint64_t kDefaultRounds = 1'400;  // 2.5 ms each: ~3.5 s

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t task_a(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:task_a
  return x;
}

__attribute__((noinline)) uint64_t task_b(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:task_b
  return x;
}

struct Round {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
  int running = 0;
  uint64_t a = 0, b = 0;
};

void finish(Round& round) {
  pthread_mutex_lock(&round.mutex);
  if (--round.running == 0) pthread_cond_signal(&round.all_done);
  pthread_mutex_unlock(&round.mutex);
}

void* run_task_a(void* arg) {
  auto& round = *static_cast<Round*>(arg);
  round.a = task_a(round.a, kTaskASteps);
  finish(round);
  return nullptr;
}

void* run_task_b(void* arg) {
  auto& round = *static_cast<Round*>(arg);
  round.b = task_b(round.b, kTaskBSteps);
  finish(round);
  return nullptr;
}

bool start_detached(void* (*task)(void*), Round& round) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const bool started = pthread_create(&thread, &attr, task, &round) == 0;
  pthread_attr_destroy(&attr);
  return started;
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultRounds);
  const coz_programs::Stopwatch stopwatch;

  Round round;
  round.a = g_seed;
  round.b = g_seed + 1;
  for (uint64_t n = 0; n < args.n; ++n) {
    pthread_mutex_lock(&round.mutex);
    round.running = 2;
    pthread_mutex_unlock(&round.mutex);
    if (!start_detached(run_task_a, round) || !start_detached(run_task_b, round)) {
      std::fprintf(stderr, "short_threads: pthread_create failed\n");
      return 1;
    }
    pthread_mutex_lock(&round.mutex);
    while (round.running > 0) pthread_cond_wait(&round.all_done, &round.mutex);
    pthread_mutex_unlock(&round.mutex);
    COZ_PROGRESS;  // @line:round_done
  }

  std::printf("short_threads rounds=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(round.a ^ round.b));
  std::fprintf(stderr, "short_threads: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
