/* own_sigtrap: a program that uses SIGTRAP, the signal of the runtime's
 * samplers without rings, as its own (test/integration/ownership_signals_test.cpp).
 *
 * A SA_SIGINFO handler takes 10 signals the program sends itself while it
 * works (~30 ms of CPU time before each): raise, kill, pthread_kill, tgkill
 * and sigqueue (whose value and si_code the handler checks), and 4 traps of
 * its own code (int3, si_code SI_KERNEL), as a program that plants its own
 * breakpoints does. sigaction must read the handler back. Then SIG_IGN: a
 * raise is ignored. Then the ending: by default an int3 under SIG_IGN, which
 * the kernel forces (the program ends by SIGTRAP); with --raise, a raise
 * under SIG_DFL. No core file either way (RLIMIT_CORE 0).
 *
 * Prints "own_sigtrap handled=N of 10 traps=T of 4 queued_ok=Q readback=R
 * ignored_ok=I other=O" before the ending (O: traps of any other kind, the
 * runtime's TRAP_PERF among them, which the handler must never see); "still
 * alive" after it if it did not end the program. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SENDS 10
#define TRAPS 4

static volatile sig_atomic_t g_handled = 0;
static volatile sig_atomic_t g_traps = 0;
static volatile sig_atomic_t g_queued_ok = 0;
static volatile sig_atomic_t g_other = 0;

static void on_sigtrap(int sig, siginfo_t* info, void* context) {
  (void)context;
  if (sig != SIGTRAP) return;
  if (info->si_code == SI_KERNEL) {
    ++g_traps;
  } else if (info->si_code <= 0) {
    ++g_handled;
    if (info->si_code == SI_QUEUE && info->si_value.sival_int == 4242 && info->si_pid == getpid()) ++g_queued_ok;
  } else {
    ++g_other;  /* TRAP_PERF and the like: the runtime's, which must never arrive here */
  }
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t g_sink;

static void work_ms(unsigned ms) {
  uint64_t end = thread_cpu_ns() + (uint64_t)ms * 1000000u;
  uint64_t x = g_sink;
  while (thread_cpu_ns() < end) {
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;  // @line:work
  }
  g_sink = x;
}

static void send_one(int i) {
  union sigval value;
  value.sival_int = 4242;
  switch (i % 5) {
    case 0: raise(SIGTRAP); break;
    case 1: kill(getpid(), SIGTRAP); break;
    case 2: pthread_kill(pthread_self(), SIGTRAP); break;
    case 3: syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGTRAP); break;
    default: sigqueue(getpid(), SIGTRAP, value); break;
  }
}

static void breakpoint(void) { __asm__ volatile("int3"); }

int main(int argc, char** argv) {
  const int end_by_raise = argc > 1 && strcmp(argv[1], "--raise") == 0;
  setvbuf(stdout, NULL, _IONBF, 0);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  struct sigaction sa, back;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigtrap;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTRAP, &sa, NULL);
  sigaction(SIGTRAP, NULL, &back);
  int readback = back.sa_sigaction == on_sigtrap && (back.sa_flags & SA_SIGINFO);

  for (int i = 0; i < SENDS; ++i) {
    work_ms(30);
    send_one(i);
    if (i % 3 == 0) breakpoint();
  }
  work_ms(10);  /* a signal sent by another thread would still be on its way */

  struct sigaction ignore;
  memset(&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGTRAP, &ignore, &back);
  readback = readback && back.sa_sigaction == on_sigtrap;
  int before = g_handled;
  raise(SIGTRAP);
  int ignored_ok = g_handled == before;

  printf("own_sigtrap handled=%d of %d traps=%d of %d queued_ok=%d readback=%d ignored_ok=%d other=%d\n",
         (int)g_handled, SENDS, (int)g_traps, TRAPS, (int)g_queued_ok, readback, ignored_ok, (int)g_other);
  if (end_by_raise) {
    signal(SIGTRAP, SIG_DFL);
    raise(SIGTRAP);
  } else {
    breakpoint();
  }
  printf("still alive\n");
  return 0;
}
