// crowd_events: what the kernel's part of sampling costs a program that
// switches threads often, with no profiler around it (issue #15). 64 threads
// on one mutex, as bench/programs/mutex_crowd.cpp: ~2 us of work outside the
// lock, ~0.5 us inside, ~4,000 context switches a second on 2 cores. Each
// mode opens the events the way a sampler would and does nothing else (the
// SIGTRAP handler counts). Run it by hand against mode 0:
//
//   farm-bench -n 10 --vs 'build/bench/crowd_events 0' -- build/bench/crowd_events MODE
//
// modes: 0 no event; 1 a task-clock event per thread, opened by the thread,
// sampling at 1 ms with sigtrap=1 (as the runtime's traps); 2 one such
// event opened by main with inherit=1, inherit_thread=1 (every thread gets
// a copy at clone); 3 a per-thread event that counts only (no period);
// 4 a per-thread event that samples at 1 ms but signals nothing (no ring);
// 5 a POSIX CPU-time timer per thread at 1 ms (the runtime's fallback where
// perf_event is refused), signalling SIGTRAP. PERIOD_US sets the period of
// modes 1, 2, 4 and 5 (default 1000).
// Kernel time is sampled too (exclude_kernel=0), as the runtime does.
//
// Measured 2026-11-26 (2 cores, 4,000,000 iterations, ~3.8 s; A/B wall,
// median of 8-10 interleaved pairs, machine loaded at times): mode 3
// 1.006, mode 4 1.033, mode 1 1.027-1.028, mode 2 1.019. The runtime's
// `--fixed-speedup 0` on the same program against mode 1: 1.019 wall,
// 1.014 CPU (its own start-up and exit are ~14 ms of that).
// What it says: the per-thread event is 2.7 of mutex_crowd's ~5.2 points,
// and it is its 1 ms timer, not the switch of the event nor the signal: an
// event that only counts costs 0.6, one that samples and signals nothing
// 3.3 (within noise of 2.8 with the signal). Under a virtual machine each
// timer is dear, and a sampling task-clock restarts its hrtimer at every
// switch in. Inherited events (mode 2) save ~0.8 points, as the kernel
// swaps the contexts of two threads with equal inherited events at a switch
// instead of scheduling their events out and in; but they lose what the
// runtime sets per thread (a random first period, a hurried sample, the
// period during experiments), see docs/lifecycle.md.
//
// Measured 2026-11-28 (4,000,000 iterations, 8 interleaved pairs each against
// mode 0, medians, spread 0.96-1.11): mode 1 1.018; mode 1 at 4 ms 1.021; mode
// 1 at 100 ms 1.009; mode 5 1.003. A CPU-time timer is checked on the
// scheduler's tick, so nothing is programmed at a switch and no interrupt is
// added: at HZ=250 it fires every 4 ms whatever its period (250 signals a
// second at 100 us), which is also why the runtime does not use it when
// perf_event is allowed (README: predictions read low for short threads and
// short lock holds).
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace {

enum Mode { kNone, kPerThreadTrap, kInheritedTrap, kCounting, kSilentSampling, kCpuTimer };

Mode g_mode = kNone;
uint64_t g_period_ns = 1'000'000;
std::atomic<long> g_traps{0};
volatile uint64_t g_sink = 0;

void on_trap(int, siginfo_t*, void*) { g_traps.fetch_add(1, std::memory_order_relaxed); }

int open_event(bool inherit, bool sampling, bool trap) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.sample_period = sampling ? g_period_ns : 0;
  a.exclude_hv = 1;
  a.sigtrap = trap;
  a.remove_on_exec = 1;
  a.inherit = inherit;
  a.inherit_thread = inherit;
  int fd = static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) {
    std::perror("perf_event_open");
    std::exit(1);
  }
  return fd;
}

__attribute__((noinline)) uint64_t work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;
  return x;
}

std::mutex g_mutex;
uint64_t g_claimed = 0, g_total = 4'000'000, g_state = 1;
constexpr uint64_t kOutsideSteps = 600, kInsideSteps = 150;

// Mode 5: a POSIX CPU-time timer of the thread's own, signalling it (the
// runtime's timer fallback). The kernel checks such timers at the tick, so
// no timer is programmed at a switch.
timer_t start_cpu_timer() {
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGTRAP;
  sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  timer_t timer{};
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &timer) != 0) {
    std::perror("timer_create");
    std::exit(1);
  }
  const long ns = static_cast<long>(g_period_ns);
  itimerspec spec{{ns / 1'000'000'000, ns % 1'000'000'000}, {ns / 1'000'000'000, ns % 1'000'000'000}};
  timer_settime(timer, 0, &spec, nullptr);
  return timer;
}

void worker(int id) {
  int fd = -1;
  timer_t timer{};
  if (g_mode == kCpuTimer) timer = start_cpu_timer();
  if (g_mode == kPerThreadTrap) fd = open_event(false, true, true);
  if (g_mode == kCounting) fd = open_event(false, false, false);
  if (g_mode == kSilentSampling) fd = open_event(false, true, false);
  uint64_t local = static_cast<uint64_t>(id);
  for (;;) {
    local = work(local, kOutsideSteps);
    std::lock_guard guard(g_mutex);
    if (g_claimed == g_total) break;
    ++g_claimed;
    g_state = work(g_state, kInsideSteps);
  }
  g_sink = local;
  if (fd >= 0) close(fd);
  if (g_mode == kCpuTimer) timer_delete(timer);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] < '0' || argv[1][0] > '5') {
    std::fprintf(stderr, "usage: crowd_events MODE(0-5) [ITERATIONS [PERIOD_US]]\n");
    return 2;
  }
  g_mode = static_cast<Mode>(argv[1][0] - '0');
  if (argc > 2) g_total = std::strtoull(argv[2], nullptr, 10);
  if (argc > 3) g_period_ns = std::strtoull(argv[3], nullptr, 10) * 1000;
  struct sigaction sa {};
  sa.sa_sigaction = on_trap;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGTRAP, &sa, nullptr);
  if (g_mode == kInheritedTrap) open_event(true, true, true);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) threads.emplace_back(worker, i);
  for (std::thread& t : threads) t.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "crowd_events mode %d: %.3f s, %ld traps\n", static_cast<int>(g_mode), seconds, g_traps.load());
  return 0;
}
