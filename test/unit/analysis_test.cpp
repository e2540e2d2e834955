// Tests of analyze(): hand-computed expectations for each formula documented
// at the top of tools/analysis/analysis.cpp, and the shared golden vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "analysis.h"
#include "analysis_json.h"
#include "profile.h"

namespace coz::analysis {
namespace {

constexpr uint64_t ms = 1'000'000;  // ns

// Builds profiles without going through the text format.
class ProfileBuilder {
 public:
  ProfileBuilder& experiment(const std::string& line, double speedup, uint64_t duration_ns) {
    Experiment e;
    e.selected = line;
    e.speedup = speedup;
    e.duration_ns = duration_ns;
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
    p_.samples[line] += count;
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

TEST(Analysis, ThroughputSpeedupFromPeriods) {
  // Baseline 10 visits in 100 ms (P = 10 ms); at 50%, 12.5 visits per 100 ms
  // (25 in 200 ms, P = 8 ms): the program is (10 - 8) / 10 = 20% faster.
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 12);
  b.experiment("a.c:1", 0.5, 100 * ms).visits("p", 13);
  Analysis a = analyze(b.get());
  ASSERT_EQ(a.effects.size(), 1u);
  const LineEffect& e = a.effects[0];
  EXPECT_EQ(e.kind, PointKind::Throughput);
  EXPECT_FALSE(e.global_baseline);
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
  ASSERT_EQ(at(e, 0.25)->observations.size(), 2u) << "per-experiment values kept for intervals";
  EXPECT_DOUBLE_EQ(at(e, 0.25)->observations[1].in_flight, 1.0);
  EXPECT_EQ(at(e, 0.25)->observations[1].duration_ns, 300 * ms);
}

TEST(Analysis, GlobalBaselineWhenTheLineHasNone) {
  // 0% runs of other lines: 30 visits in 300 ms -> P(0) = 10 ms. b.c at 50%: 8 ms.
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("c.c:3", 0.0, 200 * ms).visits("p", 20);
  b.experiment("b.c:2", 0.5, 200 * ms).visits("p", 25);
  Analysis a = analyze(b.get());
  const LineEffect* e = find(a, "b.c:2");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->global_baseline);
  EXPECT_DOUBLE_EQ(e->baseline_ns, 10.0 * ms);
  ASSERT_EQ(e->curve.size(), 1u) << "the global baseline is not one of this line's points";
  EXPECT_NEAR(e->curve[0].program_speedup, 0.2, 1e-12);
  EXPECT_EQ(e->experiments, 1u);
  EXPECT_FALSE(find(a, "a.c:1")->global_baseline);
}

TEST(Analysis, OwnBaselineWithoutVisitsFallsBackToGlobal) {
  ProfileBuilder b;
  b.experiment("a.c:1", 0.0, 100 * ms).visits("p", 10);
  b.experiment("b.c:2", 0.0, 100 * ms).visits("p", 0);
  b.experiment("b.c:2", 0.5, 100 * ms).visits("p", 20);
  Analysis a = analyze(b.get());
  const LineEffect* e = find(a, "b.c:2");
  EXPECT_TRUE(e->global_baseline);
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
  EXPECT_EQ(a.points, (std::vector<std::string>{"p", "q"})) << "points lists every point seen";

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
  EXPECT_EQ(a.points.size(), 1u);
}

TEST(Analysis, EmptyProfile) {
  Analysis a = analyze(Profile{});
  EXPECT_TRUE(a.effects.empty());
  EXPECT_EQ(a.experiments, 0u);
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

class Vector : public ::testing::TestWithParam<std::string> {};

TEST_P(Vector, MatchesExpectedAnalysis) {
  const std::string dir = std::string(COZ_VECTORS_DIR) + "/" + GetParam();
  Profile profile;
  ASSERT_TRUE(read_profile_file(dir + "/profile.coz", profile));
  Json expected = JsonParser(slurp(dir + "/expected.json")).parse();
  Json actual = JsonParser(to_json(analyze(profile))).parse();
  auto& m = std::get<std::map<std::string, Json>>(expected.v);
  double tolerance = std::get<double>(m.at("tolerance").v);
  m.erase("tolerance");
  m.erase("comment");
  expect_subset(expected, actual, GetParam(), tolerance);
}

INSTANTIATE_TEST_SUITE_P(TestVectors, Vector, ::testing::Values("basic"));

TEST(Vector, BasicWarnsAboutTheSkippedExperimentOnly) {
  Profile profile;
  ASSERT_TRUE(read_profile_file(std::string(COZ_VECTORS_DIR) + "/basic/profile.coz", profile));
  ASSERT_EQ(profile.warnings.size(), 2u);
  EXPECT_NE(profile.warnings[0].find("basic/profile.coz:32: "), std::string::npos) << profile.warnings[0];
  EXPECT_NE(profile.warnings[1].find("basic/profile.coz:33: "), std::string::npos) << profile.warnings[1];
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
