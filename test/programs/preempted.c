/* preempted: a thread that computes and never waits, preempted thousands of
 * times a second by another thread of the program on the same CPU, which
 * sleeps 50 us at a time and computes a little between its sleeps (the
 * scheduler lets a thread that wakes preempt one that runs). memcached's
 * workers under load are such threads: preempted ~12,000 times per second
 * of their CPU time, waiting ~15 times. Under `coz run` the spinner leaves
 * its trap event for its CPU-time timer (sample_policy::switch_verdict).
 *
 * Usage: preempted [MS] (default 1500: how long the spinner computes).
 *
 * Prints "preempted voluntary=V involuntary=I cpu_ms=C" for the spinner. */
#define _GNU_SOURCE
#include <coz.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static volatile int g_done;
static volatile uint64_t g_sink;

/* Both threads on the first CPU the process may run on: the sleeper's
 * wake-ups must land where the spinner runs. */
static void pin_to_first_cpu(void) {
  cpu_set_t allowed, one;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  sched_setaffinity(0, sizeof one, &one);
}

static void* sleeper(void* arg) {
  (void)arg;
  pin_to_first_cpu();
  const struct timespec pause = {0, 50000};
  while (!g_done) {
    nanosleep(&pause, NULL);
    for (volatile int i = 0; i < 200; ++i) {
    }
  }
  return NULL;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  const double ms = argc > 1 ? atof(argv[1]) : 1500;
  pin_to_first_cpu();
  pthread_t other;
  if (pthread_create(&other, NULL, sleeper, NULL) != 0) return 2;
  uint64_t x = 1;
  for (const double end = now_ms() + ms; now_ms() < end;) {
    for (int i = 0; i < 100000; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + (uint64_t)i; /* @line:work */
    COZ_PROGRESS_NAMED("chunk");
  }
  g_sink = x;
  struct rusage usage;
  getrusage(RUSAGE_THREAD, &usage);
  g_done = 1;
  pthread_join(other, NULL);
  const double cpu_ms = (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
                        (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
  printf("preempted voluntary=%ld involuntary=%ld cpu_ms=%.0f\n", usage.ru_nvcsw, usage.ru_nivcsw, cpu_ms);
  return 0;
}
