/* idle_phases: a program whose progress is not steady. It loads first
 * (busy, no progress point reached), then works (one COZ_PROGRESS per
 * item), then waits for more work that never comes (asleep, no progress),
 * as a server does between two loads.
 *
 * Usage: idle_phases [LOAD_MS WORK_MS IDLE_MS] (default 400 1500 600). */
#include <coz.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
  struct timespec idle = {(time_t)(idle_ms / 1000), (long)((idle_ms - 1000 * (time_t)(idle_ms / 1000)) * 1e6)};
  nanosleep(&idle, NULL); /* waiting for work that never comes */
  printf("idle_phases items=%lu\n", items);
  return 0;
}
