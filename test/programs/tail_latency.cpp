// tail_latency: a server's thread pool where a few requests take a slow path.
// An acceptor thread generates requests open-loop (Poisson arrivals: each
// exponential gap, from a seeded PRNG, slept out on CLOCK_MONOTONIC from the
// last arrival as accepted; never waiting for earlier requests to finish) and
// hands each to the workers through a mutex + condition-variable queue. It
// marks COZ_BEGIN_KEY("request", id) when it accepts request `id`; the worker
// that serves it runs common_work (0.2 ms) and, for ~1.5% of the requests,
// slow_path_work (1 ms) too, then marks COZ_END_KEY("request", id). The slow
// requests are chosen by a hash of the id (1.6% of them): the same ones in
// every variant.
//
// Default: 2 workers, 4,000 requests/s, 7 s of requests. Mean service time
// 0.215 ms: the workers are ~45% busy (~50% of 2 cores with the hand-offs).
// The slow path is ~7% of the mean service time but more than 1% of the
// requests, so it decides the p99 (the 99th percentile falls among the slow
// requests), while the common work decides the mean and the median.
// Measured (plain runs, idle 2-core VM, bench/tail/run: median of per-round
// changes, 5 interleaved rounds), ~3,650 requests/s (each gap also holds the
// acceptor's wake-up):
//   tail_latency                 mean ~270 us, p50 ~222, p95 ~425, p99 ~1230
//   -DHALVE_SLOW_PATH_WORK       mean +5.5%, p50 +0.2%, p95 +7.9%, p99 +41.0%
//   -DHALVE_COMMON_WORK          mean +46%,  p50 +46%,  p95 +58%,  p99 +5.3%
// (positive = faster). Measure it without SCHED_FIFO: FIFO workers keep the
// acceptor off the CPUs while both are busy, so the requests that arrive
// meanwhile are accepted late and their queueing is not counted (p95 426 us).
//
// With --same-thread there is no acceptor and no queue: each worker paces its
// own open-loop arrivals (RATE / WORKERS each) and marks COZ_BEGIN("request")
// and COZ_END("request") on its own thread. A per-thread begin cannot mark an
// arrival the thread was too busy to see, so this mode measures from the
// moment the worker starts the request: service time only, no queueing.
//
// Usage: tail_latency [-n REQUESTS] [-r RATE] [-t WORKERS] [--same-thread]
//                     [--exit-status N]; default -n is 7 s of requests at RATE.
// Stdout: the request count and an order-independent checksum. Stderr: one
// line with the program's own measurement of the latency of the requests
// accepted after a 0.5 s warm-up, from the moment each request is accepted
// (its COZ_BEGIN) to the end of its service (its COZ_END):
//   tail_latency: requests=N rate=R workers=W mean_us= p50_us= p95_us= p99_us=
//   throughput= (requests/s) mode= measured= slow= common_us= slow_us=
//   late_mean_us= (how late the arrivals were accepted) elapsed=
#include <coz.h>

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

constexpr uint64_t kCommonUs = 200;
constexpr uint64_t kSlowUs = 1'000;
#ifdef HALVE_COMMON_WORK
constexpr uint64_t kCommonSteps = kStepsPerMs * kCommonUs / 2'000;
#else
constexpr uint64_t kCommonSteps = kStepsPerMs * kCommonUs / 1'000;
#endif
#ifdef HALVE_SLOW_PATH_WORK
constexpr uint64_t kSlowSteps = kStepsPerMs * kSlowUs / 2'000;
#else
constexpr uint64_t kSlowSteps = kStepsPerMs * kSlowUs / 1'000;
#endif
constexpr uint64_t kSlowPerMille = 15;  // 1.5% of the requests take the slow path
constexpr double kDefaultRate = 4'000;  // requests per second
constexpr double kDefaultSeconds = 7;   // default -n: this long at the rate
constexpr int kDefaultWorkers = 2;
constexpr uint64_t kWarmupNs = 500'000'000;
constexpr uint64_t kSeed = 0x7a11'1a7e'5eed'0001ULL;

volatile uint64_t g_sink = 0;

__attribute__((noinline)) uint64_t common_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:common_work
  return x;
}

__attribute__((noinline)) uint64_t slow_path_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:slow_path_work
  return x;
}

uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool is_slow(uint64_t id) { return mix64(id + 0x51ea'd0ff) % 1000 < kSlowPerMille; }

// Exponential gaps of a given mean from a splitmix64 stream.
class Arrivals {
 public:
  Arrivals(uint64_t seed, double rate) : state_(seed), mean_gap_ns_(1e9 / rate) {}
  uint64_t next_gap_ns() {
    state_ += 0x9e3779b97f4a7c15ULL;
    const double u = static_cast<double>(mix64(state_) >> 11) * 0x1.0p-53;  // [0, 1)
    return static_cast<uint64_t>(-std::log1p(-u) * mean_gap_ns_);
  }

 private:
  uint64_t state_;
  double mean_gap_ns_;
};

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// Sleeps until `deadline` (CLOCK_MONOTONIC ns); returns at once if it has passed.
void sleep_until(uint64_t deadline) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(deadline / 1'000'000'000ULL);
  ts.tv_nsec = static_cast<long>(deadline % 1'000'000'000ULL);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

struct Options {
  uint64_t requests = 0;
  double rate = kDefaultRate;
  int workers = kDefaultWorkers;
  bool same_thread = false;
  int exit_status = 0;
};

[[noreturn]] void usage(const char* argv0, const char* bad) {
  std::fprintf(stderr,
               "%s: bad argument '%s' (usage: %s [-n REQUESTS] [-r RATE] [-t WORKERS] [--same-thread] "
               "[--exit-status N])\n",
               argv0, bad, argv0);
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  bool have_n = false;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strcmp(arg, "--same-thread") == 0) {
      o.same_thread = true;
      continue;
    }
    if (i + 1 >= argc) usage(argv[0], arg);
    const char* value = argv[++i];
    char* end = nullptr;
    if (std::strcmp(arg, "-n") == 0) {
      o.requests = std::strtoull(value, &end, 10);
      have_n = true;
    } else if (std::strcmp(arg, "-r") == 0) {
      o.rate = std::strtod(value, &end);
      if (!(o.rate > 0)) usage(argv[0], value);
    } else if (std::strcmp(arg, "-t") == 0) {
      o.workers = static_cast<int>(std::strtol(value, &end, 10));
      if (o.workers < 1 || o.workers > 1024) usage(argv[0], value);
    } else if (std::strcmp(arg, "--exit-status") == 0) {
      o.exit_status = static_cast<int>(std::strtol(value, &end, 10));
    } else {
      usage(argv[0], arg);
    }
    if (end == nullptr || end == value || *end != '\0') usage(argv[0], value);
  }
  if (!have_n) o.requests = static_cast<uint64_t>(o.rate * kDefaultSeconds);
  return o;
}

struct Run {
  explicit Run(const Options& o)
      : options(o), scheduled_ns(o.requests), begin_ns(o.requests), end_ns(o.requests) {}

  const Options options;
  uint64_t start_ns = 0;
  std::vector<uint64_t> scheduled_ns;  // when request i arrives (its schedule)
  std::vector<uint64_t> begin_ns;      // when it was accepted (its COZ_BEGIN)
  std::vector<uint64_t> end_ns;        // when its service ended (its COZ_END)
  std::atomic<uint64_t> checksum{0};   // sum of per-request results: order-independent

  // The acceptor's queue.
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<uint64_t> queue;
  bool closed = false;
};

uint64_t serve(uint64_t id) {
  uint64_t x = common_work(id, kCommonSteps);
  if (is_slow(id)) x = slow_path_work(x, kSlowSteps);
  return x;
}

void acceptor(Run& run) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // wake at the arrival, not up to 50 us later
  Arrivals arrivals(kSeed, run.options.rate);
  uint64_t at = run.start_ns;
  for (uint64_t id = 0; id < run.options.requests; ++id) {
    // Each gap from the last arrival as accepted, not from a fixed schedule:
    // under coz the acceptor pays its pauses as it wakes, and a schedule
    // fixed in wall time would then catch up with a burst of arrivals that
    // the virtually sped-up program (whose clock the pauses stop) never
    // sees: the load would be higher under the profiler than in the
    // program it predicts (its queue grew, p99 read 2.9 ms for 1.3).
    at = std::max(at, now_ns()) + arrivals.next_gap_ns();
    sleep_until(at);
    run.scheduled_ns[id] = at;
    run.begin_ns[id] = now_ns();
    COZ_BEGIN_KEY("request", id);  // @line:request_begin
    {
      std::lock_guard<std::mutex> lock(run.mutex);
      run.queue.push_back(id);
    }
    run.ready.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(run.mutex);
    run.closed = true;
  }
  run.ready.notify_all();
}

void pool_worker(Run& run) {
  uint64_t sum = 0;
  for (;;) {
    uint64_t id;
    {
      std::unique_lock<std::mutex> lock(run.mutex);
      run.ready.wait(lock, [&run] { return !run.queue.empty() || run.closed; });
      if (run.queue.empty()) break;
      id = run.queue.front();
      run.queue.pop_front();
    }
    sum += serve(id);
    COZ_END_KEY("request", id);  // @line:request_end
    run.end_ns[id] = now_ns();
  }
  run.checksum.fetch_add(sum, std::memory_order_relaxed);
}

// --same-thread: worker `w` of W serves ids w, w + W, ... at its own open-loop
// pace (RATE / W), each request begun and ended on this thread.
void paced_worker(Run& run, int w) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  const auto workers = static_cast<uint64_t>(run.options.workers);
  Arrivals arrivals(kSeed + static_cast<uint64_t>(w), run.options.rate / static_cast<double>(workers));
  uint64_t at = run.start_ns;
  uint64_t sum = 0;
  for (uint64_t id = static_cast<uint64_t>(w); id < run.options.requests; id += workers) {
    at += arrivals.next_gap_ns();
    sleep_until(at);
    run.scheduled_ns[id] = at;
    run.begin_ns[id] = now_ns();
    COZ_BEGIN("request");  // @line:request_begin_same_thread
    sum += serve(id);
    COZ_END("request");  // @line:request_end_same_thread
    run.end_ns[id] = now_ns();
  }
  run.checksum.fetch_add(sum, std::memory_order_relaxed);
}

