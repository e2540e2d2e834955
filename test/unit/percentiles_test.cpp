// Tests of percentiles.h (docs/analysis.md section 13): the requests' percentiles from
// their histograms, per line and speedup, against the untreated program's.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "latency_buckets.h"
#include "percentiles.h"
#include "profile.h"

namespace coz::analysis {
namespace {

constexpr uint64_t us = 1'000;
constexpr uint64_t ms = 1'000'000;

/// One experiment of `requests`, each drawn from `latency(rng)`: a fast
/// path of `fast` and, one request in a hundred, a slow one of `slow`.
Experiment experiment(const std::string& line, double speedup, uint64_t fast, uint64_t slow, int requests,
                      std::mt19937_64& rng, uint64_t duration = 1'000 * ms) {
  Experiment e;
  e.selected = line;
  e.speedup = speedup;
  e.duration_ns = duration;
  std::map<uint32_t, uint64_t> counts;
  std::uniform_real_distribution<double> jitter(0.95, 1.05);
  for (int i = 0; i < requests; ++i) {
    const uint64_t base = i % 100 == 99 ? slow : fast;
    ++counts[latency::bucket_of(static_cast<uint64_t>(static_cast<double>(base) * jitter(rng)))];
  }
  LatencyHistogramRecord h;
  h.name = "request";
  h.buckets.assign(counts.begin(), counts.end());
  e.latency_histograms.push_back(h);
  return e;
}

TEST(Percentiles, TheSlowPathRanksFirstForTheTailAndTheCommonPathForTheMedian) {
  std::mt19937_64 rng(42);
  Profile profile;
  for (int i = 0; i < 20; ++i) {
    profile.experiments.push_back(experiment("a.c:1", 0.0, 100 * us, 10 * ms, 2'000, rng));
    // The slow path's line at 50%: its requests take 5 ms instead of 10.
    profile.experiments.push_back(experiment("slow.c:7", 0.5, 100 * us, 5 * ms, 2'000, rng));
    // The common path's line at 50%: every request 50 us shorter.
    profile.experiments.push_back(experiment("common.c:3", 0.5, 50 * us, 10 * ms - 50 * us, 2'000, rng));
  }
  const std::vector<PointPercentiles> result = analyze_percentiles(profile);
  ASSERT_EQ(result.size(), 1u);
  const PointPercentiles& p = result[0];
  EXPECT_EQ(p.point, "request");
  EXPECT_EQ(p.requests, 120'000u);
  EXPECT_NEAR(p.baseline_ns[0], 100.0 * us, 5.0 * us);
  EXPECT_GT(p.baseline_ns[2], 2.0 * ms) << "p99 lies among the slow requests";
  ASSERT_EQ(p.lines.size(), 2u);
  EXPECT_EQ(p.lines[0].line, "slow.c:7") << "ranked by p99";
  const auto& slow = p.lines[0].at_half;
  const auto& common = p.lines[1].at_half;
  EXPECT_NEAR(slow[2].change, 0.5, 0.06);
  EXPECT_LT(slow[2].low, 0.5);
  EXPECT_GT(slow[2].high, 0.5);
  EXPECT_NEAR(slow[0].change, 0.0, 0.02);
  EXPECT_NEAR(common[0].change, 0.5, 0.03);
  EXPECT_LT(std::abs(common[2].change), 0.1);
}

TEST(Percentiles, RequestsLongerForTheirExperimentCountMoreSinceFewerFitInIt) {
  std::mt19937_64 rng(7);
  Profile profile;
  // Experiments of 40 ms: a 10 ms request began and ended inside one in 3
  // cases of 4 only, so each stands for 4/3 of one.
  for (int i = 0; i < 10; ++i) {
    profile.experiments.push_back(experiment("a.c:1", 0.0, 100 * us, 10 * ms, 1'000, rng, 40 * ms));
  }
  const std::vector<PointPercentiles> result = analyze_percentiles(profile);
  ASSERT_EQ(result.size(), 1u);
  EXPECT_NEAR(result[0].baseline_requests, 10 * (990 * (1 + 0.1 / 39.9) + 10 * 4.0 / 3.0), 2.0);
}

TEST(Percentiles, APointWithoutHistogramsHasNoPercentiles) {
  Profile profile;
  Experiment e;
  e.selected = "a.c:1";
  e.duration_ns = 50 * ms;
  e.latency.push_back({"request", 10, 10, 0, 1.0});
  profile.experiments.push_back(e);
  EXPECT_TRUE(analyze_percentiles(profile).empty());
}

TEST(Percentiles, TooFewRequestsForAPercentileLeaveItUndefined) {
  std::mt19937_64 rng(3);
  Profile profile;
  profile.experiments.push_back(experiment("a.c:1", 0.0, 100 * us, 10 * ms, 150, rng));
  profile.experiments.push_back(experiment("b.c:1", 0.5, 100 * us, 10 * ms, 150, rng));
  const std::vector<PointPercentiles> result = analyze_percentiles(profile);
  ASSERT_EQ(result.size(), 1u);
  EXPECT_TRUE(std::isfinite(result[0].baseline_ns[0]));
  EXPECT_FALSE(std::isfinite(result[0].baseline_ns[2])) << "150 requests cannot place a p99";
  ASSERT_EQ(result[0].lines.size(), 1u);
  EXPECT_FALSE(std::isfinite(result[0].lines[0].at_half[2].change));
}

TEST(Percentiles, TheHistogramRecordIsReadAndABadOneSkippedWithAWarning) {
  std::istringstream in(
      "experiment\tselected=a.c:1\tspeedup=0.00\tduration=50000000\tselected-samples=0\n"
      "latency-point\tname=request\tarrivals=3\tdepartures=3\tdifference=0\n"
      "latency-histogram\tname=request\tscheme=log2-32\tbuckets=500:2,501:1\n"
      "latency-histogram\tname=other\tscheme=log2-64\tbuckets=500:2\n"
      "latency-histogram\tname=third\tscheme=log2-32\tbuckets=501:2,500:1\n");
  Profile profile;
  read_profile(in, "test.coz", profile);
  ASSERT_EQ(profile.experiments.size(), 1u);
  ASSERT_EQ(profile.experiments[0].latency_histograms.size(), 1u);
  EXPECT_EQ(profile.experiments[0].latency_histograms[0].buckets.size(), 2u);
  EXPECT_EQ(profile.warnings.size(), 2u);
}

}  // namespace
}  // namespace coz::analysis
