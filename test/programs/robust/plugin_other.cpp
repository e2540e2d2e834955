// libplugin_other.so: loaded by dl_main after libplugin.so was closed
// (same shape, so usually at the same address).
#include <cstdint>

extern "C" __attribute__((visibility("default"), noinline)) uint64_t plugin_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:other_work
  return x;
}
