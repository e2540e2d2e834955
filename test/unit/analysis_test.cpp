// Tests of analyze() and compare(): hand-computed expectations for each
// formula of docs/analysis.md, a coverage check on simulated profiles, and the
// shared golden vectors in test/vectors/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "analysis.h"
#include "analysis_json.h"
#include "compare.h"
#include "profile.h"
#include "verdicts.h"

namespace coz::analysis {
namespace {

constexpr uint64_t ms = 1'000'000;  // ns

// Builds profiles without going through the text format.
class ProfileBuilder {
 public:
  /// `selected_samples`: 0 makes an experiment at a speedup untreated (no delay).
  ProfileBuilder& experiment(const std::string& line, double speedup, uint64_t duration_ns,
                             uint64_t selected_samples = 5) {
    Experiment e;
    e.selected = line;
    e.speedup = speedup;
    e.duration_ns = duration_ns;
    e.selected_samples = selected_samples;
    p_.experiments.push_back(e);
    return *this;
  }
  ProfileBuilder& visits(const std::string& point, uint64_t delta) {
    p_.experiments.back().throughput.push_back({point, delta});
    return *this;
  }
  ProfileBuilder& latency(const std::string& point, uint64_t arrivals, int64_t difference,
                          double mean_in_flight = -1.0) {
    p_.experiments.back().latency.push_back({point, arrivals, arrivals, difference, mean_in_flight});
    return *this;
  }
  ProfileBuilder& samples(const std::string& line, uint64_t count) {
    p_.samples[line].count += count;
    return *this;
  }
  const Profile& get() const { return p_; }

 private:
  Profile p_;
};

const LineEffect* find(const Analysis& a, const std::string& line, const std::string& point = "p") {
  for (const LineEffect& e : a.effects) {
    if (e.line == line && e.point == point) return &e;
  }
  return nullptr;
}

const SpeedupEstimate* at(const LineEffect& e, double s) {
  for (const SpeedupEstimate& p : e.curve) {
    if (std::abs(p.line_speedup - s) < 1e-9) return &p;
  }
  return nullptr;
}

// The pooled baseline, whose formulas the hand-computed tests below check
// (docs/analysis.md sections 5-6); the default, local, has its own tests.
Analysis analyze_pooled(const Profile& profile) {
  AnalysisOptions pooled;
  pooled.baseline = Baseline::Pooled;
  return analyze(profile, pooled);
}

TEST(Analysis, ThroughputSpeedupFromPeriods) {
  // Baseline 10 visits in 100 ms (P = 10 ms); at 50%, 12.5 visits per 100 ms
  // (25 in 200 ms, P = 8 ms): the program is (10 - 8) / 10 = 20% faster.
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 12);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 13);
  Analysis a = analyze_pooled(b.get());
  ASSERT_EQ(a.effects.size(), 1u);
  const LineEffect& e = a.effects[0];
  EXPECT_EQ(e.kind, PointKind::Throughput);
  EXPECT_EQ(e.baseline, BaselineSource::Pooled);
  EXPECT_DOUBLE_EQ(e.baseline_ns, 10.0 * ms);
  ASSERT_EQ(e.curve.size(), 2u);
  EXPECT_DOUBLE_EQ(e.curve[0].line_speedup, 0.0);
  EXPECT_DOUBLE_EQ(e.curve[0].program_speedup, 0.0);
  EXPECT_DOUBLE_EQ(e.curve[1].line_speedup, 0.5);
  EXPECT_NEAR(e.curve[1].program_speedup, 0.20, 1e-12);
  EXPECT_EQ(e.curve[1].experiments, 2u);
  EXPECT_EQ(e.curve[1].visits, 25u);
  EXPECT_EQ(e.curve[1].duration_ns, 200 * ms);
  EXPECT_DOUBLE_EQ(e.curve[1].value_ns, 8.0 * ms);
  EXPECT_EQ(e.experiments, 3u);
  EXPECT_NEAR(e.max_effect, 0.20, 1e-12);
  // Mean over [0, 0.5] of the line from (0, 0) to (0.5, 0.2).
  EXPECT_NEAR(e.impact, 0.10, 1e-12);
  EXPECT_TRUE(e.measured);
}

TEST(Analysis, SlowerProgramIsNegative) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 1.0, 100 * ms).visits("p", 8);  // P = 12.5 ms
  Analysis a = analyze(b.get());
  EXPECT_NEAR(a.effects.at(0).curve.at(1).program_speedup, -0.25, 1e-12);
}

TEST(Analysis, ALineWhoseSpeedupsInsertedNoDelayIsUnmeasured) {
  // b.c:2 was tried at 50% but never sampled: no delay, nothing tried. c.c:3
  // was sampled in one of its two experiments at 50%: both count (intention
  // to treat: where the line does not run, its speedup does nothing).
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 20);
  b.experiment("b.c:2", 0.5, 100 * ms, 0).visits("p", 5);
  b.experiment("b.c:2", 0.0, 100 * ms, 0).visits("p", 10);  // a 0% run is a baseline, sampled or not
  b.experiment("c.c:3", 0.5, 100 * ms).visits("p", 20);
  b.experiment("c.c:3", 0.5, 100 * ms, 0).visits("p", 10);
  Analysis a = analyze(b.get());
  ASSERT_EQ(a.points.size(), 1u);
  EXPECT_EQ(a.points[0].experiments, 6u);
  EXPECT_EQ(a.points[0].baseline_experiments, 2u);
  EXPECT_DOUBLE_EQ(a.points[0].baseline_ns, 10.0 * ms);
  auto find = [&](const std::string& line) -> const LineEffect* {
    for (const LineEffect& e : a.effects) {
      if (e.line == line) return &e;
    }
    return nullptr;
  };
  const LineEffect* rare = find("b.c:2");
  ASSERT_TRUE(rare);
  EXPECT_FALSE(rare->measured);
  EXPECT_EQ(rare->label, Label::Unmeasured);
  EXPECT_EQ(rare->experiments, 2u);
  EXPECT_EQ(rare->untreated_experiments, 1u);
  EXPECT_EQ(rare->measured_experiments, 0u);
  ASSERT_EQ(rare->curve.size(), 1u) << "only its own 0% point";
  EXPECT_EQ(rare->curve[0].line_speedup, 0.0);
  const LineEffect* partly = find("c.c:3");
  ASSERT_TRUE(partly);
  EXPECT_TRUE(partly->measured);
  EXPECT_EQ(partly->measured_experiments, 2u);
  EXPECT_EQ(partly->untreated_experiments, 1u);
  ASSERT_NE(at(*partly, 0.5), nullptr);
  EXPECT_NEAR(at(*partly, 0.5)->program_speedup, 1.0 - (200.0 / 30) / 10.0, 1e-12);  // 30 visits in 200 ms
}

