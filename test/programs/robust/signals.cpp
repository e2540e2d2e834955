// signals: the application's own signal handling, while two background
// threads keep the profiler sampling and experimenting. One mode per run;
// each prints one result line and exits 0 when its checks held (1 if not).
//
//   --segv N        catches N deliberate SIGSEGVs (sigsetjmp/siglongjmp) and continues
//   --abort         a SIGABRT handler that prints and _exit(42)s, then abort()
//   --sigprof MS    setitimer(ITIMER_PROF, 10 ms) for MS of CPU-bound work: prints
//                   the handler calls and the process CPU time
//   --int-term      sends itself SIGINT then SIGTERM; its handlers must run
//   --mask          blocks signals; checks they stay blocked and pending until unblocked
//   --eintr MS      a thread blocked in read() on a pipe (and SIGUSR1 with SA_RESTART
//                   sent to it) and a thread in a sleep loop, for MS: no EINTR
#include <coz.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "robust_common.h"

namespace {

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t signal_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:signal_work
  return x;
}

void work_ms(double ms) {
  const double end = robust::now_ms() + ms;
  uint64_t x = g_seed;
  while (robust::now_ms() < end) {
    x = signal_work(x, robust::kStepsPerMs / 4);
    COZ_PROGRESS_NAMED("main unit");
  }
  g_seed = x;
}

void install(int sig, void (*handler)(int), int flags) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

// ---- SIGSEGV ------------------------------------------------------------------
sigjmp_buf g_segv_jump;
volatile sig_atomic_t g_segv_count = 0;
void on_segv(int) {
  g_segv_count = g_segv_count + 1;
  siglongjmp(g_segv_jump, 1);
}
int mode_segv(uint64_t n) {
  install(SIGSEGV, on_segv, 0);
  uint64_t caught = 0;
  for (uint64_t i = 0; i < n; ++i) {
    work_ms(5);
    if (sigsetjmp(g_segv_jump, 1) == 0) {
      volatile int* volatile bad = nullptr;
      *bad = 1;  // deliberate
    } else {
      ++caught;
    }
  }
  std::printf("segv caught=%lu handler=%d\n", static_cast<unsigned long>(caught), static_cast<int>(g_segv_count));
  return caught == n ? 0 : 1;
}

// ---- SIGABRT ------------------------------------------------------------------
void on_abort(int) {
  static const char text[] = "abort handled\n";
  (void)!write(STDOUT_FILENO, text, sizeof text - 1);
  _exit(42);
}
int mode_abort() {
  install(SIGABRT, on_abort, 0);
  work_ms(400);
  std::fflush(nullptr);
  std::abort();
}

// ---- SIGPROF ------------------------------------------------------------------
std::atomic<uint64_t> g_prof_count{0};
void on_prof(int) { g_prof_count.fetch_add(1, std::memory_order_relaxed); }
double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}
int mode_sigprof(uint64_t ms) {
  install(SIGPROF, on_prof, SA_RESTART);
  const double cpu_start = process_cpu_ms();
  itimerval timer{};
  timer.it_interval.tv_usec = 10'000;
  timer.it_value.tv_usec = 10'000;
  setitimer(ITIMER_PROF, &timer, nullptr);
  work_ms(static_cast<double>(ms));
  timer = itimerval{};
  setitimer(ITIMER_PROF, &timer, nullptr);
  const double cpu_ms = process_cpu_ms() - cpu_start;
  std::printf("sigprof count=%lu cpu_ms=%.0f expected=%.0f\n", static_cast<unsigned long>(g_prof_count.load()), cpu_ms,
              cpu_ms / 10.0);
  return 0;
}

// ---- SIGINT / SIGTERM ------------------------------------------------------------
std::atomic<int> g_last_signal{0};
void on_int_term(int sig) { g_last_signal.store(sig); }
bool wait_for_signal(int sig) {
  for (int i = 0; i < 200 && g_last_signal.load() != sig; ++i) work_ms(5);
  return g_last_signal.load() == sig;
}
int mode_int_term() {
  install(SIGINT, on_int_term, SA_RESTART);
  install(SIGTERM, on_int_term, SA_RESTART);
  work_ms(300);
  kill(getpid(), SIGINT);  // process-directed, like Ctrl-C or kill(1)
  const bool got_int = wait_for_signal(SIGINT);
  kill(getpid(), SIGTERM);
  const bool got_term = wait_for_signal(SIGTERM);
  std::printf("int-term sigint=%d sigterm=%d\n", got_int ? 1 : 0, got_term ? 1 : 0);
  return got_int && got_term ? 0 : 1;
}

