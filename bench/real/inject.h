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
