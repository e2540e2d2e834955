// libplugin_other.so: loaded by dl_main after libplugin.so was closed, at
// the same address as a rule (the same size). Its function is all on one
// line, so its one address range starts where libplugin.so's first did and
// covers the later ones: a line map that let an older range survive inside
// a newer one would give most of this loop to plugin.cpp.
#include <cstdint>

extern "C" __attribute__((visibility("default"), noinline)) uint64_t plugin_work(uint64_t x, uint64_t n) { for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i; return x; }  // @line:other_work
