// eventfd_pool: a thread pool fed through an eventfd. A dispatcher queues
// batches of two tasks, one large (large_task, 0.6 ms) and one small
// (small_task, 0.2 ms), and announces them on an eventfd (EFD_SEMAPHORE:
// one read per task); two workers block in read() on it, each takes a
// task, runs it, and the worker that finishes a batch's last task wakes the
// dispatcher through a second eventfd; the dispatcher counts a COZ_PROGRESS
// per batch. The two tasks of a batch run in parallel, so a batch takes as
// long as its large task: halving large_task saves 0.3 of 0.6 ms (50%);
// halving small_task changes nothing (it still finishes first).
//
// Variants: -DHALVE_LARGE_WORK (real ~50%), -DHALVE_SMALL_WORK (~0%).
// Usage: eventfd_pool [-n BATCHES] [--exit-status N]; default ~4 s.
#include <coz.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

#ifdef HALVE_LARGE_WORK
constexpr uint64_t kLargeSteps = kStepsPerMs * 3 / 10;
#else
constexpr uint64_t kLargeSteps = kStepsPerMs * 6 / 10;
#endif
#ifdef HALVE_SMALL_WORK
constexpr uint64_t kSmallSteps = kStepsPerMs / 10;
#else
constexpr uint64_t kSmallSteps = kStepsPerMs * 2 / 10;
#endif
constexpr uint64_t kDefaultBatches = 6'600;  // ~0.6 ms per batch: ~4 s
constexpr int kWorkers = 2;

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t large_task(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:large_task
  return x;
}

__attribute__((noinline)) uint64_t small_task(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:small_task
  return x;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::exit(1);
  }
}

// The batch in flight: task k of it is taken by whoever claims index k.
std::atomic<int> g_next_task{0};
std::atomic<int> g_tasks_left{0};
std::atomic<uint64_t> g_checksum{0};
std::atomic<bool> g_stop{false};
uint64_t g_batch_seed = 0;

void worker(int tasks_fd, int done_fd) {
  for (;;) {
    eventfd_t one;
    check(read(tasks_fd, &one, sizeof one) == sizeof one, "read tasks");
    if (g_stop.load(std::memory_order_acquire)) return;
    int task = g_next_task.fetch_add(1, std::memory_order_acq_rel);
    uint64_t x = task == 0 ? large_task(g_batch_seed, kLargeSteps) : small_task(g_batch_seed + 1, kSmallSteps);
    g_checksum.fetch_xor(x, std::memory_order_relaxed);
    if (g_tasks_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      check(eventfd_write(done_fd, 1) == 0, "eventfd_write done");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultBatches);
  const coz_programs::Stopwatch stopwatch;

  int tasks_fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  int done_fd = eventfd(0, EFD_CLOEXEC);
  check(tasks_fd >= 0 && done_fd >= 0, "eventfd");
  std::thread workers[kWorkers];
  for (auto& w : workers) w = std::thread(worker, tasks_fd, done_fd);

  for (uint64_t b = 0; b < args.n; ++b) {
    g_batch_seed = g_seed + b;
    g_next_task.store(0, std::memory_order_relaxed);
    g_tasks_left.store(2, std::memory_order_release);
    uint64_t two = 2;
    check(write(tasks_fd, &two, sizeof two) == sizeof two, "write tasks");
    eventfd_t done;
    check(eventfd_read(done_fd, &done) == 0, "eventfd_read done");
    COZ_PROGRESS_NAMED("batch done");  // @line:batch_done
  }
  g_stop.store(true, std::memory_order_release);
  uint64_t all = kWorkers;
  check(write(tasks_fd, &all, sizeof all) == sizeof all, "write stop");
  for (auto& w : workers) w.join();

  std::printf("eventfd_pool batches=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(g_checksum.load()));
  std::fprintf(stderr, "eventfd_pool: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
