// libplugin.so: dlopen'ed by dl_main after the profiler started. Same shape
// as plugin_other.cpp, so the two load at the same address in turn.
#include <cstdint>

extern "C" __attribute__((visibility("default"), noinline)) uint64_t plugin_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:plugin_work
  return x;
}
