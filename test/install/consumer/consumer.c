// A program with a named progress point: items of fixed work for about a
// second, long enough for several experiments of 50 ms. C, and C++ too (the
// CMake consumer compiles it as C++), so coz.h is used from both.
#include <coz.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned long work(unsigned long x) {
  for (int i = 0; i < 200000; ++i) x = x * 6364136223846793005ul + 1442695040888963407ul;
  return x;
}

int main(void) {
  double start = now();
  unsigned long x = 1, items = 0;
  while (now() - start < 1.0) {
    x = work(x);
    ++items;
    COZ_PROGRESS_NAMED("consumer-item");
  }
  printf("%lu items (%lx)\n", items, x & 0xff);
  return 0;
}
