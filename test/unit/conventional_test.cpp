// The conventional profile's tables: counts taken from the sampling path
// and the waits, written by the profiler thread and by an exiting thread.
#include "conventional.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace coz {
namespace {

std::string function_name(uint64_t entry) { return "f" + std::to_string(entry); }

/// Stack number `i`: two function frames, so no SourceLine is needed.
std::vector<StackFrame> stack(uint64_t i) { return {StackTable::function_frame(0x1000 + i), StackTable::function_frame(7)}; }

// A sample of the kernel-time sampler stands for several periods at the
// shortest periods (record_sample's weight): one add of that many.
TEST(StackTable, OneAddCountsItsWeight) {
  auto table = std::make_unique<StackTable>();
  const std::vector<StackFrame> frames = stack(1);
  table->add(frames.data(), frames.size(), 5);
  table->add(frames.data(), frames.size());
  table->add(frames.data(), frames.size(), 0);  // nothing
  auto taken = table->take_new(function_name);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].second, 6u);
}

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

// take_new passes over the slots claimed so far (ClaimedSlots), not the
// whole table: stacks seen for the first time on several threads while
// the profiler takes must each be taken, once.
TEST(StackTable, StacksNewWhileTakingAreAllTaken) {
  auto table = std::make_unique<StackTable>();
  constexpr uint64_t adders = 4, stacks_each = 400;
  std::atomic<int> running{static_cast<int>(adders)};
  std::vector<std::thread> threads;
  for (uint64_t a = 0; a < adders; ++a) {
    threads.emplace_back([&, a] {
      for (uint64_t i = 0; i < stacks_each; ++i) {
        auto frames = stack(a * stacks_each + i);
        table->add(frames.data(), frames.size(), 2);
      }
      running.fetch_sub(1);
    });
  }
  std::map<std::string, uint64_t> taken;
  auto take = [&] {
    for (auto& [folded, count] : table->take_new(function_name)) taken[folded] += count;
  };
  while (running.load() > 0) take();
  for (auto& t : threads) t.join();
  take();
  // Under half full, linear probing may still turn a stack or two away (DeepStacksFillTheWholeTable).
  EXPECT_LE(table->dropped(), 2 * 4u);
  EXPECT_EQ(2 * taken.size() + table->dropped(), 2 * adders * stacks_each);
  for (const auto& [folded, count] : taken) EXPECT_EQ(count, 2u) << folded;
}

// Deep stacks of the same depth, whose frames are aligned line addresses:
// the table must spread them over all its slots (hashed on the raw key,
// whose low bits then depend on the depth alone, 2,870 of 9,575 samples of
// 2^15 distinct paths were kept, in 2,168 stacks).
TEST(StackTable, DeepStacksFillTheWholeTable) {
  auto table = std::make_unique<StackTable>();
  std::vector<SourceLine> lines(64);  // addresses 8-aligned, as a line map's
  // Half the table. Linear probing with at most max_probes steps may still
  // turn away a stack or two, depending on where the heap put `lines` (1 of
  // 2,000 in one run of a fresh clone); the crowding bug turned away 194.
  constexpr uint64_t stacks = 2000;
  for (uint64_t s = 0; s < stacks; ++s) {
    StackFrame frames[StackTable::max_frames];
    for (size_t i = 0; i < StackTable::max_frames; ++i) {
      frames[i] = StackTable::line_frame(&lines[(s >> (i % 12)) % 2 + 2 * i]);
      if (i >= 12) frames[i] = StackTable::line_frame(&lines[32 + ((s * 7 + i) % 29)]);
    }
    table->add(frames, StackTable::max_frames);
  }
  uint64_t kept = 0;
  for (auto& [folded, count] : table->take_new(function_name)) kept += count;
  EXPECT_LE(table->dropped(), 10u);
  EXPECT_EQ(kept + table->dropped(), stacks);
}

// Waits are recorded from many threads with no lock (right after the call
// they wrapped returned, possibly holding the program's lock) while the
// profiler takes what is new: every wait counted once, with its time.
TEST(BlockedTable, WaitsFromManyThreadsAreEachTakenOnce) {
  auto table = std::make_unique<BlockedTable>();
  constexpr int threads = 3, waits_each = 100'000;
  std::vector<std::thread> waiters;
  for (int w = 0; w < threads; ++w) {
    waiters.emplace_back([&table, w] {
      for (int i = 0; i < waits_each; ++i) table->add(nullptr, i % 2 ? WaitKind::Mutex : WaitKind::Cond, 10 + w);
    });
  }
  std::map<std::pair<std::string, int>, std::pair<uint64_t, uint64_t>> totals;  // (site, kind) -> (ns, count)
  auto take = [&] {
    for (const auto& e : table->take_new()) {
      auto& t = totals[{e.site, static_cast<int>(e.kind)}];
      t.first += e.ns;
      t.second += e.count;
    }
  };
  for (int i = 0; i < 200; ++i) take();
  for (auto& th : waiters) th.join();
  take();
  ASSERT_EQ(totals.size(), 2u);
  uint64_t count = 0, ns = 0;
  for (const auto& [key, t] : totals) {
    EXPECT_EQ(key.first, "?");
    ns += t.first;
    count += t.second;
  }
  EXPECT_EQ(count, uint64_t{threads} * waits_each);
  EXPECT_EQ(ns, uint64_t{waits_each} * (10 + 11 + 12));
  EXPECT_EQ(table->dropped(), 0u);
}

TEST(BlockedTable, SitesAndKindsAreKeptApart) {
  auto table = std::make_unique<BlockedTable>();
  SourceLine a, b;
  a.file = "a.c";
  a.line = 1;
  b.file = "b.c";
  b.line = 2;
  table->add(&a, WaitKind::Mutex, 5);
  table->add(&a, WaitKind::FileLock, 7);
  table->add(&b, WaitKind::Mutex, 11);
  table->add(&a, WaitKind::Mutex, 13);
  std::map<std::pair<std::string, std::string>, std::pair<uint64_t, uint64_t>> got;
  for (const auto& e : table->take_new()) got[{e.site, wait_kind_name(e.kind)}] = {e.ns, e.count};
  std::map<std::pair<std::string, std::string>, std::pair<uint64_t, uint64_t>> want = {
      {{"a.c:1", "mutex"}, {18, 2}}, {{"a.c:1", "flock"}, {7, 1}}, {{"b.c:2", "mutex"}, {11, 1}}};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(table->take_new().empty()) << "nothing new since";
}

}  // namespace
}  // namespace coz
