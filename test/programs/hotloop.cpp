// libhotloop.so: the hot loop of shared_lib lives in this shared library, so
// the profiler must map addresses inside a library (loaded at a random base)
// to this file's lines, and honour --binary-scope for it.
// -DHALVE_HOT_LOOP builds the really faster library (half the steps).
#include "hotloop.h"

extern "C" __attribute__((visibility("default"), noinline)) uint64_t hot_loop(uint64_t x, uint64_t steps) {
#ifdef HALVE_HOT_LOOP
  steps /= 2;
#endif
  for (uint64_t i = 0; i < steps; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:hot_loop
  return x;
}
