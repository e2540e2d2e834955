// switch_pingpong: what a trap event costs a thread at each context switch,
// with no profiler around it (issue #15, docs/lifecycle.md). Two threads
// pass a byte back and forth through two pipes: every turn is two switches
// and almost no work. With PERIOD_US > 0 each thread first opens a
// task-clock event sampling at that period with sigtrap=1, as the runtime's
// traps do (the handler only counts). Prints the ns per turn. Pin it to one
// core, so that every turn really switches:
//
//   taskset -c 0 build/bench/switch_pingpong [PERIOD_US [TURNS [idle]]]
//
// With `idle`, neither of the two threads opens an event: a third one
// does, then sleeps through the run. What a turn then pays is what any
// per-task perf_event anywhere on the machine costs every context switch
// (the kernel's perf scheduling hooks are switched on for all while one
// exists).
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
//
// Measured 2026-12-06 (same VM, 300,000 turns, 6 interleaved runs each,
// pinned): no event 5,115-5,218 ns (one run 6,201); `1000 300000 idle`
// 5,158-5,479 (and 5,562, 6,086, 6,248); the same holder as another
// process (a program that opens the event and sleeps) 5,161-5,273 (one
// 6,334): ~25-50 ns a switch, within this VM's spread. Beside an idle
// `coz run --fixed-speedup 0` program, 4 runs: 5,247-5,317 against
// 5,023-5,227 alone and 5,030-5,074 beside the same with `COZ_SAMPLING=0`
// (ppchunks, a copy of this in C): ~110 ns a switch, more than the bare
// event explains; why is not established.
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
#include <string_view>

namespace {

uint64_t g_period_ns = 0;
long g_turns = 200'000;
bool g_idle_holder = false;  // a sleeping third thread holds the event, not the two
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

void* hold_event_asleep(void*) {
  open_trap_event();
  for (;;) pause();
}

void* echo(void*) {
  if (!g_idle_holder) open_trap_event();
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
  if (argc > 3) g_idle_holder = std::string_view(argv[3]) == "idle";
  struct sigaction sa {};
  sa.sa_sigaction = on_trap;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGTRAP, &sa, nullptr);
  if (pipe(g_ping) != 0 || pipe(g_pong) != 0) return 1;
  if (g_idle_holder) {
    pthread_t holder;
    pthread_create(&holder, nullptr, hold_event_asleep, nullptr);
    pthread_detach(holder);
    usleep(10'000);  // its event open before the turns begin
  }
  pthread_t peer;
  pthread_create(&peer, nullptr, echo, nullptr);
  if (!g_idle_holder) open_trap_event();
  char byte = 'x';
  const uint64_t start = now_ns();
  for (long i = 0; i < g_turns; ++i) {
    if (write(g_ping[1], &byte, 1) != 1 || read(g_pong[0], &byte, 1) != 1) std::abort();
  }
  const uint64_t elapsed = now_ns() - start;
  pthread_join(peer, nullptr);
  std::printf("switch_pingpong: %.0f ns per turn (period %llu us%s, %ld traps)\n",
              static_cast<double>(elapsed) / static_cast<double>(g_turns),
              static_cast<unsigned long long>(g_period_ns / 1000), g_idle_holder ? ", held by a sleeping thread" : "",
              g_traps.load());
  return 0;
}