double percentile(const std::vector<double>& sorted, double q) {  // nearest rank
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  Run run(options);
  run.start_ns = now_ns();

  std::vector<std::thread> threads;
  if (options.same_thread) {
    for (int w = 0; w < options.workers; ++w) threads.emplace_back(paced_worker, std::ref(run), w);
  } else {
    for (int w = 0; w < options.workers; ++w) threads.emplace_back(pool_worker, std::ref(run));
    threads.emplace_back(acceptor, std::ref(run));
  }
  for (std::thread& t : threads) t.join();
  const uint64_t stop_ns = now_ns();

  std::vector<double> latency_us;
  double late_us = 0;
  uint64_t slow = 0;
  uint64_t last_end = run.start_ns + kWarmupNs;
  for (uint64_t id = 0; id < options.requests; ++id) {
    if (run.begin_ns[id] < run.start_ns + kWarmupNs) continue;
    latency_us.push_back(static_cast<double>(run.end_ns[id] - run.begin_ns[id]) / 1e3);
    late_us += static_cast<double>(run.begin_ns[id] - run.scheduled_ns[id]) / 1e3;
    slow += is_slow(id) ? 1 : 0;
    last_end = std::max(last_end, run.end_ns[id]);
  }
  const size_t measured = latency_us.size();
  double mean_us = 0;
  for (double l : latency_us) mean_us += l;
  if (measured > 0) {
    mean_us /= static_cast<double>(measured);
    late_us /= static_cast<double>(measured);
  }
  std::sort(latency_us.begin(), latency_us.end());
  const double window_s = static_cast<double>(last_end - (run.start_ns + kWarmupNs)) / 1e9;
  const double throughput = window_s > 0 ? static_cast<double>(measured) / window_s : 0;

  std::printf("tail_latency requests=%llu checksum=%016llx\n", static_cast<unsigned long long>(options.requests),
              static_cast<unsigned long long>(run.checksum.load()));
  std::fprintf(stderr,
               "tail_latency: requests=%llu rate=%.0f workers=%d mean_us=%.1f p50_us=%.1f p95_us=%.1f "
               "p99_us=%.1f throughput=%.1f mode=%s measured=%zu slow=%llu common_us=%.0f slow_us=%.0f "
               "late_mean_us=%.1f elapsed=%.3f\n",
               static_cast<unsigned long long>(options.requests), options.rate, options.workers, mean_us,
               percentile(latency_us, 0.50), percentile(latency_us, 0.95), percentile(latency_us, 0.99), throughput,
               options.same_thread ? "same-thread" : "acceptor", measured, static_cast<unsigned long long>(slow),
               static_cast<double>(kCommonSteps) * 1e3 / static_cast<double>(kStepsPerMs),
               static_cast<double>(kSlowSteps) * 1e3 / static_cast<double>(kStepsPerMs), late_us,
               static_cast<double>(stop_ns - run.start_ns) / 1e9);
  g_sink = run.checksum.load();
  return options.exit_status;
}
