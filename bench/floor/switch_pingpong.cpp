// switch_pingpong: what a trap event costs a thread at each context switch,
// with no profiler around it (issue #15, docs/lifecycle.md). Two threads
// pass a byte back and forth through two pipes: every turn is two switches
// and almost no work. With PERIOD_US > 0 each thread first opens a
// task-clock event sampling at that period with sigtrap=1, as the runtime's
// traps do (the handler only counts). Prints the ns per turn. Pin it to one
// core, so that every turn really switches:
//
//   taskset -c 0 build/bench/switch_pingpong [PERIOD_US [TURNS]]
//
// Measured 2026-11-28 (Firecracker VM, 2 cores, 200,000 turns, 3 runs):
// no event 6,175-6,541 ns; 100 ms 9,332-9,489; 1 ms 15,234-15,349. A
// sampling event's timer is cancelled as the thread switches out and
// restarted as it switches in; restarted before the next tick, it
// reprograms the local timer, which under a hypervisor is an exit from the
// guest. So ~4.5 us a switch at the runtime's 1 ms period, ~1.6 us when the
// period outlasts the tick. Through `taskset -c 0 coz run --fixed-speedup 0`
// (PERIOD_US 0: the runtime's own samplers) a turn took 15,575 ns with every
// thread on traps (`COZ_TIMER_SWITCH_RATE=0`) and 7,216-7,248 ns by default,
// both threads moved to CPU-time timers (their wrapped reads and writes are
// most of the rest).
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

uint64_t g_period_ns = 0;
long g_turns = 200'000;
int g_ping[2], g_pong[2];
std::atomic<long> g_traps{0};

void on_trap(int, siginfo_t*, void*) { g_traps.fetch_add(1, std::memory_order_relaxed); }

void open_trap_event() {
  if (g_period_ns == 0) return;
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.sample_period = g_period_ns;
  a.exclude_hv = 1;
  a.sigtrap = 1;
  a.remove_on_exec = 1;
  if (syscall(SYS_perf_event_open, &a, 0, -1, -1, 0) < 0) {
    std::perror("perf_event_open");
    std::exit(1);
  }
}

void* echo(void*) {
  open_trap_event();
  char byte = 0;
  for (long i = 0; i < g_turns; ++i) {
    if (read(g_ping[0], &byte, 1) != 1 || write(g_pong[1], &byte, 1) != 1) std::abort();
  }
  return nullptr;
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_period_ns = std::strtoull(argv[1], nullptr, 10) * 1000;
  if (argc > 2) g_turns = std::atol(argv[2]);
  struct sigaction sa {};
  sa.sa_sigaction = on_trap;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGTRAP, &sa, nullptr);
  if (pipe(g_ping) != 0 || pipe(g_pong) != 0) return 1;
  pthread_t peer;
  pthread_create(&peer, nullptr, echo, nullptr);
  open_trap_event();
  char byte = 'x';
  const uint64_t start = now_ns();
  for (long i = 0; i < g_turns; ++i) {
    if (write(g_ping[1], &byte, 1) != 1 || read(g_pong[0], &byte, 1) != 1) std::abort();
  }
  const uint64_t elapsed = now_ns() - start;
  pthread_join(peer, nullptr);
  std::printf("switch_pingpong: %.0f ns per turn (period %llu us, %ld traps)\n",
              static_cast<double>(elapsed) / static_cast<double>(g_turns),
              static_cast<unsigned long long>(g_period_ns / 1000), g_traps.load());
  return 0;
}
