// Tests of profiler_loop.h: the profiler thread's stepped waits and its
// watch on the program's threads, on a fake clock and a fake census.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "profiler_loop.h"

namespace coz {
namespace {

constexpr uint64_t ms = 1'000'000;

/// Time moves only when slept through, or when a test advances it.
class FakeClock final : public LoopClock {
 public:
  uint64_t now_ns() override { return now; }
  void sleep_ns(uint64_t ns) override {
    sleeps.push_back(ns);
    now += ns;
  }
  uint64_t now = 1'000 * ms;
  std::vector<uint64_t> sleeps;
};

class FakeCensus final : public ThreadCensus {
 public:
  int registered_threads() override { return registered; }
  std::optional<ProcessThreads> process_threads() override {
    ++reads;
    return kernel;
  }
  int registered = 1;
  std::optional<ProcessThreads> kernel = ProcessThreads{false, 1, 0};
  int reads = 0;
};

// --- /proc/self/stat ---

/// A stat line with `state`, `threads` and `exit_code` in fields 3, 20 and 52.
std::string stat_line(const std::string& comm, char state, int threads, int exit_code) {
  std::string line = "4242 (" + comm + ") " + state;
  for (int field = 4; field <= 52; ++field) {
    int value = field == 20 ? threads : field == 52 ? exit_code : field;
    line += " " + std::to_string(value);
  }
  return line + "\n";
}

TEST(ProcessStat, ReadsStateThreadsAndExitCode) {
  std::optional<ProcessThreads> t = parse_process_stat(stat_line("server", 'S', 3, 0).c_str());
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->main_exited);
  EXPECT_EQ(t->others, 2);
  t = parse_process_stat(stat_line("server", 'Z', 2, 7 << 8).c_str());
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->main_exited);
  EXPECT_EQ(t->others, 1);
  EXPECT_EQ(t->main_status, 7 << 8);
}

TEST(ProcessStat, CountsFieldsFromTheLastParenthesis) {
  // A command name may hold spaces and parentheses.
  std::optional<ProcessThreads> t = parse_process_stat(stat_line("a) (b c", 'R', 5, 0).c_str());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->others, 4);
  EXPECT_FALSE(t->main_exited);
}

TEST(ProcessStat, RejectsWhatIsNotAStatLine) {
  EXPECT_FALSE(parse_process_stat(""));
  EXPECT_FALSE(parse_process_stat("4242 server S 1 2 3"));  // no ')'
  EXPECT_FALSE(parse_process_stat("4242 (server) S 1 2"));  // no thread count
  EXPECT_FALSE(parse_process_stat(stat_line("server", 'S', 0, 0).c_str()));
}

// --- the main thread's exit ---

TEST(MainExitWatch, NothingWhileTheMainThreadRuns) {
  FakeClock clock;
  FakeCensus census;
  MainExitWatch watch(clock, census);
  EXPECT_FALSE(watch.main_left_alone());
  EXPECT_FALSE(watch.found_left_alone());
  EXPECT_EQ(census.reads, 1);
}

TEST(MainExitWatch, ReadsTheKernelAtMostOncePerInterval) {
  FakeClock clock;
  FakeCensus census;
  MainExitWatch watch(clock, census);
  for (int i = 0; i < 100; ++i) {
    watch.main_left_alone();
    clock.now += MainExitWatch::check_interval_ns / 10;
  }
  EXPECT_EQ(census.reads, 10);
}

TEST(MainExitWatch, MainLeftWithARawExitAndNoOtherThread) {
  FakeClock clock;
  FakeCensus census;
  MainExitWatch watch(clock, census);
  EXPECT_FALSE(watch.main_left_alone());
  census.kernel = ProcessThreads{true, MainExitWatch::runtime_threads, 3 << 8};  // SYS_exit(3)
  EXPECT_FALSE(watch.main_left_alone()) << "checked again before the interval passed";
  clock.now += MainExitWatch::check_interval_ns;
  EXPECT_TRUE(watch.main_left_alone());
  EXPECT_TRUE(watch.found_left_alone());
  EXPECT_FALSE(watch.main_outlived());
  EXPECT_EQ(watch.main_status(), 3 << 8);
  census.reads = 0;
  EXPECT_TRUE(watch.main_left_alone()) << "once found, it stays so";
  EXPECT_EQ(census.reads, 0);
}

