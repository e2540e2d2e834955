// Which descriptor numbers the program made non-blocking, until closed or cleared.
#include "nonblocking_set.h"

#include <gtest/gtest.h>

#include <memory>

namespace coz {
namespace {

TEST(NonBlockingSetTest, MarkedUntilClearedOrForgotten) {
  auto set = std::make_unique<NonBlockingSet>();
  EXPECT_FALSE(set->has(5)) << "a number nothing was seen of reads as blocking";
  set->note(5, true);
  set->note(70, true);
  EXPECT_TRUE(set->has(5));
  EXPECT_FALSE(set->has(4)) << "its neighbours are not marked";
  set->note(5, false);
  EXPECT_FALSE(set->has(5)) << "the flag cleared (F_SETFL, FIONBIO)";
  EXPECT_TRUE(set->has(70));
  set->forget(70);
  EXPECT_FALSE(set->has(70)) << "closed: the number may name a blocking object next";
}

TEST(NonBlockingSetTest, ForgetsARangeWithPartialWordsAtBothEnds) {
  auto set = std::make_unique<NonBlockingSet>();
  for (int fd : {3, 10, 63, 64, 127, 128, 200, 300}) set->note(fd, true);
  set->forget_range(10, 200);
  EXPECT_TRUE(set->has(3));
  for (int fd : {10, 63, 64, 127, 128, 200}) EXPECT_FALSE(set->has(fd)) << fd;
  EXPECT_TRUE(set->has(300));
  set->forget_range(0, ~0u);  // closefrom(0)
  EXPECT_FALSE(set->has(3));
  EXPECT_FALSE(set->has(300));
}

TEST(NonBlockingSetTest, NumbersOutsideItsRangeAreNeverMarked) {
  auto set = std::make_unique<NonBlockingSet>();
  set->note(-1, true);  // a failed accept4
  set->note(NonBlockingSet::size, true);
  EXPECT_FALSE(set->has(-1));
  EXPECT_FALSE(set->has(NonBlockingSet::size)) << "their calls keep the wait bracket";
  set->note(NonBlockingSet::size - 1, true);
  EXPECT_TRUE(set->has(NonBlockingSet::size - 1));
}

}  // namespace
}  // namespace coz