TEST(Analysis, ZeroDeltaStillCountsItsDuration) {
  // The point was not reached in one 0% run: 10 visits in 200 ms, P(0) = 20 ms.
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 0);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 10);  // P = 10 ms
  Analysis a = analyze(b.get());
  const LineEffect& e = a.effects.at(0);
  EXPECT_DOUBLE_EQ(e.baseline_ns, 20.0 * ms);
  EXPECT_NEAR(at(e, 0.5)->program_speedup, 0.5, 1e-12);
  EXPECT_EQ(e.curve.at(0).experiments, 2u);
}

TEST(Analysis, PooledZeroDeltaGivesNoEstimate) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 0);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 0);
  Analysis a = analyze(b.get());
  const LineEffect& e = a.effects.at(0);
  EXPECT_EQ(at(e, 0.5), nullptr);
  EXPECT_FALSE(e.measured);
  EXPECT_EQ(e.experiments, 3u) << "experiments without an estimate still count";
}

TEST(Analysis, LatencyByLittlesLaw) {
  // Baseline: 10 arrivals in 100 ms (lambda = 0.1/ms), 2 in flight: W = 20 ms.
  // At 50%: 20 arrivals in 200 ms (0.1/ms), 1.5 in flight on average: W = 15 ms, +25%.
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).latency("p", 10, 2);
  b.experiment("a.c:1", 0.5, 200 * ms).latency("p", 20, 9, 1.5);  // mean-in-flight wins over difference
  Analysis a = analyze(b.get());
  const LineEffect& e = a.effects.at(0);
  EXPECT_EQ(e.kind, PointKind::Latency);
  EXPECT_DOUBLE_EQ(e.baseline_ns, 20.0 * ms);
  EXPECT_DOUBLE_EQ(at(e, 0.5)->value_ns, 15.0 * ms);
  EXPECT_NEAR(at(e, 0.5)->program_speedup, 0.25, 1e-12);
}

TEST(Analysis, LatencyPoolsDurationWeightedMeans) {
  // L = (100*2 + 300*1) / 400 = 1.25; lambda = (10 + 10) / 400 ms = 0.05/ms; W = 25 ms.
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).latency("p", 10, 2);  // W(0) = 20 ms
  b.experiment("a.c:1", 0.25, 100 * ms).latency("p", 10, 2);
  b.experiment("a.c:1", 0.25, 300 * ms).latency("p", 10, 1);
  Analysis a = analyze(b.get());
  const LineEffect& e = a.effects.at(0);
  EXPECT_DOUBLE_EQ(at(e, 0.25)->value_ns, 25.0 * ms);
  EXPECT_NEAR(at(e, 0.25)->program_speedup, -0.25, 1e-12);
  EXPECT_EQ(at(e, 0.25)->visits, 20u);
  EXPECT_EQ(at(e, 0.25)->duration_ns, 400 * ms);
}

TEST(Analysis, PooledBaselineUsesEveryLinesZeroPercentRuns) {
  // 0% runs of other lines: 30 visits in 300 ms -> P(0) = 10 ms. b.c at 50%: 8 ms.
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("c.c:3", 0.0, 200 * ms).visits("p", 20);
  b.experiment("b.c:2", 0.5, 200 * ms).visits("p", 25);
  Analysis a = analyze_pooled(b.get());
  const LineEffect* e = find(a, "b.c:2");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->baseline, BaselineSource::Pooled);
  EXPECT_DOUBLE_EQ(e->baseline_ns, 10.0 * ms);
  ASSERT_EQ(e->curve.size(), 1u) << "the pooled baseline is not one of this line's points";
  EXPECT_NEAR(e->curve[0].program_speedup, 0.2, 1e-12);
  EXPECT_EQ(e->experiments, 1u);
  const LineEffect* own = find(a, "a.c:1");
  EXPECT_DOUBLE_EQ(own->baseline_ns, 10.0 * ms) << "pooled for every line, also one with 0% runs";
  EXPECT_TRUE(std::isnan(own->curve.at(0).se)) << "a line's own 0% point is part of the baseline: no interval";
}

TEST(Analysis, LineBaselineWithoutVisitsFallsBackToPooled) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 10);
  b.experiment("b.c:2", 0.0, 100 * ms).visits("p", 0);
  b.experiment("b.c:2", 0.5, 100 * ms).visits("p", 20);
  AnalysisOptions line;
  line.baseline = Baseline::Line;
  Analysis a = analyze(b.get(), line);
  EXPECT_EQ(find(a, "a.c:1")->baseline, BaselineSource::Line);
  EXPECT_DOUBLE_EQ(find(a, "a.c:1")->curve.at(0).program_speedup, 0.0) << "own baseline: exactly 0 at 0%";
  const LineEffect* e = find(a, "b.c:2");
  EXPECT_EQ(e->baseline, BaselineSource::Pooled);
  EXPECT_DOUBLE_EQ(e->baseline_ns, 20.0 * ms) << "global pool: 10 visits in 200 ms";
  EXPECT_NEAR(at(*e, 0.5)->program_speedup, 0.75, 1e-12);
}

TEST(Analysis, NoBaselineAnywhereMeansNoCurve) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 10);
  Analysis a = analyze(b.get());
  ASSERT_EQ(a.effects.size(), 1u);
  EXPECT_TRUE(a.effects[0].curve.empty());
  EXPECT_FALSE(a.effects[0].measured);
  EXPECT_EQ(a.effects[0].impact, 0.0);
}

TEST(Analysis, SpeedupsPoolAtFivePercentSteps) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.24, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.26, 100 * ms).visits("p", 15);
  b.experiment("a.c:1", 0.30, 100 * ms).visits("p", 10);
  Analysis a = analyze(b.get());
  const LineEffect& e = a.effects.at(0);
  ASSERT_EQ(e.curve.size(), 3u);
  EXPECT_DOUBLE_EQ(e.curve[1].line_speedup, 0.25);
  EXPECT_EQ(e.curve[1].experiments, 2u);
  EXPECT_NEAR(e.curve[1].program_speedup, 0.2, 1e-12);  // 25 visits in 200 ms
  EXPECT_DOUBLE_EQ(e.curve[2].line_speedup, 0.30);
}

TEST(Analysis, ImpactIsTheTrapezoidMeanOverTheMeasuredRange) {
  // Points (0,0) (0.5,0.2) (1,0.375): area 0.05 + 0.14375 over a range of 1.
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.5, 200 * ms).visits("p", 25);
  b.experiment("a.c:1", 1.0, 100 * ms).visits("p", 16);
  Analysis a = analyze(b.get());
  EXPECT_NEAR(a.effects.at(0).impact, 0.19375, 1e-12);
  EXPECT_NEAR(a.effects.at(0).max_effect, 0.375, 1e-12);
}

