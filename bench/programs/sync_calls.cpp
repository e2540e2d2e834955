// sync_calls: the cost of the interposed synchronisation calls on a
// program's own path (issue #15). For each kind, a loop of calls timed with
// CLOCK_MONOTONIC; prints "sync_calls: KIND=NS" on stderr.
//
//   mutex            pthread_mutex_lock + unlock, one thread (ns per pair)
//   mutex_contended  the same by two threads on one mutex (ns per pair, all threads)
//   cond             two threads take turns through a mutex and a condition
//                    variable: lock, wait for its turn, pass it, signal, unlock
//                    (ns per hand-off)
//   sem              two threads take turns through two semaphores: post the
//                    other's, wait on its own (ns per hand-off)
//   futex            two threads take turns through one word with
//                    syscall(SYS_futex) WAIT and WAKE (ns per hand-off)
//
// Each loop is one source line that every thread taking part runs
// (@line:KIND_loop), so that a --fixed-line run on it credits every thread
// alike and none pauses: what is measured is the wrappers, not the delays.
// Usage: sync_calls [-n CALLS]; default 400,000 per kind.
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "program_common.h"

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void report(const char* kind, uint64_t start, uint64_t calls) {
  std::fprintf(stderr, "sync_calls: %s=%.1f\n", kind, static_cast<double>(now_ns() - start) / static_cast<double>(calls));
}

/// Runs `side(0)` and `side(1)` on two threads; returns when both are done.
template <typename Side>
void two_threads(Side side) {
  std::thread other(side, 1);
  side(0);
  other.join();
}

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
volatile uint64_t g_counter = 0;
volatile uint64_t g_shared_counter = 0;  // its own, so the compiler does not fold the two loops into one
int g_turn = 0;  // cond: whose turn, under g_mutex
sem_t g_sems[2];
std::atomic<uint32_t> g_word{0};  // futex: whose turn

void mutex_pairs(uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) { pthread_mutex_lock(&g_mutex); g_counter = g_counter + 1; pthread_mutex_unlock(&g_mutex); } // @line:mutex_loop
}

void mutex_contended_pairs(uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) { pthread_mutex_lock(&g_mutex); g_shared_counter = g_shared_counter + 1; pthread_mutex_unlock(&g_mutex); } // @line:mutex_contended_loop
}

void cond_turns(int me, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) { pthread_mutex_lock(&g_mutex); while (g_turn != me) pthread_cond_wait(&g_cond, &g_mutex); g_turn = 1 - me; pthread_cond_signal(&g_cond); pthread_mutex_unlock(&g_mutex); } // @line:cond_loop
}

void sem_turns(int me, uint64_t n) {
  // Side 0 starts; its first wait is skipped, so side 1's last post stays unclaimed.
  for (uint64_t i = 0; i < n; ++i) { if (me == 1 || i > 0) sem_wait(&g_sems[me]); sem_post(&g_sems[1 - me]); } // @line:sem_loop
}

long futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op | FUTEX_PRIVATE_FLAG, value, nullptr, nullptr, 0);
}

void futex_turns(uint32_t me, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) { for (uint32_t w; (w = g_word.load()) != me;) futex(&g_word, FUTEX_WAIT, w); g_word.store(1 - me); futex(&g_word, FUTEX_WAKE, 1); } // @line:futex_loop
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, 400'000);
  const uint64_t n = args.n;

  uint64_t start = now_ns();
  mutex_pairs(n);
  report("mutex", start, n);

  start = now_ns();
  two_threads([n](int) { mutex_contended_pairs(n / 2); });
  report("mutex_contended", start, n / 2 * 2);

  // Hand-offs block every time (the other side is asleep or about to be):
  // a tenth as many keeps each kind near the others' time.
  const uint64_t turns = n / 10;
  start = now_ns();
  two_threads([turns](int me) { cond_turns(me, turns); });
  report("cond", start, 2 * turns);

  sem_init(&g_sems[0], 0, 0);
  sem_init(&g_sems[1], 0, 0);
  start = now_ns();
  two_threads([turns](int me) { sem_turns(me, turns); });
  report("sem", start, 2 * turns);

  start = now_ns();
  two_threads([turns](int me) { futex_turns(static_cast<uint32_t>(me), turns); });
  report("futex", start, 2 * turns);
  return 0;
}