// ---- masks ----------------------------------------------------------------------
std::atomic<int> g_usr_calls{0};
void on_usr(int) { g_usr_calls.fetch_add(1); }
int mode_mask() {
  install(SIGUSR1, on_usr, SA_RESTART);
  install(SIGUSR2, on_usr, SA_RESTART);
  // Process-wide: every application thread blocks SIGUSR2 (the background
  // threads are created after this and inherit it), so a process-directed
  // SIGUSR2 must stay pending, not run in some thread the profiler added.
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &usr2, nullptr);
  robust::Background background(2);

  // The main thread blocks everything it can.
  sigset_t all, readback;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);
  pthread_sigmask(SIG_SETMASK, nullptr, &readback);
  int not_blocked = 0;
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGCHLD, SIGPROF, SIGWINCH}) {
    if (!sigismember(&readback, sig)) {
      std::printf("mask: signal %d not blocked after SIG_SETMASK of a full set\n", sig);
      ++not_blocked;
    }
  }
  pthread_kill(pthread_self(), SIGUSR1);  // thread-directed: pending on this thread
  kill(getpid(), SIGUSR2);                // process-directed: blocked in every application thread
  work_ms(300);
  sigset_t pending;
  sigpending(&pending);
  const int calls_while_blocked = g_usr_calls.load();
  const bool usr1_pending = sigismember(&pending, SIGUSR1) == 1;
  const bool usr2_pending = sigismember(&pending, SIGUSR2) == 1;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);  // delivered here, now
  const int calls_after_unblock = g_usr_calls.load();
  timespec limit{1, 0};
  siginfo_t info{};
  const bool usr2_taken = sigtimedwait(&usr2, &info, &limit) == SIGUSR2;
  std::printf("mask not_blocked=%d calls_while_blocked=%d usr1_pending=%d usr2_pending=%d calls_after_unblock=%d "
              "usr2_taken=%d\n",
              not_blocked, calls_while_blocked, usr1_pending ? 1 : 0, usr2_pending ? 1 : 0, calls_after_unblock,
              usr2_taken ? 1 : 0);
  return not_blocked == 0 && calls_while_blocked == 0 && usr1_pending && usr2_pending && calls_after_unblock == 1 &&
                 usr2_taken
             ? 0
             : 1;
}

// ---- restartable calls ----------------------------------------------------------
int mode_eintr(uint64_t ms) {
  install(SIGUSR1, on_usr, SA_RESTART);
  int fds[2];
  if (pipe(fds) != 0) return 1;
  std::atomic<int> read_errno{0};
  std::atomic<long> read_result{-2};
  std::thread reader([&] {
    char byte = 0;
    const ssize_t n = read(fds[0], &byte, 1);  // blocks until main writes
    read_result = n;
    read_errno = n < 0 ? errno : 0;
  });
  std::atomic<int> sleep_eintr{0};
  std::atomic<int> sleeps{0};
  std::atomic<bool> stop_sleeping{false};
  std::thread sleeper([&] {
    while (!stop_sleeping.load()) {
      if (usleep(10'000) != 0 && errno == EINTR) ++sleep_eintr;
      timespec ts{0, 10'000'000};
      if (nanosleep(&ts, nullptr) != 0 && errno == EINTR) ++sleep_eintr;
      ++sleeps;
    }
  });
  {
    robust::Background background(2);
    const double end = robust::now_ms() + static_cast<double>(ms);
    while (robust::now_ms() < end) {
      work_ms(50);
      pthread_kill(reader.native_handle(), SIGUSR1);  // SA_RESTART: the read restarts
    }
  }
  const char byte = 'x';
  (void)!write(fds[1], &byte, 1);
  reader.join();
  stop_sleeping = true;
  sleeper.join();
  std::printf("eintr read_result=%ld read_errno=%d sleeps=%d sleep_eintr=%d\n", read_result.load(), read_errno.load(),
              sleeps.load(), sleep_eintr.load());
  return read_result.load() == 1 && sleep_eintr.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const robust::Options options(argc, argv, {"--segv=", "--abort", "--sigprof=", "--int-term", "--mask", "--eintr="});
  if (options.has("--mask")) return mode_mask();  // creates its own background threads
  if (options.has("--eintr")) return mode_eintr(options.number("--eintr", 1000));
  robust::Background background(options.has("--sigprof") ? 1 : 2);
  if (options.has("--segv")) return mode_segv(options.number("--segv", 100));
  if (options.has("--abort")) return mode_abort();
  if (options.has("--sigprof")) return mode_sigprof(options.number("--sigprof", 2000));
  if (options.has("--int-term")) return mode_int_term();
  std::fprintf(stderr, "signals: no mode given\n");
  return 2;
}