TEST(Analysis, RankingByImpactThenUnmeasuredLast) {
  ProfileBuilder b;
  b.experiment("low.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("low.c:1", 0.5, 100 * ms).visits("p", 11);
  b.experiment("neg.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("neg.c:1", 0.5, 100 * ms).visits("p", 5);
  b.experiment("base.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("high.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("high.c:1", 0.5, 100 * ms).visits("p", 20);
  Analysis a = analyze(b.get());
  ASSERT_EQ(a.effects.size(), 4u);
  EXPECT_EQ(a.effects[0].line, "high.c:1");
  EXPECT_EQ(a.effects[1].line, "low.c:1");
  EXPECT_EQ(a.effects[2].line, "neg.c:1");
  EXPECT_LT(a.effects[2].impact, 0.0);
  EXPECT_EQ(a.effects[3].line, "base.c:1") << "no measurement above 0%: listed, after the others";
  EXPECT_FALSE(a.effects[3].measured);
  EXPECT_EQ(a.effects[3].impact, 0.0);
}

TEST(Analysis, SamplesAndShare) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.samples("a.c:1", 30).samples("z.c:9", 90);
  Analysis a = analyze(b.get());
  EXPECT_EQ(a.total_samples, 120u);
  EXPECT_EQ(a.effects.at(0).samples, 30u);
  EXPECT_DOUBLE_EQ(a.effects.at(0).sample_share, 0.25);
}

TEST(Analysis, PointFilterAndMinExperiments) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10).visits("q", 5);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 10);
  b.experiment("b.c:1", 0.0, 100 * ms).visits("p", 10);
  AnalysisOptions only_q;
  only_q.point = "q";
  Analysis a = analyze(b.get(), only_q);
  ASSERT_EQ(a.effects.size(), 1u);
  EXPECT_EQ(a.effects[0].point, "q");
  ASSERT_EQ(a.points.size(), 2u) << "points lists every point seen";
  EXPECT_EQ(a.points[0].name, "p");
  EXPECT_EQ(a.points[1].name, "q");

  AnalysisOptions two;
  two.min_experiments = 2;
  a = analyze(b.get(), two);
  ASSERT_EQ(a.effects.size(), 1u);
  EXPECT_EQ(a.effects[0].line, "a.c:1");
  EXPECT_EQ(a.effects[0].point, "p");
  EXPECT_EQ(a.experiments, 3u);
}

TEST(Analysis, SameNameAsThroughputAndLatencyStaysApart) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("r", 10).latency("r", 10, 1);
  Analysis a = analyze(b.get());
  ASSERT_EQ(a.effects.size(), 2u);
  EXPECT_NE(a.effects[0].kind, a.effects[1].kind);
  ASSERT_EQ(a.points.size(), 2u);
  EXPECT_EQ(a.points[0].kind, PointKind::Latency) << "by name, then kind name";
}

TEST(Analysis, EmptyProfile) {
  Analysis a = analyze(Profile{});
  EXPECT_TRUE(a.effects.empty());
  EXPECT_EQ(a.experiments, 0u);
}


// --- intervals (docs/analysis.md sections 3-7), hand-computed ---

// Two cells with two experiments each: a0 (10, 12 visits per 100 ms) and
// a.5 (12, 14). Pearson terms: a0 R = 200/22 ms, m = 11 -> (1 + 1)/11;
// a.5 R = 200/26, m = 13 -> (1 + 1)/13. N - K = 4 - 2 = 2.
ProfileBuilder two_by_two() {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 12);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 12);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 14);
  return b;
}

TEST(Intervals, DispersionIsPearsonOverAllCells) {
  Analysis a = analyze_pooled(two_by_two().get());
  ASSERT_EQ(a.points.size(), 1u);
  const double phi = (2.0 / 11 + 2.0 / 13) / 2;
  EXPECT_NEAR(a.points[0].dispersion, phi, 1e-12);
  EXPECT_EQ(a.points[0].dispersion_dof, 2);
  EXPECT_EQ(a.points[0].baseline_visits, 22u);
  EXPECT_EQ(a.points[0].baseline_experiments, 2u);
}

TEST(Intervals, ProgramSpeedupIntervalByTheDeltaMethod) {
  Analysis a = analyze_pooled(two_by_two().get());
  const LineEffect& e = a.effects.at(0);
  const double phi = (2.0 / 11 + 2.0 / 13) / 2;
  const double r = 22.0 / 26.0;  // P(.5)/P(0) with equal durations
  const double se = r * std::sqrt(phi * (1.0 / 26 + 1.0 / 22));
  const SpeedupEstimate* p = at(e, 0.5);
  EXPECT_NEAR(p->program_speedup, 1 - r, 1e-12);
  EXPECT_NEAR(p->se, se, 1e-12);
  EXPECT_NEAR(p->low, 1 - r - z95 * se, 1e-12);
  EXPECT_NEAR(p->high, 1 - r + z95 * se, 1e-12);
  // One measured point: impact = delta/2, slope = delta/s; both carry the
  // point's variance (baseline included) scaled by their coefficient.
  EXPECT_NEAR(e.impact, (1 - r) / 2, 1e-12);
  EXPECT_NEAR(e.impact_se, se / 2, 1e-12);
  EXPECT_NEAR(e.slope, (1 - r) / 0.5, 1e-12);
  EXPECT_NEAR(e.slope_se, se / 0.5, 1e-12);
}

TEST(Intervals, SharedBaselineIsCountedOnceInTheImpact) {
  // Two measured points share one baseline: Var = phi (sum a^2 r^2 / X + (sum a r)^2 / X0),
  // larger than treating the points as independent (which would split the baseline term).
  ProfileBuilder b = two_by_two();
  b.experiment("a.c:1", 1.0, 100 * ms).visits("p", 15);
  b.experiment("a.c:1", 1.0, 100 * ms).visits("p", 17);
  Analysis a = analyze_pooled(b.get());
  const LineEffect& e = a.effects.at(0);
  const double phi = a.points[0].dispersion;
  const double r1 = 22.0 / 26, r2 = 22.0 / 32;
  const double a1 = 0.5, a2 = 0.25;  // trapezoid: (1 - 0)/2, (1 - .5)/2
  EXPECT_NEAR(e.impact, a1 * (1 - r1) + a2 * (1 - r2), 1e-12);
  const double var = phi * (a1 * a1 * r1 * r1 / 26 + a2 * a2 * r2 * r2 / 32 +
                            (a1 * r1 + a2 * r2) * (a1 * r1 + a2 * r2) / 22);
  EXPECT_NEAR(e.impact_se, std::sqrt(var), 1e-12);
  // Slope: weights X s: (26 * .5 * d1 + 32 * 1 * d2) / (26 * .25 + 32).
  EXPECT_NEAR(e.slope, (13 * (1 - r1) + 32 * (1 - r2)) / 38.5, 1e-12);
  // Phi from three cells now: + (1 + 1)/16 for the 1.0 cell (m = 16).
  EXPECT_NEAR(phi, (2.0 / 11 + 2.0 / 13 + 2.0 / 16) / 3, 1e-12);
}

