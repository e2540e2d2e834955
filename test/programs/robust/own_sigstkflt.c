/* own_sigstkflt: a program that uses SIGSTKFLT, the signal the runtime
 * samples with, as its own (test/integration/ownership_signals_test.cpp).
 *
 * A SA_SIGINFO handler takes 10 signals the program sends itself while it
 * works (~30 ms of CPU time before each): raise, kill, pthread_kill, tgkill
 * and sigqueue (whose value and si_code the handler checks). sigaction must
 * read the handler back. Then SIG_IGN: a raise is ignored. Then SIG_DFL: the
 * last raise ends the program by SIGSTKFLT (status 144 in a shell), as
 * without the profiler.
 *
 * Prints "own_sigstkflt handled=N of 10 queued_ok=Q readback=R ignored_ok=I"
 * before the last raise; "still alive" after it if the raise did not end it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SENDS 10

static volatile sig_atomic_t g_handled = 0;
static volatile sig_atomic_t g_queued_ok = 0;

static void on_sigstkflt(int sig, siginfo_t* info, void* context) {
  (void)context;
  if (sig != SIGSTKFLT) return;
  ++g_handled;
  if (info->si_code == SI_QUEUE && info->si_value.sival_int == 4242 && info->si_pid == getpid()) ++g_queued_ok;
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
    case 0: raise(SIGSTKFLT); break;
    case 1: kill(getpid(), SIGSTKFLT); break;
    case 2: pthread_kill(pthread_self(), SIGSTKFLT); break;
    case 3: syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGSTKFLT); break;
    default: sigqueue(getpid(), SIGSTKFLT, value); break;
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  struct sigaction sa, back;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigstkflt;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSTKFLT, &sa, NULL);
  sigaction(SIGSTKFLT, NULL, &back);
  int readback = back.sa_sigaction == on_sigstkflt && (back.sa_flags & SA_SIGINFO);

  for (int i = 0; i < SENDS; ++i) {
    work_ms(30);
    send_one(i);
  }
  work_ms(10);  /* a signal sent by another thread would still be on its way */

  struct sigaction ignore;
  memset(&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGSTKFLT, &ignore, &back);
  readback = readback && back.sa_sigaction == on_sigstkflt;
  int before = g_handled;
  raise(SIGSTKFLT);
  int ignored_ok = g_handled == before;

  printf("own_sigstkflt handled=%d of %d queued_ok=%d readback=%d ignored_ok=%d\n", (int)g_handled, SENDS,
         (int)g_queued_ok, readback, ignored_ok);
  signal(SIGSTKFLT, SIG_DFL);
  raise(SIGSTKFLT);
  printf("still alive\n");
  return 0;
}
