// Tests of the verdicts (docs/analysis.md sections 7-8): the confidence
// sequences and e-values, e-BH over a point's
// lines, the thin-line rule, and the ranking by conservative bounds. analysis_test and the shared
// vectors cover the same code through analyze().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "analysis.h"
#include "verdicts.h"

namespace coz::analysis {
namespace {

LineEffect tested_effect(const std::string& line, double impact, double se, uint64_t measured_experiments = 20) {
  LineEffect e;
  e.line = line;
  e.point = "p";
  e.measured = true;
  e.impact = impact;
  e.impact_se = se;
  e.impact_low = impact - anytime_half_width(se, false_discovery_rate);
  e.impact_high = impact + anytime_half_width(se, false_discovery_rate);
  e.slope = 2 * impact;  // a straight curve over 0..100%: its effect at 50% is its impact
  e.max_effect = impact;
  e.measured_experiments = measured_experiments;
  e.experiments = measured_experiments + 4;
  return e;
}

PointSummary decide_all(std::vector<LineEffect>& effects) {
  PointSummary point;
  decide(effects, point);
  return point;
}

TEST(Verdicts, TheConfidenceSequenceIsTheNormalMixtureBoundary) {
  // se 0.04: u = (0.05 / 0.04)^2 = 1.5625, sqrt(1.64 * log(2.5625 / 0.0025)) = 3.3718.
  EXPECT_NEAR(anytime_half_width(0.04, 0.05), 0.13487306353563067, 1e-12);
  EXPECT_EQ(anytime_half_width(0.0, 0.05), 0.0);
  EXPECT_TRUE(std::isnan(anytime_half_width(std::nan(""), 0.05)));
  // The e-value reaches 1/alpha exactly where the sequence at alpha reaches 0.
  for (double se : {0.001, 0.01, 0.04, 0.2}) {
    for (double alpha : {0.0005, 0.05, 0.1}) {
      EXPECT_NEAR(log_e_value(anytime_half_width(se, alpha), se), std::log(1.0 / alpha), 1e-9) << se << " " << alpha;
    }
  }
  EXPECT_GT(anytime_half_width(0.01, 0.05), z95 * 0.01) << "wider than a single look's interval";
}

// Why: a user (or --until-settled) looks at the estimate again and again.
// A null effect estimated from a growing sample, looked at after every
// observation up to 1,000: the single-look 95% interval leaves 0 at some
// look in a third or more of the paths; the confidence sequence in at most
// its 5%.
TEST(Verdicts, TheSequenceHoldsHoweverOftenOneLooks) {
  std::mt19937_64 rng(49);
  std::normal_distribution<double> noise(0.0, 0.3);
  const int paths = 2000, looks = 1000;
  int crossed_fixed = 0, crossed_sequence = 0;
  for (int path = 0; path < paths; ++path) {
    double sum = 0.0;
    bool fixed = false, sequence = false;
    for (int n = 1; n <= looks; ++n) {
      sum += noise(rng);
      const double mean = sum / n, se = 0.3 / std::sqrt(static_cast<double>(n));
      fixed = fixed || std::abs(mean) > z95 * se;
      sequence = sequence || std::abs(mean) > anytime_half_width(se, false_discovery_rate);
    }
    crossed_fixed += fixed;
    crossed_sequence += sequence;
  }
  EXPECT_GT(crossed_fixed, paths / 4) << "optional stopping with a fixed interval";
  EXPECT_LE(crossed_sequence, paths * 5 / 100);
}

TEST(Verdicts, OneClearLineAloneIsADiscovery) {
  std::vector<LineEffect> effects{tested_effect("a.c:1", 0.20, 0.04)};  // z = 5
  PointSummary point = decide_all(effects);
  EXPECT_EQ(point.tested, 1u);
  EXPECT_EQ(point.discoveries, 1u);
  EXPECT_EQ(effects[0].label, Label::Positive);
  EXPECT_NEAR(point.adjusted_level, 0.05, 1e-12);  // R = m: the adjusted interval is the 95% sequence
  EXPECT_NEAR(effects[0].adjusted_low, 0.20 - 0.13487306353563067, 1e-9);
  EXPECT_NEAR(effects[0].p_value, std::exp(-log_e_value(0.20, 0.04)), 1e-15);
}

TEST(Verdicts, AOnceSignificantLineIsNotADiscoveryAtAFixedLooksLevel) {
  // z = 2.5: a single look's 95% interval excludes 0; the sequence does not.
  std::vector<LineEffect> effects{tested_effect("a.c:1", 0.10, 0.04)};
  PointSummary point = decide_all(effects);
  EXPECT_EQ(point.discoveries, 0u);
  EXPECT_EQ(effects[0].label, Label::Undecided);
}

TEST(Verdicts, TheSameLineAmongAHundredNullLinesIsUndecided) {
  std::vector<LineEffect> effects{tested_effect("a.c:1", 0.20, 0.04)};
  for (int i = 0; i < 99; ++i) effects.push_back(tested_effect("null.c:" + std::to_string(i), 0.0, 0.04));
  PointSummary point = decide_all(effects);
  EXPECT_EQ(point.tested, 100u);
  EXPECT_EQ(point.discoveries, 0u);  // log e = 7.15 < log(100 / 0.05) = 7.60
  EXPECT_TRUE(std::isnan(point.adjusted_level));
  EXPECT_GT(effects[0].impact_low, 0.0) << "its own 95% sequence excludes 0";
  EXPECT_EQ(effects[0].label, Label::Undecided);
  EXPECT_TRUE(std::isnan(effects[0].adjusted_low));
  // It needs its sequence at 0.05 / 100 to exclude 0: half-width 0.2058 for
  // 0.20, f = 1.029^2 = 1.059, 24 * 0.059 -> 2.
  EXPECT_EQ(effects[0].experiments_needed.value_or(0), 2u);
}

TEST(Verdicts, ThinLinesGetNoVerdictHoweverStrong) {
  std::vector<LineEffect> effects{tested_effect("thin.c:1", 0.40, 0.01, 4), tested_effect("thin.c:2", 0.0, 0.001, 3)};
  PointSummary point = decide_all(effects);
  EXPECT_EQ(point.tested, 2u) << "thin lines count in the family";
  EXPECT_EQ(point.discoveries, 0u);
  EXPECT_EQ(effects[0].label, Label::Undecided);
  EXPECT_EQ(effects[1].label, Label::Undecided) << "not even no-effect";
  EXPECT_GE(effects[0].experiments_needed.value_or(0), 6u) << "at least the missing measured experiments";
  EXPECT_GE(effects[1].experiments_needed.value_or(0), 7u);
  EXPECT_LT(effects[0].p_value, 1e-6) << "the p-value is still reported";
}

TEST(Verdicts, EBhStepsUp) {
  // m = 10, se 0.05 (u = 1): the k-th largest e-value must reach 10 / (0.05 k).
  // z = 5.0, 4.5, 4.2, 4.15 give log e = 5.90, 4.72, 4.06, 3.96 against
  // 5.30, 4.61, 4.20, 3.91: the third alone fails, the fourth takes it in.
  auto run = [](double fourth) {
    std::vector<LineEffect> effects{tested_effect("a.c:1", 5.0 * 0.05, 0.05), tested_effect("a.c:2", 4.5 * 0.05, 0.05),
                                    tested_effect("a.c:3", 4.2 * 0.05, 0.05),
                                    tested_effect("a.c:4", -fourth * 0.05, 0.05)};
    for (int i = 0; i < 6; ++i) effects.push_back(tested_effect("null.c:" + std::to_string(i), 0.5 * 0.05, 0.05));
    PointSummary point = decide_all(effects);
    return std::make_pair(point, effects);
  };
  auto [point, effects] = run(4.15);
  EXPECT_EQ(point.discoveries, 4u);
  EXPECT_NEAR(point.adjusted_level, 0.02, 1e-12);
  EXPECT_EQ(effects[2].label, Label::Positive);
  EXPECT_EQ(effects[3].label, Label::Negative);
  EXPECT_NEAR(effects[1].adjusted_low, 0.018636325975037005, 1e-9);
  EXPECT_EQ(effects[4].label, Label::Undecided);
  auto [fewer, effects2] = run(4.10);  // 3.86 < 3.91: back to the two that pass alone
  EXPECT_EQ(fewer.discoveries, 2u);
  EXPECT_EQ(effects2[2].label, Label::Undecided);
}

TEST(Verdicts, ADiscoveryOfExactlyZeroIsNeitherFasterNorSlower) {
  std::vector<LineEffect> effects{tested_effect("a.c:1", 0.0, 0.0)};  // se 0, impact 0: p = 1
  decide_all(effects);
  EXPECT_NE(effects[0].label, Label::Positive);
  EXPECT_NE(effects[0].label, Label::Negative);
}

TEST(Verdicts, NegativeDiscoveriesSlowTheProgram) {
  std::vector<LineEffect> effects{tested_effect("a.c:1", -0.2, 0.02)};
  decide_all(effects);
  EXPECT_EQ(effects[0].label, Label::Negative);
  EXPECT_EQ(effects[0].experiments_needed, 0u);
}

TEST(Verdicts, ADiscoveryInsideTheNoEffectBandIsNoEffect) {
  // -1.3% +-0.4%: surely below 0, and too small to be worth a change.
  std::vector<LineEffect> effects{tested_effect("small.c:1", -0.013, 0.002), tested_effect("big.c:1", -0.2, 0.02)};
  PointSummary point = decide_all(effects);
  EXPECT_EQ(point.discoveries, 2u);
  EXPECT_EQ(effects[0].label, Label::NoEffect);
  EXPECT_LT(effects[0].adjusted_high, 0.0);  // still a discovery: its adjusted interval is kept
  EXPECT_EQ(effects[0].experiments_needed, 0u);
  EXPECT_EQ(effects[1].label, Label::Negative);
}

TEST(Verdicts, TheBandIsReadAtAFiftyPercentSpeedupWhateverWasMeasured) {
  // A line tested only at 0% and 50% (--fixed-speedup 50): +4.9% at 50%, so its
  // impact (the mean over 0..50%) is +2.45%, inside the band; its slope is 0.098.
  std::vector<LineEffect> effects{tested_effect("transmit.c:1", 0.0245, 0.004)};
  effects[0].slope = 0.098;
  decide_all(effects);
  EXPECT_EQ(effects[0].label, Label::Positive);
  effects[0].slope = 0.04;  // +2% at 50%: inside
  decide_all(effects);
  EXPECT_EQ(effects[0].label, Label::NoEffect);
}

TEST(Verdicts, ANarrowEstimateOutsideTheBandThatIsNoDiscoveryIsUndecided) {
  // +3% +-2.4% (z 2.5) among many null lines: no discovery, and not small
  // enough to be none. The null lines' sequences at 10% (two one-sided tests
  // at 5%) are +-2.3%, within the band.
  std::vector<LineEffect> effects{tested_effect("a.c:1", 0.03, 0.012)};
  for (int i = 0; i < 60; ++i) effects.push_back(tested_effect("null.c:" + std::to_string(i), 0.001, 0.008));
  PointSummary point = decide_all(effects);
  EXPECT_EQ(point.discoveries, 0u);
  EXPECT_EQ(effects[0].label, Label::Undecided);
  EXPECT_GE(effects[0].experiments_needed, 1u);
  EXPECT_EQ(effects[1].label, Label::NoEffect);
}

TEST(Verdicts, RankingIsByGroupThenConservativeBound) {
  std::vector<LineEffect> effects{
      tested_effect("wide.c:1", 0.50, 0.08),       // larger estimate, wide: adjusted low ~0.08
      tested_effect("tight.c:1", 0.30, 0.01),      // smaller, tight: adjusted low ~0.27
      tested_effect("none.c:1", 0.001, 0.005),     // no effect
      tested_effect("maybe.c:1", 0.20, 0.15),      // undecided, low ~ -0.09
      tested_effect("thin.c:1", 0.90, 0.01, 2),    // undecided (thin), low ~0.88: still after maybe.c
      tested_effect("slow.c:1", -0.30, 0.02),      // negative
  };
  LineEffect unmeasured;
  unmeasured.line = "cold.c:1";
  unmeasured.point = "p";
  effects.push_back(unmeasured);
  decide_all(effects);
  std::sort(effects.begin(), effects.end(), [](const LineEffect& a, const LineEffect& b) { return ranks_before(a, b); });
  std::vector<std::string> order;
  for (const LineEffect& e : effects) order.push_back(e.line);
  EXPECT_EQ(order, (std::vector<std::string>{"tight.c:1", "wide.c:1", "slow.c:1", "none.c:1", "maybe.c:1", "thin.c:1",
                                             "cold.c:1"}));
}

}  // namespace
}  // namespace coz::analysis