TEST(Intervals, NoDispersionWithoutARepeatedCell) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 12);
  Analysis a = analyze(b.get());
  EXPECT_TRUE(std::isnan(a.points.at(0).dispersion));
  const LineEffect& e = a.effects.at(0);
  EXPECT_EQ(e.label, Label::InsufficientData);
  EXPECT_TRUE(std::isnan(e.impact_se));
  EXPECT_FALSE(e.experiments_needed.has_value());
  EXPECT_NEAR(e.impact, (1 - 10.0 / 12) / 2, 1e-12) << "the estimate exists without an interval";
}

TEST(Intervals, LatencyDispersionUsesArrivals) {
  // y = d L, x = arrivals: cell a0 (100ms*2, 10), (100ms*3, 10): R = 25 ms;
  // terms (200 - 250)^2 / (25^2 * 10) (ms units) twice = 0.4 each -> phi = 0.8 / 1.
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).latency("p", 10, 0, 2.0);
  b.experiment("a.c:1", 0.0, 100 * ms).latency("p", 10, 0, 3.0);
  b.experiment("a.c:1", 0.5, 100 * ms).latency("p", 10, 0, 2.0);
  Analysis a = analyze_pooled(b.get());
  EXPECT_NEAR(a.points.at(0).dispersion, 0.8, 1e-12);
  const LineEffect& e = a.effects.at(0);
  const double r = 20.0 / 25.0;
  EXPECT_NEAR(at(e, 0.5)->program_speedup, 1 - r, 1e-12);
  EXPECT_NEAR(at(e, 0.5)->se, r * std::sqrt(0.8 * (1.0 / 10 + 1.0 / 20)), 1e-12);
}

TEST(Intervals, LabelsAndExperimentsNeeded) {
  // Clearly positive: +50% at 50% over 12 experiments, noisy (phi about 6);
  // und.c: +3% from one experiment, its impact's half-width about 10% ->
  // undecided. So is the same +50% line on 4 experiments: too few for a verdict.
  ProfileBuilder b;
  for (uint64_t v : {900, 1100, 950, 1050}) b.experiment("pos.c:1", 0.0, 100 * ms).visits("p", v);
  for (int i = 0; i < 3; ++i) {
    for (uint64_t v : {1900, 2100, 1950, 2050}) b.experiment("pos.c:1", 0.5, 100 * ms).visits("p", v);
  }
  for (uint64_t v : {1900, 2100, 1950, 2050}) b.experiment("thin.c:1", 0.5, 100 * ms).visits("p", v);
  b.experiment("und.c:1", 0.5, 100 * ms).visits("p", 1030);
  Analysis a = analyze(b.get());
  const LineEffect* pos = find(a, "pos.c:1");
  EXPECT_EQ(pos->label, Label::Positive);
  EXPECT_EQ(pos->experiments_needed, 0u);
  const LineEffect* thin = find(a, "thin.c:1");
  EXPECT_GT(thin->impact_low, 0.0);
  EXPECT_EQ(thin->label, Label::Undecided) << "4 measured experiments: no verdict";
  EXPECT_GE(thin->experiments_needed.value_or(0), 6u) << "at least the 6 it lacks";
  const LineEffect* und = find(a, "und.c:1");
  ASSERT_EQ(und->label, Label::Undecided) << und->impact << " +- " << z95 * und->impact_se;
  // Section 7: its confidence sequence excluding 0 at the e-BH level of a next
  // discovery (m = 3 tested, R = 1: 2 * 0.05 / 3), or settling within +-h
  // (the sequence at 10%, at its own scale); and at least the 9 measured
  // experiments it lacks.
  double qe = anytime_half_width(und->impact_se, (2 * false_discovery_rate) / 3) / std::abs(und->impact);
  double qh = anytime_half_width(und->impact_se, 2.0 * false_discovery_rate, equivalence_mixture_scale) / settle_half_width;
  double f = std::min(qe * qe, qh * qh);
  EXPECT_EQ(und->experiments_needed, std::max<uint64_t>(static_cast<uint64_t>(std::ceil(1 * (f - 1))), 9u));
}

TEST(Intervals, NoEffectNeedsANarrowIntervalAroundZero) {
  ProfileBuilder b;
  for (int i = 0; i < 20; ++i) {
    b.experiment("flat.c:1", 0.0, 100 * ms).visits("p", 10000 + (i % 2) * 50);
    b.experiment("flat.c:1", 0.5, 100 * ms).visits("p", 10000 + (i % 2) * 50);
  }
  for (int i = 0; i < 10; ++i) b.experiment("neg.c:1", 0.5, 100 * ms).visits("p", 5000 + (i % 2) * 50);
  Analysis a = analyze(b.get());
  EXPECT_EQ(find(a, "flat.c:1")->label, Label::NoEffect);
  EXPECT_LE(find(a, "flat.c:1")->impact_low, 0.0);
  EXPECT_GE(find(a, "flat.c:1")->impact_high, 0.0);
  EXPECT_EQ(find(a, "neg.c:1")->label, Label::Negative);
}

// Simulated profiles with a known effect: the 95% intervals must cover the
// truth about 95% of the time, for the curve points and for the slope.
class Coverage : public ::testing::TestWithParam<Baseline> {};

TEST_P(Coverage, OnSimulatedProfiles) {
  std::mt19937_64 rng(20240611);
  const double true_slope = 0.4;  // program speedup = 0.4 * s
  const int reps = 400;
  AnalysisOptions options;
  options.baseline = GetParam();
  int point_hits = 0, slope_hits = 0, points = 0;
  for (int rep = 0; rep < reps; ++rep) {
    ProfileBuilder b;
    std::uniform_int_distribution<uint64_t> length(30, 70);
    for (int i = 0; i < 60; ++i) {
      double s = 0.25 * (i % 5);
      uint64_t d = length(rng) * ms;
      double period = 1.0 * ms * (1 - true_slope * s);
      std::poisson_distribution<uint64_t> visits(static_cast<double>(d) / period);
      b.experiment(i % 2 ? "a.c:1" : "b.c:1", s, d).visits("p", visits(rng));
    }
    Analysis a = analyze(b.get(), options);
    for (const LineEffect& e : a.effects) {
      for (const SpeedupEstimate& p : e.curve) {
        if (p.line_speedup == 0.0) continue;
        ++points;
        point_hits += p.low <= true_slope * p.line_speedup && true_slope * p.line_speedup <= p.high;
      }
      slope_hits += e.slope_low <= true_slope && true_slope <= e.slope_high;
    }
  }
  double point_coverage = static_cast<double>(point_hits) / points;
  double slope_coverage = static_cast<double>(slope_hits) / (2 * reps);
  EXPECT_GT(point_coverage, 0.92) << point_coverage;
  EXPECT_LT(point_coverage, 0.98) << point_coverage;
  EXPECT_GT(slope_coverage, 0.92) << slope_coverage;
  EXPECT_LT(slope_coverage, 0.98) << slope_coverage;
}

