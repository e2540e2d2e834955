/* idle_phases: a program whose progress is not steady. It loads first
 * (busy, no progress point reached), then works (one COZ_PROGRESS per
 * item), then waits for more work that never comes (asleep, no progress),
 * as a server does between two loads.
 *
 * It prints how often the process's other threads (the profiler's, under
 * `coz run`) woke while it slept, past the sleep's first 200 ms.
 *
 * Usage: idle_phases [LOAD_MS WORK_MS IDLE_MS] (default 400 1500 600). */
#define _GNU_SOURCE
#include <coz.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static volatile uint64_t g_sink;

static void spin(uint64_t steps) {
  uint64_t x = g_sink;
  for (uint64_t i = 0; i < steps; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i; /* @line:work */
  g_sink = x;
}

static void sleep_ms(double ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)((ms - 1000 * (time_t)(ms / 1000)) * 1e6)};
  nanosleep(&ts, NULL);
}

/* Voluntary context switches of every thread of this process but the calling one. */
static unsigned long other_threads_wakes(void) {
  unsigned long total = 0;
  char self[32], path[300], line[128];
  snprintf(self, sizeof self, "%d", gettid());
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return 0;
  for (struct dirent* e; (e = readdir(dir)) != NULL;) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, self) == 0) continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    static const char key[] = "voluntary_ctxt_switches:";
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, key, sizeof key - 1) == 0) total += strtoul(line + sizeof key - 1, NULL, 10);
    }
    fclose(f);
  }
  closedir(dir);
  return total;
}

int main(int argc, char** argv) {
  double load_ms = argc > 3 ? atof(argv[1]) : 400, work_ms = argc > 3 ? atof(argv[2]) : 1500,
         idle_ms = argc > 3 ? atof(argv[3]) : 600;
  double start = now_ms();
  while (now_ms() - start < load_ms) spin(20000); /* loading: busy, nothing to count yet */
  unsigned long items = 0;
  start = now_ms();
  while (now_ms() - start < work_ms) {
    spin(20000);
    ++items;
    COZ_PROGRESS_NAMED("item");
  }
  /* waiting for work that never comes */
  const double settle_ms = idle_ms > 400 ? 200 : 0;
  sleep_ms(settle_ms);
  const unsigned long wakes_before = other_threads_wakes();
  const double asleep_from = now_ms();
  sleep_ms(idle_ms - settle_ms);
  const double asleep_s = (now_ms() - asleep_from) / 1e3;
  printf("idle_phases items=%lu other-thread-wakes-per-s=%.0f\n", items,
         asleep_s > 0 ? (double)(other_threads_wakes() - wakes_before) / asleep_s : 0.0);
  return 0;
}
