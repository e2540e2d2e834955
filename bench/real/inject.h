// Injected work for the real-software ground truth (bench/real/README.md):
// a busy loop of a known number of iterations, read once from the
// environment, so one build runs as every variant (full, half, none).
#pragma once
#include <stdlib.h>

static inline unsigned long coz_inject_iters(const char* name) {
  const char* v = getenv(name);
  return v ? strtoul(v, 0, 10) : 0;
}

// One line, so that the profiler sees one line for the whole loop.
#define COZ_INJECT_SPIN(iters) do { volatile unsigned long coz_i_; for (coz_i_ = 0; coz_i_ < (iters); ++coz_i_) {} } while (0)

// A line made slower by a known share of its own time, for a line whose
// work cannot be shortened (a system call): time it, then stay busy for
// PERCENT of what it took. Its CPU time, as the profiler's samples count
// it: a loopback sendmsg wakes its client, which often preempts the sender
// inside the call (its wall time read twice its CPU time). The truth of a
// real slowdown (bench/real/README.md, "slower lines").
#include <time.h>
static inline unsigned long long coz_inject_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
static inline void coz_inject_busy_cpu_ns(unsigned long long ns) {
  unsigned long long end = coz_inject_cpu_ns() + ns;
  while (coz_inject_cpu_ns() < end) {
  }
}
// -1 when NAME is unset: then the line is not even timed.
static inline long coz_inject_percent(const char* name) {
  const char* v = getenv(name);
  return v ? strtol(v, 0, 10) : -1;
}