INSTANTIATE_TEST_SUITE_P(Intervals, Coverage, ::testing::Values(Baseline::Local, Baseline::Pooled),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(Intervals, PooledBaselineIsTighterThanTheLinesOwn) {
  ProfileBuilder b;
  for (int line = 0; line < 10; ++line) {
    std::string name = "l" + std::to_string(line) + ".c:1";
    b.experiment(name, 0.0, 100 * ms).visits("p", 100 + line);
    b.experiment(name, 0.0, 100 * ms).visits("p", 104 - line);
    b.experiment(name, 0.5, 100 * ms).visits("p", 120);
  }
  AnalysisOptions own;
  own.baseline = Baseline::Line;
  double pooled = find(analyze(b.get()), "l3.c:1")->impact_se;
  double line = find(analyze(b.get(), own), "l3.c:1")->impact_se;
  EXPECT_LT(pooled, line);
}

// --- the local baseline (docs/analysis.md section 4) ---

// A program whose rate doubles halfway: 10 visits per 100 ms, then 20. Every
// stretch has 0% runs; exact visits, so the local comparison is exact too.
ProfileBuilder two_regimes() {
  ProfileBuilder b;
  for (int half = 0; half < 2; ++half) {
    const uint64_t rate = half == 0 ? 10 : 20;  // visits per 100 ms at 0%
    for (int i = 0; i < 40; ++i) {
      if (i % 2 == 0) {
        b.experiment("base.c:1", 0.0, 100 * ms).visits("p", rate);
      } else if (half == 0) {  // the no-effect line runs only in the slow half
        b.experiment("idle.c:5", 0.5, 100 * ms).visits("p", rate);
      } else {  // the hot line only in the fast half: 50% of it is +25% visits, a 20% shorter period
        b.experiment("hot.c:10", 0.5, 100 * ms).visits("p", rate * 5 / 4);
      }
    }
  }
  return b;
}

TEST(LocalBaseline, ComparesEachExperimentWithTheZeroPercentRunsNearIt) {
  Analysis local = analyze(two_regimes().get());
  const LineEffect* idle = find(local, "idle.c:5");
  const LineEffect* hot = find(local, "hot.c:10");
  ASSERT_NE(idle, nullptr);
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(idle->baseline, BaselineSource::Local);
  EXPECT_DOUBLE_EQ(idle->baseline_ns, 100.0 * ms / 15) << "the pool, as measured: 600 visits in 40 runs of 100 ms";
  // 16 of each line's 20 experiments have all their neighbours in their own
  // regime; the 4 next to the switch see both, and are off.
  EXPECT_NEAR(at(*idle, 0.5)->program_speedup, 0.0, 0.07);
  EXPECT_NEAR(at(*hot, 0.5)->program_speedup, 0.2, 0.04);

  // The pool mixes the regimes: R_0 = 6.67 ms against 10 ms and 5 ms.
  Analysis pooled = analyze_pooled(two_regimes().get());
  EXPECT_NEAR(at(*find(pooled, "idle.c:5"), 0.5)->program_speedup, -0.5, 1e-12);
  EXPECT_NEAR(at(*find(pooled, "hot.c:10"), 0.5)->program_speedup, 0.4, 1e-12);
}

TEST(LocalBaseline, NeighboursAreTheEightNearestInProfileOrder) {
  // Experiments far from the switch: their 8 neighbours are all in their own
  // regime, so their adjusted period is exactly the pool's.
  ProfileBuilder b = two_regimes();
  b.experiment("late.c:3", 0.5, 100 * ms).visits("p", 20);  // position 80, neighbours 64..78, all fast
  Analysis a = analyze(b.get());
  const SpeedupEstimate* late = at(*find(a, "late.c:3"), 0.5);
  EXPECT_NEAR(late->program_speedup, 0.0, 1e-12);
  EXPECT_NEAR(late->value_ns, a.points.at(0).baseline_ns, 1e-6);
  EXPECT_EQ(late->duration_ns, 100 * ms) << "durations stay as measured";
}

TEST(LocalBaseline, WithFewZeroPercentRunsTheVarianceIsThePools) {
  // At most 8 other 0% runs: every measured experiment's neighbours are the
  // whole pool, so G = 1/X_0 and the interval has the pooled form (with the
  // local phi, which differs: the 0% runs are adjusted by each other).
  ProfileBuilder b = two_by_two();
  b.experiment("b.c:2", 0.0, 100 * ms).visits("p", 11);
  b.experiment("b.c:2", 1.0, 100 * ms).visits("p", 15);
  b.experiment("b.c:2", 1.0, 100 * ms).visits("p", 16);
  Analysis a = analyze(b.get());
  const double phi = a.points.at(0).dispersion;
  ASSERT_TRUE(std::isfinite(phi));
  const double x0 = 33.0;
  for (const LineEffect& e : a.effects) {
    ASSERT_EQ(e.baseline, BaselineSource::Local);
    const SpeedupEstimate& p = e.curve.back();
    const double r = 1 - p.program_speedup;
    EXPECT_NEAR(p.se, r * std::sqrt(phi * (1.0 / static_cast<double>(p.visits) + 1.0 / x0)), 1e-12) << e.line;
    EXPECT_NEAR(e.impact_se, p.se / 2, 1e-12) << e.line << ": one measured point, a = 1/2";
  }
}

TEST(LocalBaseline, NeighboursWithoutVisitsFallBackToThePool) {
  // The 0% runs next to c.c:3 never reached the point: its neighbourhood has
  // X = 0, so it is compared with the whole pool, unadjusted.
  ProfileBuilder b;
  for (int i = 0; i < 10; ++i) b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  for (int i = 0; i < 9; ++i) b.experiment("z.c:9", 0.0, 100 * ms).visits("p", 0);
  b.experiment("c.c:3", 0.5, 100 * ms).visits("p", 12);
  for (int i = 0; i < 9; ++i) b.experiment("z.c:9", 0.0, 100 * ms).visits("p", 0);
  Analysis a = analyze(b.get());
  const SpeedupEstimate* p = at(*find(a, "c.c:3"), 0.5);
  const double r0 = 2800.0 * ms / 100;  // 28 runs of 100 ms, 100 visits
  EXPECT_DOUBLE_EQ(a.points.at(0).baseline_ns, r0);
  EXPECT_NEAR(p->value_ns, 100.0 * ms / 12, 1e-6);
  EXPECT_NEAR(p->program_speedup, 1 - (100.0 * ms / 12) / r0, 1e-12);
}

TEST(LocalBaseline, IntervalsCoverTheTruthAcrossARegimeSwitch) {
  // Poisson visits, the rate doubles halfway; lines without effect whose
  // experiments lean to one half. Against the pool they read as slowdowns.
  std::mt19937_64 rng(7);
  int covered[2] = {0, 0}, lines = 0;
  double lean_local = 0, lean_pooled = 0;
  for (int rep = 0; rep < 40; ++rep) {
    ProfileBuilder b;
    for (int i = 0; i < 200; ++i) {
      const bool fast = i >= 100;
      const double period = (fast ? 0.5 : 1.0) * ms;
      std::string line = i % 3 == 0 && !fast ? "lean.c:1" : "other.c:2";
      double s = i % 4 == 0 ? 0.0 : 0.05 * static_cast<double>(1 + i % 20);
      std::poisson_distribution<uint64_t> visits(50.0 * ms / period);
      b.experiment(line, s, 50 * ms).visits("p", visits(rng));
    }
    Analysis local = analyze(b.get());
    Analysis pooled = analyze_pooled(b.get());
    for (const char* line : {"lean.c:1", "other.c:2"}) {
      ++lines;
      const LineEffect* l = find(local, line);
      const LineEffect* p = find(pooled, line);
      covered[0] += l->impact_low <= 0 && 0 <= l->impact_high;
      covered[1] += p->impact_low <= 0 && 0 <= p->impact_high;
      if (std::string(line) == "lean.c:1") {
        lean_local += l->impact / 40;
        lean_pooled += p->impact / 40;
      }
    }
  }
  EXPECT_GE(covered[0], lines * 85 / 100) << covered[0] << " of " << lines;
  // Against the pool the leaning line reads as a slowdown. (Its intervals
  // now widen with its own spread, docs/analysis.md section 3, and hold 0
  // anyway: before that, fewer than half of the pooled ones did.)
  std::cerr << "lean.c: mean impact " << lean_local << " local, " << lean_pooled << " pooled; pooled intervals hold 0 in "
            << covered[1] << " of " << lines << "\n";
  EXPECT_LT(std::abs(lean_local), 0.05);
  EXPECT_LT(lean_pooled, -0.15);
}

// --- the conventional profile ---

TEST(Conventional, LinesFunctionsStacksBlocked) {
  Profile p;
  p.samples = {{"a.c:1", {30, "f"}}, {"a.c:2", {10, "f"}}, {"b.c:1", {40, "g"}}, {"c.c:1", {20, ""}}};
  p.stacks = {{"m.c:1;a.c:1", 3}, {"m.c:1;b.c:1", 5}, {"m.c:1", 3}};
  p.blocked[{"a.c:1", "mutex"}] = {100, 2};
  p.blocked[{"b.c:1", "cond"}] = {300, 1};
  ConventionalProfile c = conventional_profile(p);
  ASSERT_EQ(c.lines.size(), 4u);
  EXPECT_EQ(c.lines[0].location, "b.c:1");
  EXPECT_EQ(c.lines[0].function, "g");
  EXPECT_DOUBLE_EQ(c.lines[0].share, 0.4);
  EXPECT_EQ(c.lines[3].location, "a.c:2");
  ASSERT_EQ(c.functions.size(), 2u) << "c.c:1 has no function";
  EXPECT_EQ(c.functions[0].function, "f");
  EXPECT_EQ(c.functions[0].samples, 40u);
  EXPECT_EQ(c.functions[0].lines, 2u);
  EXPECT_EQ(c.functions[1].function, "g");
  ASSERT_EQ(c.stacks.size(), 3u);
  EXPECT_EQ(c.stacks[0].frames, "m.c:1;b.c:1");
  EXPECT_EQ(c.stacks[1].frames, "m.c:1") << "ties by frames ascending";
  EXPECT_NEAR(c.stacks[0].share, 5.0 / 11, 1e-12);
  ASSERT_EQ(c.blocked.size(), 2u);
  EXPECT_EQ(c.blocked[0].site, "b.c:1");
  EXPECT_EQ(c.blocked[1].time_ns, 100u);
}

TEST(Conventional, EffectsCarryTheirFunction) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  Profile p = b.get();
  p.samples["a.c:1"].function = "work()";
  EXPECT_EQ(analyze(p).effects.at(0).function, "work()");
}

