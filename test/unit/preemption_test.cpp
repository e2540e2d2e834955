// The scale of a sample's delay for a thread that waited for cores (preemption.h).
#include "preemption.h"

#include <gtest/gtest.h>

namespace coz::preemption {
namespace {

constexpr uint64_t us = 1'000;
constexpr uint64_t ms = 1'000'000;

TEST(Preemption, AThreadThatAlwaysHadACoreTakesThePeriodAsItsWallTime) {
  EXPECT_DOUBLE_EQ(wall_per_cpu({0, 0, 0, 0}, {4 * ms, 0, 0, 0}, 1.7), 1.0);
  // Blocked and woken often, its run delay only the wake-ups' waits.
  EXPECT_DOUBLE_EQ(wall_per_cpu({0, 0, 0, 0}, {4 * ms, 250 * us, 250, 0}, 1.7), 1.0);
}

TEST(Preemption, APreemptedThreadsWaitsForACoreCount) {
  // syscall_write's consumer beside a busy loop: 1.38 s on a CPU, 0.57 s
  // waiting, 13,923 preemptions and 60 blocks.
  const double f = wall_per_cpu({0, 0, 0, 0}, {1380 * ms, 570 * ms, 60, 13'923}, 1.0);
  EXPECT_NEAR(f, 1.41, 0.01);
}

TEST(Preemption, OnlyTheShareOfTheDelayThatFollowsPreemptionsCounts) {
  // Half the switches preemptions: half the delay.
  EXPECT_DOUBLE_EQ(wall_per_cpu({0, 0, 0, 0}, {2 * ms, 2 * ms, 10, 10}, 1.0), 1.5);
}

TEST(Preemption, AShortStretchKeepsTheFactorItHad) {
  EXPECT_DOUBLE_EQ(wall_per_cpu({ms, 0, 0, 0}, {ms + 100 * us, 100 * us, 0, 5}, 1.3), 1.3);
  EXPECT_FALSE(long_enough({ms, 0, 0, 0}, {ms + 100 * us, 100 * us, 0, 5}));
  EXPECT_TRUE(long_enough({ms, 0, 0, 0}, {ms + min_stretch_cpu_ns, 0, 0, 0}));
}

TEST(Preemption, CountsThatWentBackwardsChangeNothing) {
  // A thread's counts from before its tid was reused, or a failed read.
  EXPECT_DOUBLE_EQ(wall_per_cpu({10 * ms, 5 * ms, 0, 0}, {20 * ms, 1 * ms, 0, 4}, 1.2), 1.2);
  EXPECT_DOUBLE_EQ(wall_per_cpu({10 * ms, 0, 0, 9}, {20 * ms, 1 * ms, 0, 4}, 1.2), 1.2);
}

TEST(Preemption, AFactorIsBounded) {
  // Stopped by a debugger or SIGSTOP while runnable: not the scheduler's sharing.
  EXPECT_DOUBLE_EQ(wall_per_cpu({0, 0, 0, 0}, {ms, 60'000 * ms, 0, 1}, 1.0), max_factor);
}

}  // namespace
}  // namespace coz::preemption
