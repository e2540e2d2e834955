// Experiment scheduling: speedup choice and experiment length.
#include "experiment.h"

#include <gtest/gtest.h>

#include <map>

namespace coz {
namespace {

TEST(ExperimentScheduler, SpeedupsAreFivePercentStepsWithAQuarterBaselines) {
  Config c;
  ExperimentScheduler s(c, 42);
  std::map<int, int> counts;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    double x = s.choose_speedup();
    int pct = static_cast<int>(x * 100 + 0.5);
    ASSERT_EQ(pct % 5, 0) << x;
    ASSERT_GE(pct, 0);
    ASSERT_LE(pct, 100);
    counts[pct]++;
  }
  EXPECT_EQ(counts.size(), 21u);
  EXPECT_NEAR(counts[0] / double(n), 0.25, 0.02);
  EXPECT_NEAR(counts[100] / double(n), 0.75 / 20, 0.01);
}

TEST(ExperimentScheduler, FixedSpeedupKeepsBaselines) {
  Config c;
  c.fixed_speedup_percent = 35;
  ExperimentScheduler s(c, 1);
  int zero = 0, fixed = 0;
  for (int i = 0; i < 4000; ++i) {
    double x = s.choose_speedup();
    if (x == 0.0) ++zero;
    else if (x == 0.35) ++fixed;
    else ADD_FAILURE() << "unexpected speedup " << x;
  }
  EXPECT_NEAR(zero / 4000.0, 0.25, 0.03);
  EXPECT_EQ(zero + fixed, 4000);
}

TEST(ExperimentScheduler, FixedZeroSpeedupIsOnlyBaselines) {
  Config c;
  c.fixed_speedup_percent = 0;
  ExperimentScheduler s(c, 1);
  for (int i = 0; i < 100; ++i) EXPECT_DOUBLE_EQ(s.choose_speedup(), 0.0);
}

TEST(ExperimentScheduler, LinesAreChosenInProportionToTheirSamples) {
  Config config;
  ExperimentScheduler scheduler(config, 7);
  EXPECT_EQ(scheduler.choose_line({}), ExperimentScheduler::no_line);
  EXPECT_EQ(scheduler.choose_line({0, 0, 0}), ExperimentScheduler::no_line);
  std::vector<int> chosen(4, 0);
  constexpr int draws = 40'000;
  for (int i = 0; i < draws; ++i) {
    size_t line = scheduler.choose_line({0, 30, 10, 0});
    ASSERT_LT(line, chosen.size());
    ++chosen[line];
  }
  EXPECT_EQ(chosen[0], 0);
  EXPECT_EQ(chosen[3], 0);
  EXPECT_NEAR(chosen[1] / static_cast<double>(draws), 0.75, 0.02);
  EXPECT_EQ(scheduler.choose_line({0, 0, 5}), 2u);
}

TEST(ExperimentScheduler, LengthCoversTheSlowestPointWithinBounds) {
  Config c;
  c.experiment_min_ns = 50'000'000;
  c.experiment_max_ns = 1'000'000'000;
  c.target_visits = 10;
  ExperimentScheduler s(c, 1);
  EXPECT_EQ(s.choose_length({}), 50'000'000u) << "no point yet: the minimum";
  // 1 visit per ms: 10 visits in 10 ms, below the minimum.
  EXPECT_EQ(s.choose_length({{1000, 1'000'000'000}}), 50'000'000u);
  // 1 visit per 20 ms: 200 ms for 10 visits.
  EXPECT_EQ(s.choose_length({{1000, 1'000'000'000}, {50, 1'000'000'000}}), 200'000'000u);
}

TEST(ExperimentScheduler, ARarePointDoesNotStretchEveryExperiment) {
  Config c;
  c.experiment_min_ns = 50'000'000;
  c.experiment_max_ns = 1'000'000'000;
  c.target_visits = 10;
  ExperimentScheduler s(c, 1);
  // One visit per 10 s would need 100 s: ignored; the frequent point sets the length.
  EXPECT_EQ(s.choose_length({{1, 10'000'000'000}, {100, 1'000'000'000}}), 100'000'000u);
  // A point never visited does not count either.
  EXPECT_EQ(s.choose_length({{0, 5'000'000'000}}), 50'000'000u);
}

TEST(ExperimentScheduler, DelayPerSampleIsSpeedupTimesPeriod) {
  EXPECT_EQ(ExperimentScheduler::delay_per_sample(0.0, 1'000'000), 0u);
  EXPECT_EQ(ExperimentScheduler::delay_per_sample(0.35, 1'000'000), 350'000u);
  EXPECT_EQ(ExperimentScheduler::delay_per_sample(1.0, 1'000'000), 1'000'000u);
  EXPECT_EQ(ExperimentScheduler::delay_per_sample(0.5, 500'000), 250'000u) << "the period in force, not the configured one";
}

}  // namespace
}  // namespace coz
