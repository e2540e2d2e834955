// The board of recent wakes through the kernel: what a woken thread finds.
#include "wake_board.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace coz {
namespace {

bool any(const WakeRecord&) { return true; }

TEST(WakeBoardTest, FindsTheOldestMatchingRecordSinceTheWaitBegan) {
  auto board = std::make_unique<WakeBoard>();
  board->post(WakeKind::Write, 5, 100);  // before the wait: not its waker
  uint64_t since = board->head();
  board->post(WakeKind::Write, 7, 200);
  board->post(WakeKind::Write, 5, 300);
  board->post(WakeKind::Write, 5, 400);
  auto on_fd5 = [](const WakeRecord& r) { return r.kind == WakeKind::Write && r.target == 5; };
  EXPECT_EQ(board->first_since(since, 64, on_fd5), std::optional<uint64_t>(300));
  EXPECT_EQ(board->first_since(board->head(), 64, any), std::nullopt) << "nothing posted since";
}

TEST(WakeBoardTest, KindAndTargetSurviveThePacking) {
  auto board = std::make_unique<WakeBoard>();
  board->post(WakeKind::Signal, 0, 1);
  board->post(WakeKind::Unlock, 1'000'000, 2);
  std::vector<WakeRecord> seen;
  board->first_since(0, 64, [&](const WakeRecord& r) {
    seen.push_back(r);
    return false;
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].kind, WakeKind::Signal);
  EXPECT_EQ(seen[0].target, 0);
  EXPECT_EQ(seen[1].kind, WakeKind::Unlock);
  EXPECT_EQ(seen[1].target, 1'000'000);
  EXPECT_EQ(seen[1].credit, 2u);
}

TEST(WakeBoardTest, ChecksAreBounded) {
  auto board = std::make_unique<WakeBoard>();
  for (int i = 0; i < 100; ++i) board->post(WakeKind::Write, i, static_cast<uint64_t>(i));
  int asked = 0;
  auto last = [&](const WakeRecord& r) {
    ++asked;
    return r.target == 99;
  };
  EXPECT_EQ(board->first_since(0, 10, last), std::nullopt);
  EXPECT_EQ(asked, 10);
}

TEST(WakeBoardTest, OverwrittenRecordsAreSkippedNotMisread) {
  auto board = std::make_unique<WakeBoard>();
  uint64_t since = board->head();
  for (uint64_t i = 0; i < WakeBoard::capacity + 10; ++i) board->post(WakeKind::Write, 1, i);
  // The first 10 are gone: the oldest still there is number 10.
  EXPECT_EQ(board->first_since(since, 64, any), std::optional<uint64_t>(10));
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
    board->first_since(head > 200 ? head - 200 : 0, 200, [&](const WakeRecord& r) {
      if (r.credit / 1'000'000'000 != static_cast<uint64_t>(r.target)) ++torn;
      return false;
    });
  }
  stop = true;
  for (auto& t : posters) t.join();
  EXPECT_EQ(torn, 0);
}

}  // namespace
}  // namespace coz
