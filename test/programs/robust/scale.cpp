// scale: many threads.
//
//   --live N    N threads alive at once (64 KiB stacks, each works a little,
//               then waits); while they live, main opens 16 pipes and works
//               with a progress point; then all are released and joined
//   --churn N   N short-lived threads over the run, 4 at a time, each ~25 us
//               of work and one progress point
//   --rounds N  N rounds of two threads working ~3 and ~2 ms (fork-join);
//               work_cpu_us is the thread CPU time spent in scale_work
//
// Prints "scale created=N create_failures=F open_failures=O fds_start=A
// fds_peak=B fds_end=C rss_start_kb=R rss_peak_kb=P rss_end_kb=E
// work_cpu_us=W".
#include <coz.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <vector>

#include "robust_common.h"

namespace {

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t scale_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:scale_work
  return x;
}

std::mutex g_mutex;
std::condition_variable g_release;
bool g_released = false;

void* live_thread(void*) {
  g_seed = scale_work(g_seed, robust::kStepsPerMs / 20);
  COZ_PROGRESS_NAMED("thread");
  std::unique_lock lock(g_mutex);
  g_release.wait(lock, [] { return g_released; });
  return nullptr;
}

void* short_thread(void*) {
  g_seed = scale_work(g_seed, robust::kStepsPerMs / 40);
  COZ_PROGRESS_NAMED("thread");
  return nullptr;
}

std::atomic<uint64_t> g_work_cpu_ns{0};

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

/// Works `arg` ms and adds the thread CPU time it took to g_work_cpu_ns.
void* timed_thread(void* arg) {
  const uint64_t start = thread_cpu_ns();
  const uint64_t x = scale_work(g_seed, robust::kStepsPerMs * reinterpret_cast<uintptr_t>(arg));
  g_work_cpu_ns.fetch_add(thread_cpu_ns() - start, std::memory_order_relaxed);
  g_seed = x;
  return nullptr;
}

bool create(pthread_t& thread, void* (*fn)(void*), void* arg = nullptr) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  const bool ok = pthread_create(&thread, &attr, fn, arg) == 0;
  pthread_attr_destroy(&attr);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const robust::Options options(argc, argv, {"--live=", "--churn=", "--rounds="});
  const int fds_start = robust::fd_count();
  const long rss_start = robust::status_kb("VmRSS");
  int fds_peak = fds_start;
  uint64_t created = 0, create_failures = 0, open_failures = 0;

  if (options.has("--live")) {
    const uint64_t n = options.number("--live", 1000);
    std::vector<pthread_t> threads;
    for (uint64_t i = 0; i < n; ++i) {
      pthread_t t;
      if (create(t, live_thread)) threads.push_back(t);
      else ++create_failures;
    }
    created = threads.size();
    // The program's own descriptors must still be available with all threads alive.
    std::vector<int> pipes;
    for (int i = 0; i < 16; ++i) {
      int fds[2];
      if (pipe(fds) != 0) {
        ++open_failures;
        continue;
      }
      pipes.push_back(fds[0]);
      pipes.push_back(fds[1]);
    }
    fds_peak = robust::fd_count();
    for (int fd : pipes) close(fd);
    const double end = robust::now_ms() + 300;
    while (robust::now_ms() < end) {
      g_seed = scale_work(g_seed, robust::kStepsPerMs / 4);
      COZ_PROGRESS_NAMED("main unit");
    }
    {
      std::lock_guard lock(g_mutex);
      g_released = true;
    }
    g_release.notify_all();
    for (pthread_t t : threads) pthread_join(t, nullptr);
  }
  if (options.has("--churn")) {
    const uint64_t n = options.number("--churn", 20000);
    while (created + create_failures < n) {
      pthread_t batch[4];
      int started = 0;
      for (int i = 0; i < 4 && created + create_failures < n; ++i) {
        if (create(batch[started], short_thread)) {
          ++started;
          ++created;
        } else {
          ++create_failures;
        }
      }
      for (int i = 0; i < started; ++i) pthread_join(batch[i], nullptr);
      if (created % 1000 == 0) {
        const int fds = robust::fd_count();
        if (fds > fds_peak) fds_peak = fds;
      }
    }
  }
  if (options.has("--rounds")) {
    const uint64_t n = options.number("--rounds", 600);
    for (uint64_t r = 0; r < n; ++r) {
      pthread_t pair[2];
      int started = 0;
      for (uintptr_t ms : {3, 2}) {
        if (create(pair[started], timed_thread, reinterpret_cast<void*>(ms))) {
          ++started;
          ++created;
        } else {
          ++create_failures;
        }
      }
      for (int i = 0; i < started; ++i) pthread_join(pair[i], nullptr);
      COZ_PROGRESS_NAMED("round");
    }
  }
  std::printf("scale created=%lu create_failures=%lu open_failures=%lu fds_start=%d fds_peak=%d fds_end=%d "
              "rss_start_kb=%ld rss_peak_kb=%ld rss_end_kb=%ld work_cpu_us=%lu\n",
              static_cast<unsigned long>(created), static_cast<unsigned long>(create_failures),
              static_cast<unsigned long>(open_failures), fds_start, fds_peak, robust::fd_count(), rss_start,
              robust::status_kb("VmHWM"), robust::status_kb("VmRSS"),
              static_cast<unsigned long>(g_work_cpu_ns.load() / 1000));
  return create_failures == 0 && open_failures == 0 ? 0 : 1;
}
