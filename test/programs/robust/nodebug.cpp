// nodebug: built -O2 -g, then copied without its debug info by objcopy
// (robust/CMakeLists.txt): stripped of DWARF only (symbols kept), with the
// DWARF in a separate file found through .gnu_debuglink or the build-id, or
// stripped of everything. Its hot functions are extern "C", so a
// function-level location is exactly "BINARY:nodebug_hot".
//
// Two threads: nodebug_hot (0.75 ms) then nodebug_cold (0.25 ms) per unit,
// one COZ_PROGRESS_NAMED("unit") each. Usage: nodebug [--units N] (default 800).
#include <coz.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {
constexpr uint64_t kStepsPerMs = 600'000;
volatile uint64_t g_seed = 0x1234;
}  // namespace

extern "C" __attribute__((noinline)) uint64_t nodebug_hot(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:nodebug_hot
  return x;
}

extern "C" __attribute__((noinline)) uint64_t nodebug_cold(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:nodebug_cold
  return x;
}

int main(int argc, char** argv) {
  uint64_t units = 800;
  if (argc == 3 && std::strcmp(argv[1], "--units") == 0) units = std::strtoull(argv[2], nullptr, 10);
  auto loop = [units] {
    uint64_t x = g_seed;
    for (uint64_t i = 0; i < units; ++i) {
      x = nodebug_hot(x, kStepsPerMs * 3 / 4);
      x = nodebug_cold(x, kStepsPerMs / 4);
      COZ_PROGRESS_NAMED("unit");
    }
    g_seed = x;
  };
  std::thread helper(loop);
  loop();
  helper.join();
  std::printf("nodebug units=%lu variant=%s\n", static_cast<unsigned long>(units), NODEBUG_VARIANT);
  return 0;
}