TEST(Callee, FrameKinds) {
  auto kind = [](std::string_view f) { return parse_stack_frame(f).kind; };
  using K = StackFrame::Kind;
  EXPECT_EQ(kind("/src/a.c:42"), K::InScope);
  EXPECT_EQ(kind("/usr/lib/libfoo.so:bar"), K::InScope) << "function-level in-scope frame";
  EXPECT_EQ(kind("/usr/lib/libfoo.so:operator[]"), K::InScope) << "no ' [': not a callee";
  EXPECT_EQ(kind("memcpy[libc.so.6]"), K::InScope);
  EXPECT_EQ(kind("memcpy [libc.so.6"), K::InScope) << "no closing bracket";
  EXPECT_EQ(kind(""), K::Skipped);
  EXPECT_EQ(kind(" [libc.so.6]"), K::Skipped) << "empty function";
  EXPECT_EQ(kind("memcpy []"), K::Skipped) << "empty library";
  // Under coz run --system, in-scope frames name their program.
  EXPECT_EQ(kind("/src/a.c:42 [server]"), K::InScope);
  EXPECT_EQ(kind("a.c:42 [server]"), K::InScope) << "a relative FILE:LINE";
  EXPECT_EQ(kind("/usr/lib/libfoo.so:ns::bar [server]"), K::InScope);
  EXPECT_EQ(kind("ns::bar:: [server]"), K::Callee) << "a function name is no location";

  StackFrame f = parse_stack_frame("__memmove_avx_unaligned_erms [libc.so.6]");
  EXPECT_EQ(f.kind, K::Callee);
  EXPECT_EQ(f.function, "__memmove_avx_unaligned_erms");
  EXPECT_EQ(f.library, "libc.so.6");
  f = parse_stack_frame("std::vector<int>::operator[](unsigned long) [libstdc++.so.6]");
  EXPECT_EQ(f.function, "std::vector<int>::operator[](unsigned long)");
  EXPECT_EQ(f.library, "libstdc++.so.6");
  f = parse_stack_frame("handler [x] [libweird.so]");
  EXPECT_EQ(f.function, "handler [x]") << "the library is after the LAST ' ['";
  EXPECT_EQ(f.library, "libweird.so");
  f = parse_stack_frame("0x1f40 [libfoo.so]");
  EXPECT_EQ(f.function, "0x1f40");
}

