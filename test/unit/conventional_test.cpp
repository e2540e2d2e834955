// The conventional profile's tables: counts taken from the sampling path
// and the waits, written by the profiler thread and by an exiting thread.
#include "conventional.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace coz {
namespace {

std::string function_name(uint64_t entry) { return "f" + std::to_string(entry); }

/// Stack number `i`: two function frames, so no SourceLine is needed.
std::vector<StackFrame> stack(uint64_t i) { return {StackTable::function_frame(0x1000 + i), StackTable::function_frame(7)}; }

// Two threads take what is new (the profiler thread after an experiment,
// an exiting thread's last records) while samples keep coming: every sample
// must be taken exactly once.
TEST(StackTable, ConcurrentTakersTakeEachSampleOnce) {
  auto table = std::make_unique<StackTable>();
  constexpr uint64_t stacks = 32;
  std::atomic<bool> adding{true};
  uint64_t added = 0;
  std::thread adder([&] {
    while (adding.load(std::memory_order_relaxed)) {
      auto frames = stack(added++ % stacks);
      table->add(frames.data(), frames.size());
    }
  });
  // Rounds in which both takers start together, so they reach the same slots at once.
  constexpr uint64_t rounds = 500;
  std::atomic<uint64_t> ready{0};
  uint64_t taken[2] = {0, 0};
  auto taker = [&](int t) {
    for (uint64_t r = 1; r <= rounds; ++r) {
      ready.fetch_add(1);
      while (ready.load() < 2 * r) {
      }
      for (auto& [folded, count] : table->take_new(function_name)) taken[t] += count;
    }
  };
  std::thread second(taker, 1);
  taker(0);
  second.join();
  adding.store(false);
  adder.join();
  for (auto& [folded, count] : table->take_new(function_name)) taken[0] += count;
  EXPECT_EQ(table->dropped(), 0u);
  EXPECT_EQ(taken[0] + taken[1], added) << "samples taken twice (more) or lost (fewer)";
}

}  // namespace
}  // namespace coz
