// Tests of settling.h (when an answer is settled, where experiments are
// aimed) and control.h (the file that carries the aim to the runtimes),
// with a simulation of whole runs: known effects, experiments aimed as the
// monitor aims them, estimates checked for bias (docs/settling.md).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "analysis.h"
#include "config.h"
#include "control.h"
#include "experiment.h"
#include "profile.h"
#include "settling.h"

namespace coz::analysis {
namespace {

constexpr uint64_t ms = 1'000'000;  // ns

// --- control file ---

TEST(Control, FormatsAndParsesBack) {
  Control c;
  c.stop = "settled";
  c.aim = {{"/src/a.c:12", 0.8}, {"/src/b.c:main", 0.05}};
  c.ended = true;
  c.baseline_share = 0.41;
  std::optional<Control> back = parse_control(format_control(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, c);
}

TEST(Control, RejectsWhatIsNotAWholeFile) {
  const std::string whole = format_control(Control{"", {{"/src/a.c:12", 0.8}}, false});
  EXPECT_TRUE(parse_control(whole));
  EXPECT_FALSE(parse_control(whole.substr(0, whole.size() - 4)));  // cut before "end"
  EXPECT_FALSE(parse_control(""));
  EXPECT_FALSE(parse_control("coz-control 2\nend\n"));
  EXPECT_FALSE(parse_control(whole + "aim\tunit=x\tweight=1\n"));  // after "end"
}

TEST(Control, SkipsBadAimsAndUnknownRecords) {
  auto c = parse_control("coz-control 1\naim\tunit=a.c:1\tweight=x\naim\tunit=a.c:2\tweight=-1\n"
                         "later\tthing=1\naim\tunit=a.c:3\tweight=2\nend\n");
  ASSERT_TRUE(c);
  ASSERT_EQ(c->aim.size(), 1u);
  EXPECT_EQ(c->aim[0].unit, "a.c:3");
  EXPECT_EQ(c->baseline_share, 0.0);
  for (const char* bad : {"share=1", "share=0", "share=x", "share=-0.2", "part=0.3"}) {
    auto b = parse_control(std::string("coz-control 1\nbaseline\t") + bad + "\nend\n");
    ASSERT_TRUE(b) << bad;
    EXPECT_EQ(b->baseline_share, 0.0) << bad;
  }
}

TEST(Control, FileIsReadWrittenAndUpdatedInPlace) {
  char path[] = "/tmp/coz-control-test-XXXXXX";
  int made = mkstemp(path);
  ASSERT_GE(made, 0);
  close(made);
  int fd = open_control_file(path);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(read_control(fd));  // empty: not a control file yet
  ASSERT_TRUE(write_control(fd, Control{"", {{"a.c:1", 1.0}}, false}));
  auto after = update_control(fd, [](Control& c) { c.ended = true; });
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->ended);
  auto read = read_control(fd);
  ASSERT_TRUE(read);
  EXPECT_TRUE(read->ended);
  ASSERT_EQ(read->aim.size(), 1u);  // the update kept the rest
  close(fd);
  unlink(path);
}

// --- a simulated program: line -> true effect, as in docs/analysis.md ---

struct TrueLine {
  std::string name;
  double slope;         // program speedup = slope x line speedup
  double sample_share;  // of the conventional profile
};

/// Runs experiments as the runtime does (speedups: 25% at 0, else 5%
/// steps), each 100 ms on a program with a 0.2 ms period, Poisson visits;
/// lines by samples, or aimed as the monitor aims them after its warm-up
/// (and with its share of baselines). Two threads sampled every 1 ms: the
/// selected line takes Poisson(share x 200) samples.
class SimulatedRun {
 public:
  SimulatedRun(std::vector<TrueLine> lines, uint64_t seed)
      : lines_(std::move(lines)), rng_(seed), scheduler_(config_, rng_()) {
    for (const TrueLine& l : lines_) profile_.samples[l.name].count = static_cast<uint64_t>(l.sample_share * 10'000);
  }

  void run(size_t experiments, bool aimed) {
    for (size_t i = 0; i < experiments; ++i) step(aimed);
  }

  /// Runs experiments as run() does until the answer is settled (checked
  /// every 5, as often as the monitor aims), and returns how many it took;
  /// `most` if it never settled.
  size_t run_until_settled(size_t most, bool aimed) {
    while (profile_.experiments.size() < most) {
      step(aimed);
      if (profile_.experiments.size() % 5 == 0 && settle_state(analyze(profile_)).settled) break;
    }
    return profile_.experiments.size();
  }

  const Profile& profile() const { return profile_; }
  size_t experiments_on(const std::string& name) const {
    size_t n = 0;
    for (const Experiment& e : profile_.experiments) n += e.selected == name;
    return n;
  }

 private:
  size_t by_samples() {
    std::vector<double> shares;
    for (const TrueLine& l : lines_) shares.push_back(l.sample_share);
    return std::discrete_distribution<size_t>(shares.begin(), shares.end())(rng_);
  }
  size_t index_of(const std::string& name) const {
    for (size_t i = 0; i < lines_.size(); ++i) {
      if (lines_[i].name == name) return i;
    }
    return 0;
  }
  void experiment(size_t line, double speedup) {
    const double period_ns = 2e5 * (1.0 - lines_[line].slope * speedup);
    const uint64_t duration = 100 * ms;
    const double mean_visits = static_cast<double>(duration) / period_ns;
    Experiment e;
    e.selected = lines_[line].name;
    e.speedup = speedup;
    e.duration_ns = duration;
    // Its own stream, so that the experiments drawn stay those of runs before it was counted.
    e.selected_samples = std::poisson_distribution<uint64_t>(lines_[line].sample_share * 200)(samples_rng_);
    e.throughput.push_back({"p", std::poisson_distribution<uint64_t>(mean_visits)(rng_)});
    profile_.experiments.push_back(e);
  }

  /// One experiment; every 5th after the warm-up of 10 first re-aims.
  void step(bool aimed) {
    const size_t i = profile_.experiments.size();
    if (aimed && i >= 10 && i % 5 == 0) {
      Analysis a = analyze(profile_);
      Settling state = settle_state(a);
      aim_ = aim_weights(a, state);
      baseline_share_ = aim_baseline_share(state);
    }
    size_t line = by_samples();
    if (aimed && !aim_.empty() && scheduler_.aim_next()) {
      std::vector<double> weights;
      for (const AimWeight& w : aim_) weights.push_back(w.weight);
      size_t chosen = scheduler_.choose_weighted(weights);
      if (chosen != ExperimentScheduler::no_line) line = index_of(aim_[chosen].unit);
    }
    const bool share_asked = !aim_.empty() && baseline_share_ > 0;
    experiment(line, scheduler_.choose_speedup(share_asked ? std::optional<double>(baseline_share_) : std::nullopt));
  }

  std::vector<TrueLine> lines_;
  std::mt19937_64 rng_;
  std::mt19937_64 samples_rng_{7};
  Config config_;
  ExperimentScheduler scheduler_;
  std::vector<AimWeight> aim_;
  double baseline_share_ = 0;
  Profile profile_;
};

const LineEffect* effect_of(const Analysis& a, const std::string& line) {
  for (const LineEffect& e : a.effects) {
    if (e.line == line && e.point == "p") return &e;
  }
  return nullptr;
}

// --- settling ---

TEST(Settling, SettledOnceTheTopLinesHaveVerdicts) {
  // A clear bottleneck and a line without effect, both measured at length.
  SimulatedRun run({{"a.c:1", 0.6, 0.5}, {"a.c:2", 0.0, 0.5}}, 1);
  run.run(300, false);
  Settling s = settle_state(analyze(run.profile()), 2);
  ASSERT_EQ(s.points.size(), 1u);
  EXPECT_EQ(s.points[0].leader, "a.c:1");
  EXPECT_TRUE(s.points[0].top_settled) << s.points[0].blocking.size() << " blocking";
  EXPECT_TRUE(s.settled);
  EXPECT_EQ(s.experiments_to_settle, 0u);
}

TEST(Settling, NotSettledWhileATopLineIsOpen) {
  SimulatedRun run({{"a.c:1", 0.6, 0.5}, {"a.c:2", 0.0, 0.5}}, 2);
  run.run(12, false);  // too few for any verdict
  Settling s = settle_state(analyze(run.profile()), 2);
  EXPECT_FALSE(s.settled);
  ASSERT_EQ(s.points.size(), 1u);
  EXPECT_FALSE(s.points[0].blocking.empty());
  EXPECT_GT(s.experiments_to_settle, 0u);
}

TEST(Settling, ALineTooRareToTryDoesNotHoldTheAnswer) {
  // Two lines settled; a third tried 12 times at a speedup but never
  // sampled, so never delayed: nothing more experiments could settle.
  SimulatedRun run({{"a.c:1", 0.6, 0.5}, {"a.c:2", 0.0, 0.5}}, 1);
  run.run(300, false);
  Profile profile = run.profile();
  for (int i = 0; i < 12; ++i) {
    Experiment e;
    e.selected = "a.c:3";
    e.speedup = 0.5;
    e.duration_ns = 100 * ms;
    e.selected_samples = 0;
    e.throughput.push_back({"p", 500});
    profile.experiments.push_back(e);
  }
  Analysis a = analyze(profile);
  const LineEffect* rare = effect_of(a, "a.c:3");
  ASSERT_TRUE(rare);
  EXPECT_EQ(rare->label, Label::Unmeasured);
  EXPECT_EQ(rare->untreated_experiments, 12u);
  Settling s = settle_state(a, 3);
  EXPECT_TRUE(s.settled) << s.points[0].blocking.size() << " blocking";
}

TEST(Settling, NothingMeasuredIsNotSettled) {
  EXPECT_FALSE(settle_state(analyze(Profile{}), 3).settled);
}

/// An undecided line of point "p", measured enough to be judged, that needs
/// `needed` more experiments (nullopt: unknowable).
LineEffect open_line(const std::string& line, double sample_share, std::optional<uint64_t> needed = std::nullopt) {
  LineEffect e;
  e.line = line;
  e.point = "p";
  e.label = Label::Undecided;
  e.measured = true;
  e.measured_experiments = 20;
  e.sample_share = sample_share;
  e.experiments_needed = needed;
  return e;
}

// The status line's time left: each blocking line at its own share of the
// run's experiments, the answer waiting for the slowest. A hot and a rare
// line need 100 experiments each: chosen by samples, the rare one (1% of
// them) holds the answer for 100 / 0.01; aimed, its floor in the aim's
// weights gives it more.
TEST(Settling, TheTimeLeftWaitsForTheSlowestLineAtItsShare) {
  Analysis a;
  a.points.push_back(PointSummary{.name = "p"});
  a.effects = {open_line("a.c:1", 0.5, 100), open_line("a.c:2", 0.01, 100)};
  const Settling state = settle_state(a, 2);
  ASSERT_EQ(state.points.size(), 1u);
  ASSERT_EQ(state.points[0].blocking.size(), 2u);
  EXPECT_EQ(state.experiments_to_settle, 200u);
  EXPECT_DOUBLE_EQ(run_experiments_left(a, state, {}, 0.75), 100 / 0.01);
  // Aimed: weights 1 x (0.1 + share), 0.6 and 0.11 of 0.71.
  const double rare_share = 0.75 * 0.11 / 0.71 + 0.25 * 0.01;
  EXPECT_NEAR(run_experiments_left(a, state, aim_weights(a, state), 0.75), 100 / rare_share, 1e-6);
  a.effects[1].experiments_needed = 0;
  a.effects[1].label = Label::NoEffect;
  const Settling one_left = settle_state(a, 2);
  EXPECT_NEAR(run_experiments_left(a, one_left, {}, 0.75), 100 / 0.5, 1e-9);
}

// --- aim ---

TEST(Aim, AnOpenLineWithManySamplesGetsMoreExperimentsThanASettledOne) {
  // a.c:1 settled (a clear +60% effect, many experiments); a.c:2 open (an
  // effect of a few percent, few experiments); the same share of samples.
  SimulatedRun settled_part({{"a.c:1", 0.6, 0.45}, {"a.c:2", 0.04, 0.45}, {"a.c:3", 0.0, 0.1}}, 3);
  settled_part.run(60, false);
  Analysis a = analyze(settled_part.profile());
  const LineEffect* s = effect_of(a, "a.c:1");
  const LineEffect* o = effect_of(a, "a.c:2");
  ASSERT_TRUE(s && o);
  ASSERT_TRUE(settled_label(s->label)) << to_string(s->label);
  ASSERT_FALSE(settled_label(o->label)) << to_string(o->label);

  std::vector<AimWeight> aim = aim_weights(a, settle_state(a));
  std::vector<double> weights;
  for (const AimWeight& w : aim) weights.push_back(w.weight);
  Config config;
  ExperimentScheduler scheduler(config, 42);
  std::map<std::string, int> chosen;
  for (int i = 0; i < 10'000; ++i) ++chosen[aim[scheduler.choose_weighted(weights)].unit];
  EXPECT_GT(chosen["a.c:2"], 5 * chosen["a.c:1"]) << chosen["a.c:2"] << " against " << chosen["a.c:1"];
}

TEST(Aim, RarelySampledLinesDoNotTakeTheAimedExperiments) {
  // One line blocks the answer; forty others are open but almost never
  // sampled (memcached had dozens): their experiments would insert no delay.
  Analysis a;
  auto add = [&](const std::string& line, double share) { a.effects.push_back(open_line(line, share)); };
  add("hot.c:1", 0.5);
  for (int i = 0; i < 40; ++i) add("rare.c:" + std::to_string(i + 1), 0.0005);
  Settling state;
  state.points.push_back({});
  state.points[0].blocking = {"hot.c:1"};
  double hot = 0, all = 0;
  for (const AimWeight& w : aim_weights(a, state)) {
    all += w.weight;
    if (w.unit == "hot.c:1") hot = w.weight;
  }
  ASSERT_GT(all, 0);
  EXPECT_GT(hot / all, 0.9) << "the blocking line gets " << hot / all << " of the aimed experiments";
}

TEST(Aim, BaselineShareFollowsTheBlockingLines) {
  Settling state;
  EXPECT_EQ(aim_baseline_share(state), 0.0) << "nothing blocks: the runtime's own share";
  state.points.push_back({});
  state.points[0].blocking = {"a.c:1"};
  EXPECT_DOUBLE_EQ(aim_baseline_share(state), 0.5);
  state.points.push_back({});
  state.points[1].blocking = {"a.c:1", "a.c:2", "a.c:3", "a.c:4"};  // a.c:1 counts once
  EXPECT_NEAR(aim_baseline_share(state), 1.0 / 3.0, 1e-12);
  for (int i = 5; i < 40; ++i) state.points[1].blocking.push_back("a.c:" + std::to_string(i));
  EXPECT_DOUBLE_EQ(aim_baseline_share(state), 0.25);
}

TEST(Aim, BaselineShareIsLeastWhileABlockingLineIsThin) {
  // One blocking line: 0.5 once it has its measured experiments, 0.25 while
  // it lacks them (0% experiments do not count toward them).
  Settling state;
  state.points.push_back({});
  state.points[0].blocking = {"a.c:1"};
  state.points[0].thin_blocking = 1;
  EXPECT_DOUBLE_EQ(aim_baseline_share(state), 0.25);
  state.points[0].thin_blocking = 0;
  EXPECT_DOUBLE_EQ(aim_baseline_share(state), 0.5);
}

TEST(Aim, SettleStateCountsTheThinBlockingLines) {
  Analysis a;
  auto add = [&](const std::string& line, uint64_t measured, double impact) {
    LineEffect e;
    e.line = line;
    e.point = "p";
    e.label = Label::Undecided;
    e.measured = true;
    e.measured_experiments = measured;
    e.impact = impact;
    e.impact_low = impact - 0.1;
    e.impact_high = impact + 0.1;
    e.experiments_needed = 20;  // an undecided line's analysis always says how many
    a.effects.push_back(e);
  };
  add("a.c:1", 12, 0.3);
  add("b.c:2", 4, 0.2);
  a.points.push_back({});
  a.points[0].name = "p";
  Settling state = settle_state(a, 2);
  ASSERT_EQ(state.points.size(), 1u);
  EXPECT_EQ(state.points[0].blocking.size(), 2u);
  EXPECT_EQ(state.points[0].thin_blocking, 1u);

  // In a contended point (docs/analysis.md section 5.1) undecided is for
  // good: no experiments needed, nothing blocks settling.
  for (LineEffect& e : a.effects) e.experiments_needed = std::nullopt;
  state = settle_state(a, 2);
  EXPECT_TRUE(state.points[0].blocking.empty());
  EXPECT_EQ(state.points[0].experiments_to_settle, 0u);
}

TEST(Aim, ChosenSpeedupsKeepTheBaselineShareAsked) {
  Config config;
  ExperimentScheduler scheduler(config, 11);
  for (double share : {0.25, 0.5}) {
    int zeros = 0;
    for (int i = 0; i < 20'000; ++i) zeros += scheduler.choose_speedup(share) == 0.0;
    EXPECT_NEAR(zeros / 20'000.0, share, 0.015) << share;
  }
}

TEST(Aim, WeightedChoiceFollowsTheWeights) {
  Config config;
  ExperimentScheduler scheduler(config, 7);
  std::vector<double> weights = {0.0, 1.0, 3.0};
  int counts[3] = {};
  for (int i = 0; i < 40'000; ++i) ++counts[scheduler.choose_weighted(weights)];
  EXPECT_EQ(counts[0], 0);
  EXPECT_NEAR(counts[2] / static_cast<double>(counts[1]), 3.0, 0.2);
  EXPECT_EQ(scheduler.choose_weighted({0.0, 0.0}), ExperimentScheduler::no_line);
}

// What aiming is for: the answer settles in fewer experiments. The shape of
// hot_no_effect: the hottest line has no effect, and a bottleneck and a thin
// line with a small effect must be told apart from it. Median over 30
// simulated runs: aimed at most 0.6 of by samples (0.50 here).
//
// Tried and left: weighting the blocking lines by the experiments each still
// needs instead of by their samples made it 0.45 here (0.53 instead of 0.61
// on five lines of mixed effects), but on the real fork_join it gave 60% of
// the experiments to a line with 0.4% of the samples (the third of three, so
// in the top 3 that --until-settled waits for), and the bench's answer was
// not right within 40 s in 3 of 5 runs. Those runs predate the late-credit
// fix (d7936de): experiments on that thread-start line left the main thread
// ahead of the virtual clock, and every later experiment of the run was
// wrong. So the weighting itself was not fairly judged there; worth a retry.
TEST(Aim, AimedRunsSettleInFewerExperimentsThanRunsBySamples) {
  const std::vector<TrueLine> lines = {{"a.c:1", 0.0, 0.6}, {"a.c:2", 0.3, 0.3}, {"a.c:3", 0.08, 0.1}};
  constexpr int runs = 30;
  constexpr size_t most = 3'000;
  std::vector<double> by_samples, aimed;
  for (int r = 0; r < runs; ++r) {
    by_samples.push_back(static_cast<double>(SimulatedRun(lines, 500 + r).run_until_settled(most, false)));
    aimed.push_back(static_cast<double>(SimulatedRun(lines, 500 + r).run_until_settled(most, true)));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // With single-look intervals: 100 against 205 experiments. With
  // confidence sequences (stop 55) both runs need more: 185 against 335.
  EXPECT_LE(median(aimed), 0.6 * median(by_samples))
      << "aimed " << median(aimed) << ", by samples " << median(by_samples);
}

// Adaptive allocation leaves the estimates unbiased: over many simulated
// runs, each line's mean slope error is within the noise of that mean, and
// the 95% intervals cover the truth about as often as they say.
TEST(Aim, EstimatesStayUnbiasedUnderAimedAllocation) {
  const std::vector<TrueLine> lines = {{"a.c:1", 0.5, 0.4}, {"a.c:2", 0.0, 0.3}, {"a.c:3", 0.15, 0.3}};
  constexpr int runs = 40;
  std::map<std::string, std::vector<double>> errors;
  std::map<std::string, int> covered;
  for (int r = 0; r < runs; ++r) {
    SimulatedRun run(lines, 1000 + r);
    run.run(150, true);
    Analysis a = analyze(run.profile());
    for (const TrueLine& l : lines) {
      const LineEffect* e = effect_of(a, l.name);
      ASSERT_TRUE(e && e->measured) << l.name;
      errors[l.name].push_back(e->slope - l.slope);
      covered[l.name] += e->slope_low <= l.slope && l.slope <= e->slope_high;
    }
  }
  for (const TrueLine& l : lines) {
    const std::vector<double>& err = errors[l.name];
    double mean = 0, sq = 0;
    for (double x : err) mean += x;
    mean /= err.size();
    for (double x : err) sq += (x - mean) * (x - mean);
    double se_of_mean = std::sqrt(sq / (err.size() - 1)) / std::sqrt(static_cast<double>(err.size()));
    EXPECT_LT(std::abs(mean), 3.5 * se_of_mean + 0.002) << l.name << ": mean error " << mean;
    EXPECT_GE(covered[l.name], runs * 80 / 100) << l.name << ": interval covered the truth " << covered[l.name] << " of " << runs;
  }
}


}  // namespace
}  // namespace coz::analysis
