// The order of an experiment's steps (experiment_cycle.h), on a fake that
// records each step and can make the run stop at any of them.
#include "experiment_cycle.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace coz {
namespace {

class FakeSteps final : public ExperimentSteps {
 public:
  std::vector<std::string> trace;
  std::string stop_at;       // the step that finds the run stopping ("" never)
  int cycles_before_stop = 1;  // how many times that step passes first
  bool monitor_says_stop = false;

  bool stopping() override { return stopped_; }
  bool stop_asked() override {
    trace.push_back("control");
    return monitor_says_stop;
  }
  void stop_experiments() override { trace.push_back("stop experiments"); }
  bool choose(ExperimentChoice& choice) override {
    choice.length_ns = 50;
    choice.speedup = 0.5;
    return step("choose");
  }
  void drain_samples() override { trace.push_back("drain"); }
  bool begin(const ExperimentChoice& choice) override {
    EXPECT_EQ(choice.length_ns, 50u);
    return step("begin");
  }
  void run_to_the_end() override { trace.push_back("run to the end"); }
  bool sleep(uint64_t ns, bool poll_points) override {
    return step(ns == 50 ? (poll_points ? "sleep experiment" : "?") : (poll_points ? "?" : "cool off"));
  }
  bool stop_crediting() override { return step("stop crediting"); }
  bool drain_debts(uint64_t length_ns) override {
    EXPECT_EQ(length_ns, 50u);
    return step("drain debts");
  }
  bool end_and_write() override { return step("end and write"); }
  void after_experiment() override { trace.push_back("after"); }

 private:
  bool step(const std::string& name) {
    trace.push_back(name);
    if (name == stop_at && --cycles_before_stop < 0) stopped_ = true;
    return !stopped_;
  }
  bool stopped_ = false;
};

const std::vector<std::string> one_cycle = {"control", "choose", "drain", "begin", "sleep experiment", "drain",
                                            "stop crediting", "drain debts", "end and write", "after", "cool off"};

std::vector<std::string> cycles(int n) {
  std::vector<std::string> all;
  for (int i = 0; i < n; ++i) all.insert(all.end(), one_cycle.begin(), one_cycle.end());
  return all;
}

TEST(ExperimentCycle, EachExperimentDrainsBeforeItBeginsAndAfterItsLengthAndEndsAfterItsDebts) {
  FakeSteps steps;
  steps.stop_at = "cool off";
  steps.cycles_before_stop = 2;  // a third cool-off finds the run stopping
  run_experiment_cycles(steps, false, 5);
  EXPECT_EQ(steps.trace, cycles(3));
}

TEST(ExperimentCycle, ARunStoppingDuringAnExperimentEndsItWithNothingMore) {
  // shutdown() ends what runs: the cycle must not stop crediting, end or write it.
  for (const char* at : {"begin", "sleep experiment", "stop crediting", "drain debts", "end and write"}) {
    FakeSteps steps;
    steps.stop_at = at;
    steps.cycles_before_stop = 0;
    run_experiment_cycles(steps, false, 5);
    std::vector<std::string> expected;
    for (const std::string& s : one_cycle) {
      expected.push_back(s);
      if (s == at) break;
    }
    EXPECT_EQ(steps.trace, expected) << at;
  }
}

TEST(ExperimentCycle, NoLineBeforeTheRunStopsMeansNoExperiment) {
  FakeSteps steps;
  steps.stop_at = "choose";
  steps.cycles_before_stop = 0;
  run_experiment_cycles(steps, false, 5);
  EXPECT_EQ(steps.trace, (std::vector<std::string>{"control", "choose"}));
}

TEST(ExperimentCycle, TheMonitorsStopEndsTheExperimentsBetweenTwo) {
  FakeSteps steps;
  steps.monitor_says_stop = true;
  run_experiment_cycles(steps, false, 5);
  EXPECT_EQ(steps.trace, (std::vector<std::string>{"control", "stop experiments"}));
}

TEST(ExperimentCycle, EndToEndIsOneExperimentUntilTheRunStops) {
  FakeSteps steps;
  run_experiment_cycles(steps, true, 5);
  EXPECT_EQ(steps.trace, (std::vector<std::string>{"control", "choose", "drain", "begin", "run to the end"}));
}

}  // namespace
}  // namespace coz