TEST(MainExitWatch, AnotherThreadOutlivesTheMainThread) {
  FakeClock clock;
  FakeCensus census;
  census.kernel = ProcessThreads{true, MainExitWatch::runtime_threads + 1, 0};
  MainExitWatch watch(clock, census);
  EXPECT_FALSE(watch.main_left_alone());
  EXPECT_TRUE(watch.main_outlived());
  // That thread leaves with a raw exit too: now the runtime's thread is alone.
  census.kernel->others = MainExitWatch::runtime_threads;
  clock.now += MainExitWatch::check_interval_ns;
  EXPECT_TRUE(watch.main_left_alone());
  EXPECT_TRUE(watch.main_outlived()) << "the process ends as the last thread left it, not as main did";
}

TEST(MainExitWatch, MainLeftThroughGlibcIsLeftToGlibc) {
  // pthread_exit in main: the registry no longer counts any thread, and
  // glibc ends the process when the profiler thread returns.
  FakeClock clock;
  FakeCensus census;
  census.kernel = ProcessThreads{true, MainExitWatch::runtime_threads, 0};
  census.registered = 0;
  MainExitWatch watch(clock, census);
  EXPECT_FALSE(watch.main_left_alone());
}

TEST(MainExitWatch, AnUnreadableProcIsNotAnExit) {
  FakeClock clock;
  FakeCensus census;
  census.kernel = std::nullopt;
  MainExitWatch watch(clock, census);
  EXPECT_FALSE(watch.main_left_alone());
}

// --- stepped waits ---

TEST(WaitInSteps, SleepsInStepsUntilTheDeadline) {
  FakeClock clock;
  int work = 0;
  const uint64_t start = clock.now;
  EXPECT_TRUE(wait_in_steps(clock, 10 * ms, 2 * ms, [] { return false; }, [] { return false; }, [&] { ++work; }));
  EXPECT_EQ(clock.now - start, 10 * ms);
  EXPECT_EQ(work, 5);
  EXPECT_EQ(clock.sleeps, std::vector<uint64_t>(5, 2 * ms));
}

TEST(WaitInSteps, TheLastStepEndsAtTheDeadline) {
  FakeClock clock;
  const uint64_t start = clock.now;
  EXPECT_TRUE(wait_in_steps(clock, 5 * ms, 2 * ms, [] { return false; }, [] { return false; }, [] {}));
  EXPECT_EQ(clock.now - start, 5 * ms);
  EXPECT_EQ(clock.sleeps.back(), 1 * ms);
}

TEST(WaitInSteps, TheWorkTakesPartOfTheStepNotMore) {
  FakeClock clock;
  const uint64_t start = clock.now;
  auto work = [&] { clock.now += ms / 2; };  // half a millisecond of draining per step
  EXPECT_TRUE(wait_in_steps(clock, 4 * ms, 1 * ms, [] { return false; }, [] { return false; }, work));
  EXPECT_EQ(clock.now - start, 4 * ms);
  EXPECT_EQ(clock.sleeps, std::vector<uint64_t>(4, ms / 2));
  // Work longer than a step: no sleep at all, and the wait still ends on time.
  FakeClock busy;
  const uint64_t busy_start = busy.now;
  EXPECT_TRUE(wait_in_steps(busy, 4 * ms, 1 * ms, [] { return false; }, [] { return false; },
                            [&] { busy.now += 3 * ms; }));
  EXPECT_TRUE(busy.sleeps.empty());
  EXPECT_EQ(busy.now - busy_start, 6 * ms) << "two steps of work: the deadline is checked before each";
}

TEST(WaitInSteps, EndsWhenDoneAndFailsWhenStopped) {
  FakeClock clock;
  int steps = 0;
  EXPECT_TRUE(wait_in_steps(clock, 100 * ms, 1 * ms, [] { return false; }, [&] { return steps == 3; },
                            [&] { ++steps; }));
  EXPECT_EQ(steps, 3);
  steps = 0;
  EXPECT_FALSE(wait_in_steps(clock, 100 * ms, 1 * ms, [&] { return steps == 2; }, [] { return false; },
                             [&] { ++steps; }));
  EXPECT_EQ(steps, 2);
  // A stop wins over done, as in the profiler: shutdown ends the wait unfinished.
  EXPECT_FALSE(wait_in_steps(clock, 100 * ms, 1 * ms, [] { return true; }, [] { return true; }, [] {}));
}

}  // namespace
}  // namespace coz
