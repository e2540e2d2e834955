/* owner_work: CPU work with a progress point, then an exit status of the
 * caller's choice: a program whose output, files and status the tests
 * compare with and without the profiler (built dynamic, and static as
 * owner_work_static, which no LD_PRELOAD reaches).
 *
 * Usage: owner_work [--ms MS] [--status N] [--quiet]
 *   Works MS ms (default 300), prints "owner_work done" unless --quiet
 *   (then it writes nothing at all), exits with status N (default 0). */
#include <coz.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  long ms = 300;
  int status = 0, quiet = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) ms = atol(argv[++i]);
    else if (strcmp(argv[i], "--status") == 0 && i + 1 < argc) status = atoi(argv[++i]);
    else if (strcmp(argv[i], "--quiet") == 0) quiet = 1;
    else {
      fprintf(stderr, "owner_work: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  volatile uint64_t sink = 0;
  uint64_t x = 1;
  double end = now_ms() + (double)ms;
  while (now_ms() < end) {
    for (int i = 0; i < 100000; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + (uint64_t)i;  // @line:owner_work
    COZ_PROGRESS_NAMED("owner_work");
  }
  sink = x;
  (void)sink;
  if (!quiet) printf("owner_work done\n");
  return status;
}
