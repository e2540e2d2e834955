// Tests of the verdicts (docs/analysis.md sections 7-8): the two numeric
// approximations, Benjamini-Hochberg over a point's lines, the thin-line
// rule, and the ranking by conservative bounds. analysis_test and the shared
// vectors cover the same code through analyze().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
  e.impact_low = impact - z95 * se;
  e.impact_high = impact + z95 * se;
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

TEST(Verdicts, ErfcApproximationIsWithinItsStatedError) {
  for (double x = 0.0; x <= 6.0; x += 0.01) {
    double exact = std::erfc(x);
    EXPECT_LE(std::abs(erfc_approx(x) - exact) / exact, 1.3e-7) << x;
  }
}

TEST(Verdicts, UpperQuantileInvertsTheNormalTail) {
  for (double q : {1e-12, 1e-9, 1e-6, 1e-4, 1e-3, 0.01, 0.0242, 0.02425, 0.025, 0.1, 0.3, 0.5}) {
    double z = upper_quantile_approx(q);
    double tail = 0.5 * std::erfc(z / std::sqrt(2.0));
    EXPECT_NEAR(tail / q, 1.0, 1e-7) << q;
  }
  EXPECT_NEAR(upper_quantile_approx(0.025), z95, 1e-8);
}

TEST(Verdicts, OneClearLineAloneIsADiscovery) {
  std::vector<LineEffect> effects{tested_effect("a.c:1", 0.10, 0.04)};  // z = 2.5, p = 0.012
  PointSummary point = decide_all(effects);
  EXPECT_EQ(point.tested, 1u);
  EXPECT_EQ(point.discoveries, 1u);
  EXPECT_EQ(effects[0].label, Label::Positive);
  EXPECT_NEAR(point.adjusted_z, z95, 1e-8);  // R = m: the adjusted interval is the 95% one
  EXPECT_NEAR(effects[0].adjusted_low, 0.10 - z95 * 0.04, 1e-9);
}

TEST(Verdicts, TheSameLineAmongAHundredNullLinesIsUndecided) {
  std::vector<LineEffect> effects{tested_effect("a.c:1", 0.10, 0.04)};
  for (int i = 0; i < 99; ++i) effects.push_back(tested_effect("null.c:" + std::to_string(i), 0.0, 0.04));
  PointSummary point = decide_all(effects);
  EXPECT_EQ(point.tested, 100u);
  EXPECT_EQ(point.discoveries, 0u);
  EXPECT_TRUE(std::isnan(point.adjusted_z));
  EXPECT_GT(effects[0].impact_low, 0.0) << "its own 95% interval excludes 0";
  EXPECT_EQ(effects[0].label, Label::Undecided);
  EXPECT_TRUE(std::isnan(effects[0].adjusted_low));
  // Not "+1": it needs |impact| / se >= 3.48 (the first BH threshold of 100,
  // P(Z > z) = 0.05 / 200): f = (3.48 * 0.04 / 0.10)^2 = 1.94, 24 * 0.94 -> 23.
  EXPECT_EQ(effects[0].experiments_needed.value_or(0), 23u);
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

TEST(Verdicts, BenjaminiHochbergStepsUp) {
  // m = 10, alpha k / m = 0.005 k. p-values ~0.001, 0.008 pass (k = 1, 2); ~0.039 and
  // ~0.041 do not (0.015, 0.02); the rest are null.
  std::vector<LineEffect> effects{tested_effect("a.c:1", 3.29, 1.0), tested_effect("a.c:2", 2.65, 1.0),
                                  tested_effect("a.c:3", 2.06, 1.0), tested_effect("a.c:4", -2.04, 1.0)};
  for (int i = 0; i < 6; ++i) effects.push_back(tested_effect("null.c:" + std::to_string(i), 0.5, 1.0));
  PointSummary point = decide_all(effects);
  EXPECT_EQ(point.discoveries, 2u);
  EXPECT_NEAR(point.adjusted_z, 2.5758293035489, 1e-6);  // P(Z > z) = 2 * 0.05 / 20
  EXPECT_EQ(effects[0].label, Label::Positive);
  EXPECT_EQ(effects[1].label, Label::Positive);
  EXPECT_EQ(effects[2].label, Label::Undecided);
  EXPECT_EQ(effects[3].label, Label::Undecided);
  EXPECT_NEAR(effects[1].adjusted_low, 2.65 - 2.5758293035489, 1e-6);
  EXPECT_NEAR(effects[0].p_value, std::erfc(3.29 / std::sqrt(2.0)), 1e-9);
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
  // +3% +-2.4% (z 2.5) among many null lines: no discovery after BH, and not small enough to be none.
  std::vector<LineEffect> effects{tested_effect("a.c:1", 0.03, 0.012)};
  for (int i = 0; i < 60; ++i) effects.push_back(tested_effect("null.c:" + std::to_string(i), 0.001, 0.01));
  PointSummary point = decide_all(effects);
  EXPECT_EQ(point.discoveries, 0u);
  EXPECT_EQ(effects[0].label, Label::Undecided);
  EXPECT_GE(effects[0].experiments_needed, 1u);
  EXPECT_EQ(effects[1].label, Label::NoEffect);
}

TEST(Verdicts, RankingIsByGroupThenConservativeBound) {
  std::vector<LineEffect> effects{
      tested_effect("wide.c:1", 0.50, 0.15),       // larger estimate, wide: adjusted low ~0.21
      tested_effect("tight.c:1", 0.30, 0.01),      // smaller, tight: adjusted low ~0.28
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