TEST(Callee, TopCalleeOfTheInnermostInScopeFrame) {
  Profile p;
  p.samples = {{"a.c:1", {10, ""}}, {"cmp.c:3", {6, ""}}, {"m.c:1", {1, ""}}, {"sort.c:2", {4, ""}}};
  p.stacks = {{"m.c:1;a.c:1;memcpy [libc.so.6]", 6},
              {"m.c:1;a.c:1;memmove [libc.so.6]", 2},
              {"m.c:1;a.c:1", 2},
              {"m.c:1;sort.c:2;qsort [libc.so.6]", 4},
              {"m.c:1;sort.c:2;qsort [libc.so.6];cmp.c:3", 3},  // the comparator's own sample
              {"m.c:1;sort.c:2;qsort [libc.so.6];cmp.c:3;strcmp [libc.so.6]", 3},
              {"strlen [libc.so.6]", 9}};  // no in-scope frame: charged to no line
  ConventionalProfile c = conventional_profile(p);
  ASSERT_EQ(c.callees.size(), 3u);
  const Callee& a = c.callees.at("a.c:1");
  EXPECT_EQ(a.function, "memcpy");
  EXPECT_EQ(a.library, "libc.so.6");
  EXPECT_EQ(a.samples, 6u);
  EXPECT_EQ(a.stack_samples, 10u) << "the denominator is the line's stack samples";
  EXPECT_DOUBLE_EQ(a.share, 0.6);
  EXPECT_EQ(c.callees.at("sort.c:2").function, "qsort");
  EXPECT_DOUBLE_EQ(c.callees.at("sort.c:2").share, 1.0) << "the comparator's samples are not sort.c:2's";
  EXPECT_EQ(c.callees.at("cmp.c:3").function, "strcmp");
  EXPECT_DOUBLE_EQ(c.callees.at("cmp.c:3").share, 0.5);
  EXPECT_EQ(c.callees.count("m.c:1"), 0u);
  auto line = std::find_if(c.lines.begin(), c.lines.end(), [](const LineSamples& l) { return l.location == "a.c:1"; });
  ASSERT_NE(line->callee, nullptr);
  EXPECT_EQ(line->callee->function, "memcpy");
  EXPECT_EQ(c.lines.back().callee, nullptr) << c.lines.back().location;
}

TEST(Callee, TiesGoToTheSmallestNameInByteOrder) {
  Profile p;
  p.stacks = {{"a.c:1;malloc [libc.so.6]", 4}, {"a.c:1;compress2 [libz.so.1]", 4}, {"a.c:1;Zlib [libz.so.1]", 3}};
  EXPECT_EQ(conventional_profile(p).callees.at("a.c:1").function, "compress2");
  p.stacks = {{"a.c:1;b [l]", 2}, {"a.c:1;a [m]", 2}};
  EXPECT_EQ(conventional_profile(p).callees.at("a.c:1").function, "a");
}

TEST(Callee, OnlyTheFrameRightAfterTheLineCounts) {
  Profile p;
  // Two callees in a row (the runtime writes one): the outer one is what the line called.
  p.stacks = {{"a.c:1;memset [libc.so.6];free [libc.so.6]", 2}, {"a.c:1;;memset [libc.so.6];", 1}};
  const ConventionalProfile conventional = conventional_profile(p);
  const Callee& c = conventional.callees.at("a.c:1");
  EXPECT_EQ(c.function, "memset");
  EXPECT_EQ(c.samples, 3u) << "empty frames are skipped";
}

TEST(Callee, EffectsCarryTheirCallee) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("b.c:1", 0.0, 100 * ms).visits("p", 10);
  Profile p = b.get();
  p.stacks = {{"a.c:1;memcpy [libc.so.6]", 3}, {"b.c:1", 3}};
  Analysis a = analyze(p);
  ASSERT_TRUE(find(a, "a.c:1")->callee.has_value());
  EXPECT_EQ(find(a, "a.c:1")->callee->library, "libc.so.6");
  EXPECT_FALSE(find(a, "b.c:1")->callee.has_value());
  std::string json = to_json(a);
  EXPECT_NE(json.find("\"callee\": {\"function\": \"memcpy\", \"library\": \"libc.so.6\", \"samples\": 3, "
                      "\"stack_samples\": 3, \"share\": 1}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"callee\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"sampling\": null"), std::string::npos) << json;
}

// --- compare ---

TEST(Compare, ProgramAndLineChangesWithIntervals) {
  ProfileBuilder before = two_by_two();
  before.experiment("gone.c:1", 0.5, 100 * ms).visits("p", 11);
  ProfileBuilder after;
  after.experiment("a.c:1", 0.0, 100 * ms).visits("p", 20);
  after.experiment("a.c:1", 0.0, 100 * ms).visits("p", 24);
  after.experiment("a.c:1", 0.5, 100 * ms).visits("p", 22);
  after.experiment("a.c:1", 0.5, 100 * ms).visits("p", 24);
  Analysis a = analyze(before.get());
  Analysis b = analyze(after.get());
  Comparison c = compare(a, b);
  ASSERT_EQ(c.points.size(), 1u);
  const ComparedPoint& p = c.points[0];
  const double r = (200.0 / 44) / (200.0 / 22);  // periods after/before
  EXPECT_NEAR(p.speedup, 1 - r, 1e-12) << "twice the rate: 50% faster";
  EXPECT_NEAR(p.se, r * std::sqrt(a.points[0].dispersion / 22 + b.points[0].dispersion / 44), 1e-12);
  ASSERT_EQ(c.lines.size(), 2u);
  const ComparedLine& line = c.lines[0];
  EXPECT_EQ(line.line, "a.c:1") << "comparable lines first";
  const LineEffect& ea = a.effects.at(0);
  const LineEffect* eb = &b.effects.at(0);
  EXPECT_NEAR(line.change, eb->impact - ea.impact, 1e-12);
  EXPECT_NEAR(line.change_se, std::hypot(ea.impact_se, eb->impact_se), 1e-12);
  EXPECT_EQ(c.lines[1].line, "gone.c:1");
  EXPECT_EQ(c.lines[1].verdict, Verdict::OnlyBefore);
  EXPECT_TRUE(std::isnan(c.lines[1].change));
}

// --- golden vectors (shared with the viewer's tests) ---

// Just enough JSON to read expected.json: a small recursive DOM.
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>, std::map<std::string, Json>> v;
};

class JsonParser {
 public:
  explicit JsonParser(std::string s) : s_(std::move(s)) {}
  Json parse() {
    Json j = value();
    ws();
    if (i_ != s_.size()) throw std::runtime_error("trailing text at " + std::to_string(i_));
    return j;
  }

