// raw_exit: programs whose last thread leaves without exit(): the process
// ends when its last thread does, with the main thread's status.
//
//   raw_exit main STATUS     work ~--ms, print, then the main thread (the only
//                            one) ends with syscall(SYS_exit, STATUS)
//   raw_exit thread STATUS   the main thread ends with syscall(SYS_exit,
//                            STATUS) while a second thread works --ms more,
//                            prints and returns (status: still STATUS)
//   raw_exit strict          seccomp strict mode (only read, write, _exit and
//                            sigreturn allowed), then --ms of work, a write,
//                            and syscall(SYS_exit, 0)
//
// Output lines are written with write(2) (stdio's buffers are never flushed
// by a raw exit).
#define _GNU_SOURCE
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t g_sink;
static double g_ms = 150;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/// About `ms` of CPU work; under seccomp strict, clock_gettime must stay in
/// the vDSO, so the work is counted in steps instead.
static void work_steps(uint64_t steps) {
  uint64_t x = g_sink;
  for (uint64_t i = 0; i < steps; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:raw_exit_work
  g_sink = x;
}

static void work_ms(double ms) {
  const double end = now_ms() + ms;
  while (now_ms() < end) work_steps(100000);
}

static void say(const char* text) {
  if (write(1, text, strlen(text)) < 0) _exit(99);
}

static void* second_thread(void* arg) {
  (void)arg;
  work_ms(g_ms);
  say("raw_exit second thread done\n");
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* mode = argv[1];
  int status = argc > 2 ? atoi(argv[2]) : 0;
  for (int i = 2; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "--ms") == 0) g_ms = atof(argv[i + 1]);
  }
  if (strcmp(mode, "main") == 0) {
    work_ms(g_ms);
    say("raw_exit main done\n");
    syscall(SYS_exit, status);
  } else if (strcmp(mode, "thread") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, second_thread, NULL) != 0) return 3;
    work_ms(g_ms / 4);
    say("raw_exit main leaves\n");
    syscall(SYS_exit, status);
  } else if (strcmp(mode, "strict") == 0) {
    work_ms(g_ms / 2);
    // About g_ms / 2 more of work, measured before: no clock under strict mode.
    const double start = now_ms();
    work_steps(1000000);
    const double per_million = now_ms() - start;
    const uint64_t millions = per_million > 0 ? (uint64_t)(g_ms / 2 / per_million) + 1 : 50;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) return 4;
    for (uint64_t i = 0; i < millions; ++i) work_steps(1000000);
    say("raw_exit strict done\n");
    syscall(SYS_exit, 0);
  }
  return 2;
}
