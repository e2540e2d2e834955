// Values remembered per descriptor until the number is closed or replaced.
#include "descriptor_memo.h"

#include <gtest/gtest.h>

namespace coz {
namespace {

TEST(DescriptorMemoTest, LearnsOnceUntilForgotten) {
  auto memo = std::make_unique<DescriptorMemo<64>>();
  int learned = 0;
  auto learn = [&] { return static_cast<uint64_t>(100 + ++learned); };
  EXPECT_EQ(memo->remember(5, learn), 101u);
  EXPECT_EQ(memo->remember(5, learn), 101u) << "remembered: no second lookup";
  EXPECT_EQ(learned, 1);
  memo->forget(5);
  EXPECT_EQ(memo->remember(5, learn), 102u) << "a number closed and opened again names its new object";
  memo->forget_range(0, ~0u);
  EXPECT_EQ(memo->remember(5, learn), 103u);
}

TEST(DescriptorMemoTest, NothingKnownIsNotRemembered) {
  auto memo = std::make_unique<DescriptorMemo<64>>();
  int learned = 0;
  auto unknown = [&] { return ++learned, uint64_t{0}; };
  EXPECT_EQ(memo->remember(3, unknown), 0u);
  EXPECT_EQ(memo->remember(3, unknown), 0u);
  EXPECT_EQ(learned, 2);
}

TEST(DescriptorMemoTest, NumbersPastTheTableAreLearnedEachTime) {
  auto memo = std::make_unique<DescriptorMemo<64>>();
  int learned = 0;
  auto learn = [&] { return static_cast<uint64_t>(++learned); };
  memo->remember(64, learn);
  memo->remember(64, learn);
  memo->remember(-1, learn);
  EXPECT_EQ(learned, 3);
  memo->forget(64);  // no effect, no crash
  memo->forget_range(60, 1000);
}

// The number is closed (and forgotten) while its value is being learned:
// what was learned may name the closed object, and is not kept.
TEST(DescriptorMemoTest, AForgetDuringTheLearningWins) {
  auto memo = std::make_unique<DescriptorMemo<64>>();
  auto closed_meanwhile = [&] {
    memo->forget(7);
    return uint64_t{111};
  };
  EXPECT_EQ(memo->remember(7, closed_meanwhile), 111u) << "this caller still gets its answer";
  int learned = 0;
  EXPECT_EQ(memo->remember(7, [&] { return static_cast<uint64_t>(200 + ++learned); }), 201u);
  EXPECT_EQ(learned, 1) << "the stale value was not kept";
}

}  // namespace
}  // namespace coz
