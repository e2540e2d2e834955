// The board of recent wakes through the kernel: what a woken thread finds.
#include "wake_board.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace coz {
namespace {

bool any(const WakeRecord&) { return true; }

TEST(WakeBoardTest, FindsARecordThatReachedTheWaiterSinceTheWaitBegan) {
  auto board = std::make_unique<WakeBoard>();
  board->post(WakeKind::Write, 5);  // before the wait: not its waker
  uint64_t since = board->head();
  board->post(WakeKind::Write, 7);
  auto on_fd5 = [](const WakeRecord& r) { return r.kind == WakeKind::Write && r.target == 5; };
  EXPECT_FALSE(board->reached_since(since, 64, on_fd5)) << "only a wake before the wait reached fd 5";
  board->post(WakeKind::Write, 5);
  EXPECT_TRUE(board->reached_since(since, 64, on_fd5));
  EXPECT_FALSE(board->reached_since(board->head(), 64, any)) << "nothing posted since";
}

// Newest first: the wake that ended a wait is most often the last that
// reached it, and the checks are bounded.
TEST(WakeBoardTest, LooksAtTheNewestRecordsFirst) {
  auto board = std::make_unique<WakeBoard>();
  board->post(WakeKind::Signal, 0);
  board->post(WakeKind::Unlock, 1'000'000, 42);
  std::vector<WakeRecord> seen;
  board->reached_since(0, 64, [&](const WakeRecord& r) {
    seen.push_back(r);
    return false;
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].kind, WakeKind::Unlock);
  EXPECT_EQ(seen[0].target, 1'000'000);
  EXPECT_EQ(seen[0].channel, 42u);
  EXPECT_EQ(seen[1].kind, WakeKind::Signal);
  EXPECT_EQ(seen[1].target, 0);
}

TEST(WakeBoardTest, ChecksAreBounded) {
  auto board = std::make_unique<WakeBoard>();
  for (int i = 0; i < 100; ++i) board->post(WakeKind::Write, i);
  int asked = 0;
  auto oldest = [&](const WakeRecord& r) {
    ++asked;
    return r.target == 0;
  };
  EXPECT_FALSE(board->reached_since(0, 10, oldest));
  EXPECT_EQ(asked, 10);
}

TEST(WakeBoardTest, OverwrittenRecordsAreSkippedNotMisread) {
  auto board = std::make_unique<WakeBoard>();
  uint64_t since = board->head();
  for (uint64_t i = 0; i < WakeBoard::capacity + 10; ++i) board->post(WakeKind::Write, 1, i);
  // The first 10 are gone: the oldest still there is number 10, and no
  // slot is read as the record that overwrote it.
  std::vector<uint64_t> seen;
  board->reached_since(since, static_cast<int>(WakeBoard::capacity) + 10, [&](const WakeRecord& r) {
    seen.push_back(r.channel);
    return false;
  });
  ASSERT_EQ(seen.size(), WakeBoard::capacity);
  EXPECT_EQ(seen.front(), WakeBoard::capacity + 9);
  EXPECT_EQ(seen.back(), 10u);
}

// Concurrent posters: a reader never sees a record whose fields come from two posts.
TEST(WakeBoardTest, ConcurrentPostsNeverTear) {
  auto board = std::make_unique<WakeBoard>();
  std::atomic<bool> stop{false};
  std::vector<std::thread> posters;
  for (int p = 1; p <= 3; ++p) {
    posters.emplace_back([&, p] {
      for (uint64_t i = 0; !stop.load(); ++i) board->post(WakeKind::Write, p, static_cast<uint64_t>(p) * 1'000'000'000 + i % 1000);
    });
  }
  int torn = 0;
  for (int round = 0; round < 2000; ++round) {
    uint64_t head = board->head();
    board->reached_since(head > 200 ? head - 200 : 0, 200, [&](const WakeRecord& r) {
      if (r.channel / 1'000'000'000 != static_cast<uint64_t>(r.target)) ++torn;
      return false;
    });
  }
  stop = true;
  for (auto& t : posters) t.join();
  EXPECT_EQ(torn, 0);
}

}  // namespace
}  // namespace coz
