/* short_run: a short program (two threads, ~20 ms of CPU time each) for
 * the shortest sampling periods (test/integration/ownership_signals_test.cpp:
 * `coz run --period 10us` must cost it a bounded factor, not seconds).
 *
 * Prints "short_run done" and exits 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void* work(void* out) {
  uint64_t x = 1, end = thread_cpu_ns() + 20000000u;
  while (thread_cpu_ns() < end) {
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;  // @line:work
  }
  *(volatile uint64_t*)out = x;
  return NULL;
}

int main(void) {
  uint64_t a = 0, b = 0;
  pthread_t other;
  pthread_create(&other, NULL, work, &b);
  work(&a);
  pthread_join(other, NULL);
  printf("short_run done\n");
  return 0;
}
