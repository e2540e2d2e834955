// spawned_worker: a second program that forker posix_spawns; profiled only
// when `-b` names it. Works ~600 ms on two threads with a progress point.
#include <coz.h>

#include <cstdint>
#include <cstdio>
#include <thread>

#include "robust_common.h"

namespace {

volatile uint64_t g_seed = 0x4321;

__attribute__((noinline)) uint64_t spawned_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:spawned_work
  return x;
}

}  // namespace

int main() {
  const double end = robust::now_ms() + 600;
  auto loop = [end] {
    uint64_t x = g_seed;
    while (robust::now_ms() < end) {
      x = spawned_work(x, robust::kStepsPerMs / 4);
      COZ_PROGRESS_NAMED("spawned unit");
    }
    g_seed = x;
  };
  std::thread helper(loop);
  loop();
  helper.join();
  std::printf("spawned_worker done\n");
  return 0;
}