 private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    ws();
    if (i_ >= s_.size() || s_[i_] != c) throw std::runtime_error(std::string("expected ") + c + " at " + std::to_string(i_));
    ++i_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (s_.at(i_) != '"') {
      if (s_[i_] == '\\') {
        ++i_;
        char e = s_.at(i_);
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;  // \uXXXX is not used in the vectors
      } else {
        out += s_[i_];
      }
      ++i_;
    }
    ++i_;
    return out;
  }
  Json value() {
    ws();
    char c = s_.at(i_);
    if (c == '"') return {string()};
    if (c == '{') {
      std::map<std::string, Json> m;
      ++i_;
      ws();
      if (s_.at(i_) == '}') return ++i_, Json{m};
      for (;;) {
        std::string k = string();
        expect(':');
        m[k] = value();
        ws();
        if (s_.at(i_++) == '}') return {m};
      }
    }
    if (c == '[') {
      std::vector<Json> a;
      ++i_;
      ws();
      if (s_.at(i_) == ']') return ++i_, Json{a};
      for (;;) {
        a.push_back(value());
        ws();
        if (s_.at(i_++) == ']') return {a};
      }
    }
    if (s_.compare(i_, 4, "true") == 0) return i_ += 4, Json{true};
    if (s_.compare(i_, 5, "false") == 0) return i_ += 5, Json{false};
    if (s_.compare(i_, 4, "null") == 0) return i_ += 4, Json{nullptr};
    size_t used = 0;
    double d = std::stod(s_.substr(i_, 40), &used);
    i_ += used;
    return {d};
  }
  std::string s_;
  size_t i_ = 0;
};

// Every key in `expected` must be in `actual` with an equal value; arrays must
// match element by element and in length.
void expect_subset(const Json& expected, const Json& actual, const std::string& path, double tolerance) {
  if (auto* m = std::get_if<std::map<std::string, Json>>(&expected.v)) {
    auto* am = std::get_if<std::map<std::string, Json>>(&actual.v);
    ASSERT_NE(am, nullptr) << path << ": not an object";
    for (const auto& [k, v] : *m) {
      auto it = am->find(k);
      ASSERT_NE(it, am->end()) << path << "." << k << ": missing";
      expect_subset(v, it->second, path + "." + k, tolerance);
    }
  } else if (auto* a = std::get_if<std::vector<Json>>(&expected.v)) {
    auto* aa = std::get_if<std::vector<Json>>(&actual.v);
    ASSERT_NE(aa, nullptr) << path << ": not an array";
    ASSERT_EQ(a->size(), aa->size()) << path << ": length";
    for (size_t i = 0; i < a->size(); ++i) {
      expect_subset((*a)[i], (*aa)[i], path + "[" + std::to_string(i) + "]", tolerance);
    }
  } else if (auto* d = std::get_if<double>(&expected.v)) {
    auto* ad = std::get_if<double>(&actual.v);
    ASSERT_NE(ad, nullptr) << path << ": not a number";
    EXPECT_NEAR(*ad, *d, tolerance * std::max(1.0, std::abs(*d))) << path;
  } else if (auto* s = std::get_if<std::string>(&expected.v)) {
    auto* as = std::get_if<std::string>(&actual.v);
    ASSERT_NE(as, nullptr) << path << ": not a string";
    EXPECT_EQ(*as, *s) << path;
  } else if (std::holds_alternative<std::nullptr_t>(expected.v)) {
    EXPECT_TRUE(std::holds_alternative<std::nullptr_t>(actual.v)) << path << ": expected null";
  } else if (auto* b = std::get_if<bool>(&expected.v)) {
    auto* ab = std::get_if<bool>(&actual.v);
    ASSERT_NE(ab, nullptr) << path << ": not a bool";
    EXPECT_EQ(*ab, *b) << path;
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs one vector: reads expected.json's "inputs" (in order, named as listed,
// so warnings say "profile.coz:12") and compares by test/vectors/README.md.
void check_vector(const std::string& name) {
  const std::string dir = std::string(COZ_VECTORS_DIR) + "/" + name;
  Json expected = JsonParser(slurp(dir + "/expected.json")).parse();
  auto& m = std::get<std::map<std::string, Json>>(expected.v);
  Profile profile;
  for (const Json& input : std::get<std::vector<Json>>(m.at("inputs").v)) {
    const std::string& file = std::get<std::string>(input.v);
    std::ifstream in(dir + "/" + file, std::ios::binary);
    ASSERT_TRUE(in) << dir << "/" << file;
    Profile one;
    read_profile(in, file, one);
    merge_profile(profile, std::move(one));
  }
  AnalysisOptions options;  // the defaults, or the vector's "options" (its options.txt)
  if (auto found = m.find("options"); found != m.end()) {
    const auto& given = std::get<std::map<std::string, Json>>(found->second.v);
    auto baseline = baseline_named(std::get<std::string>(given.at("baseline").v));
    ASSERT_TRUE(baseline) << name << ": options.baseline";
    options.baseline = *baseline;
  }
  Json actual = JsonParser(to_json(analyze(profile, options))).parse();
  double tolerance = std::get<double>(m.at("tolerance").v);
  m.erase("tolerance");
  m.erase("comment");
  m.erase("inputs");
  m.erase("options");
  expect_subset(expected, actual, name, tolerance);
}

class Vector : public ::testing::TestWithParam<std::string> {};

TEST_P(Vector, MatchesExpectedAnalysis) { check_vector(GetParam()); }

INSTANTIATE_TEST_SUITE_P(TestVectors, Vector,
                         ::testing::Values("basic", "latency", "coz-tab", "coz-json", "merged", "undecided", "fdr",
                                           "corrupt", "conventional", "callee", "untreated", "band", "cores", "local-edges", "regime", "hand-offs",
                                           "percentiles"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(Vector, BasicWarnsAboutTheSkippedExperimentOnly) {
  Profile profile;
  ASSERT_TRUE(read_profile_file(std::string(COZ_VECTORS_DIR) + "/basic/profile.coz", profile));
  ASSERT_EQ(profile.warnings.size(), 2u);
  EXPECT_NE(profile.warnings[0].find("basic/profile.coz:32: "), std::string::npos) << profile.warnings[0];
  EXPECT_NE(profile.warnings[1].find("basic/profile.coz:33: "), std::string::npos) << profile.warnings[1];
  EXPECT_EQ(profile.warning_places[1].line, 33u);
  EXPECT_EQ(profile.warning_places[1].message, "point record after a skipped experiment, skipped");
}

TEST(AnalysisJson, WritesNullForNonFiniteAndEscapesNames) {
  Analysis a;
  LineEffect e;
  e.line = "we\"ird\\name\t:1";
  e.point = "p";
  e.impact = std::nan("");
  a.effects.push_back(e);
  std::string json = to_json(a);
  EXPECT_NE(json.find("\"we\\\"ird\\\\name\\t:1\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"impact\": null"), std::string::npos) << json;
}

}  // namespace
}  // namespace coz::analysis
