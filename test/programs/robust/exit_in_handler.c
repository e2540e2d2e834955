// exit_in_handler: a signal handler that calls exit() while the program
// loads a library.
//
// SIGALRM's handler calls exit(7). The library loaded (libexit_plugin.so,
// EXIT_PLUGIN_PATH) arms a one-shot timer in its constructor, the last
// thing dlopen runs: the signal comes --us microseconds later, while
// dlopen returns (under the profiler: while the runtime maps the new
// library's lines), or just after. Either way the process exits with
// status 7 and prints nothing; a signal that never comes exits 1.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void on_alarm(int sig) {
  (void)sig;
  exit(7);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[1], "--us") == 0) setenv("EXIT_PLUGIN_ALARM_US", argv[2], 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  void* handle = dlopen(EXIT_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    fprintf(stderr, "exit_in_handler: %s\n", dlerror());
    return 3;
  }
  const double end = now_ms() + 2000;
  while (now_ms() < end) {
  }
  fprintf(stderr, "exit_in_handler: no SIGALRM\n");
  return 1;
}
