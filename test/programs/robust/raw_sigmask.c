/* raw_sigmask: threads that block every signal with the raw rt_sigprocmask
 * system call (as a runtime of another language or a hand-written event
 * loop may: the libc wrappers are bypassed) and take their signals
 * synchronously (test/integration/ownership_signals_test.cpp).
 *
 * Usage: raw_sigmask --signalfd | --sigwait
 *
 * Two threads each block everything, then work ~250 ms of CPU time, looking
 * every ~2 ms for a signal: from a non-blocking signalfd for every signal
 * (--signalfd), or with sigtimedwait on every signal and a zero timeout
 * (--sigwait). Nobody sends one, so any signal they find is unexpected. At
 * the end each thread sends itself SIGUSR1 and must find exactly that one.
 *
 * Prints "raw_sigmask unexpected=U expected=E of 2" (and each unexpected
 * signal's number and si_code); exits 0 when U == 0 and E == 2. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int g_use_signalfd = 0;
static volatile uint64_t g_sink;

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct Result {
  int unexpected;
  int expected;
};

/* One signal if there is one: its number (0 if none) and si_code. */
static int take_signal(int sfd, const sigset_t* all, int* code) {
  if (g_use_signalfd) {
    struct signalfd_siginfo info;
    ssize_t n = read(sfd, &info, sizeof info);
    if (n != (ssize_t)sizeof info) return 0;
    *code = info.ssi_code;
    return (int)info.ssi_signo;
  }
  siginfo_t info;
  struct timespec zero = {0, 0};
  int sig = sigtimedwait(all, &info, &zero);
  if (sig <= 0) return 0;
  *code = info.si_code;
  return sig;
}

static void* run(void* out) {
  struct Result* result = out;
  sigset_t all;
  sigfillset(&all);
  syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, _NSIG / 8);
  int sfd = g_use_signalfd ? signalfd(-1, &all, SFD_NONBLOCK | SFD_CLOEXEC) : -1;
  if (g_use_signalfd && sfd < 0) {
    perror("signalfd");
    result->unexpected = 1000;
    return NULL;
  }
  uint64_t x = g_sink, end = thread_cpu_ns() + 250000000u;
  for (uint64_t now = thread_cpu_ns(); now < end; now = thread_cpu_ns()) {
    for (uint64_t stop = now + 2000000u; thread_cpu_ns() < stop;) {
      for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;  // @line:work
    }
    int code = 0;
    for (int sig; (sig = take_signal(sfd, &all, &code)) != 0;) {
      if (result->unexpected++ < 3) printf("unexpected signal %d si_code=%d\n", sig, code);
    }
  }
  g_sink = x;
  pthread_kill(pthread_self(), SIGUSR1);
  int code = 0;
  for (int sig; (sig = take_signal(sfd, &all, &code)) != 0;) {
    /* pthread_kill gives SI_TKILL; glibc's sigtimedwait shows it as SI_USER. */
    if (sig == SIGUSR1 && (code == SI_TKILL || code == SI_USER)) ++result->expected;
    else if (result->unexpected++ < 3) printf("unexpected signal %d si_code=%d\n", sig, code);
  }
  if (sfd >= 0) close(sfd);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "--signalfd") != 0 && strcmp(argv[1], "--sigwait") != 0)) {
    fprintf(stderr, "usage: raw_sigmask --signalfd | --sigwait\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  g_use_signalfd = strcmp(argv[1], "--signalfd") == 0;
  struct Result results[2];
  memset(results, 0, sizeof results);
  pthread_t other;
  pthread_create(&other, NULL, run, &results[1]);
  run(&results[0]);
  pthread_join(other, NULL);
  int unexpected = results[0].unexpected + results[1].unexpected;
  int expected = results[0].expected + results[1].expected;
  printf("raw_sigmask unexpected=%d expected=%d of 2\n", unexpected, expected);
  return unexpected == 0 && expected == 2 ? 0 : 1;
}
