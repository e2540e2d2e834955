// endings: the ways a process ends while its threads are running and the
// profiler is mid-experiment. Two worker threads visit a progress point
// ("unit") all the time; after --ms of work the chosen ending happens.
//
//   --exit-thread     a worker calls exit(7)
//   --return-main     main returns 5 without stopping the workers
//   --pthread-exit    main calls pthread_exit; the last worker exits 0 after --ms more
//   --abort           main calls abort() (no handler)
//   --forever         prints "ready" after --ms and works until killed
#include <coz.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "robust_common.h"

namespace {

volatile uint64_t g_seed = 0x1234;
std::atomic<bool> g_exit_from_worker{false};
std::atomic<int> g_workers_left{2};
double g_worker_end_ms = 0;  // workers stop then (0: never)

__attribute__((noinline)) uint64_t ending_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:ending_work
  return x;
}

void* worker(void*) {
  uint64_t x = g_seed;
  for (;;) {
    x = ending_work(x, robust::kStepsPerMs / 4);
    COZ_PROGRESS_NAMED("unit");
    // exchange: exactly one worker exits; two threads in exit() at once
    // race each other's exit handlers (glibc), which is not this scenario.
    if (g_exit_from_worker.exchange(false)) {
      robust::say("endings: exit from a worker thread\n");
      std::exit(7);
    }
    if (g_worker_end_ms > 0 && robust::now_ms() > g_worker_end_ms) break;
  }
  g_seed = x;
  if (g_workers_left.fetch_sub(1) == 1) robust::say("endings: last worker done\n");
  return nullptr;
}

void work_ms(double ms) {
  const double end = robust::now_ms() + ms;
  uint64_t x = g_seed;
  while (robust::now_ms() < end) x = ending_work(x, robust::kStepsPerMs / 4);
  g_seed = x;
}

}  // namespace

int main(int argc, char** argv) {
  const robust::Options options(argc, argv,
                                {"--exit-thread", "--return-main", "--pthread-exit", "--abort", "--forever", "--ms="});
  const double ms = static_cast<double>(options.number("--ms", 1000));
  if (options.has("--pthread-exit")) g_worker_end_ms = robust::now_ms() + 2 * ms;
  for (int i = 0; i < 2; ++i) {
    pthread_t thread;
    pthread_create(&thread, nullptr, worker, nullptr);
    pthread_detach(thread);
  }
  work_ms(ms);
  if (options.has("--exit-thread")) {
    g_exit_from_worker = true;
    for (;;) pause();
  }
  if (options.has("--return-main")) {
    robust::say("endings: main returns\n");
    return 5;
  }
  if (options.has("--pthread-exit")) {
    robust::say("endings: main calls pthread_exit\n");
    pthread_exit(nullptr);
  }
  if (options.has("--abort")) std::abort();
  if (options.has("--forever")) {
    // The program never set these: it must see them at their default action.
    bool all_default = true;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction current;
      sigaction(sig, nullptr, &current);
      all_default = all_default && !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
    }
    robust::say(all_default ? "dispositions: default\n" : "dispositions: changed\n");
    robust::say("ready\n");
    for (;;) work_ms(100);
  }
  return 0;
}
