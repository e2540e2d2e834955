// no_coz_h: a program with no coz.h at all; its progress is marked from the
// command line (`coz run --progress FILE:LINE`, `--latency BEGIN END`).
// Two threads each handle --items items: a request (begin line, 0.3 ms of
// work, end line), then one visit to the item line. Each marked line is one
// atomic increment, so the counts printed at the end are the exact numbers
// of times each line ran.
//
// Prints "no_coz_h items=N begins=B ends=E".
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

constexpr uint64_t kStepsPerMs = 600'000;
volatile uint64_t g_seed = 0x1234;
std::atomic<uint64_t> g_items{0};
std::atomic<uint64_t> g_begins{0};
std::atomic<uint64_t> g_ends{0};

// @line:no_code (a comment: no code on this line)

__attribute__((noinline)) uint64_t item_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:item_work
  return x;
}

__attribute__((noinline)) void handle_items(uint64_t items) {
  uint64_t x = g_seed;
  for (uint64_t i = 0; i < items; ++i) {
    g_begins.fetch_add(1, std::memory_order_relaxed);  // @line:request_begin
    x = item_work(x, kStepsPerMs * 3 / 10);
    g_ends.fetch_add(1, std::memory_order_relaxed);  // @line:request_end
    g_items.fetch_add(1, std::memory_order_relaxed);  // @line:item_done
  }
  g_seed = x;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t items = 3000;
  if (argc == 3 && std::strcmp(argv[1], "--items") == 0) items = std::strtoull(argv[2], nullptr, 10);
  std::thread helper(handle_items, items);
  handle_items(items);
  helper.join();
  std::printf("no_coz_h items=%lu begins=%lu ends=%lu\n", static_cast<unsigned long>(g_items.load()),
              static_cast<unsigned long>(g_begins.load()), static_cast<unsigned long>(g_ends.load()));
  return 0;
}
