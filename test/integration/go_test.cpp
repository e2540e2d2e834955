// Go programs (issue #52): what `coz run` does with the binaries Go's
// toolchain makes. test/programs/go_pipeline is built twice: as `go build`
// makes it without cgo (statically linked: nothing reads LD_PRELOAD) and
// with the command `coz run` gives for that case. Skipped without Go.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"

namespace coz_itest {
namespace {

constexpr const char* kRebuild = "CGO_ENABLED=1 go build -ldflags=-linkmode=external";

class GoTest : public ScratchTest {
 protected:
  void SetUp() override {
    if (std::string(GO_PIPELINE_EXE).empty() || std::string(GO_PROGRESS_EXE).empty()) GTEST_SKIP() << "go not found";
  }
};

// The program runs as plain (output, status), and one warning says why
// nothing is profiled and the exact command that makes a binary coz can load.
TEST_F(GoTest, AStaticallyLinkedGoProgramGetsTheCommandThatRebuildsIt) {
  const std::vector<std::string> program = {GO_PIPELINE_STATIC_EXE, "200"};
  const ProcessResult plain = run_process(program, scratch_);
  ASSERT_TRUE(plain.exited && plain.exit_status == 0) << describe(plain);
  const ProcessResult profiled = coz_run(profile_path(), {}, program, scratch_);
  EXPECT_TRUE(profiled.exited && profiled.exit_status == 0) << describe(profiled);
  EXPECT_EQ(profiled.out, plain.out);
  const std::vector<std::string> warnings = lines_with(profiled.err, "coz run: warning:");
  ASSERT_EQ(warnings.size(), 1u) << profiled.err;
  EXPECT_NE(warnings[0].find("statically linked"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find(kRebuild), std::string::npos) << warnings[0];
}

// Built with that command, the same program takes the runtime: it runs as
// plain, and its samples reach the profile and land on its own lines: the
// walks cross Go's frames (their CFI is in .debug_frame, the goroutine's
// stack in Go's heap), and Go's standard library is out of the default
// scope, so the consumer's line gets the time of the sha256 it calls. (How
// right the experiments are is #52's further work: Go parks and wakes its
// threads with raw futex calls, which the runtime does not see yet.)
TEST_F(GoTest, TheRebuiltProgramIsProfiled) {
  const std::vector<std::string> program = {GO_PIPELINE_EXE, "100000"};
  const ProcessResult plain = run_process(program, scratch_);
  ASSERT_TRUE(plain.exited && plain.exit_status == 0) << describe(plain);
  const ProcessResult profiled = coz_run(profile_path(), {}, program, scratch_);
  EXPECT_TRUE(profiled.exited && profiled.exit_status == 0) << describe(profiled);
  EXPECT_EQ(profiled.out, plain.out);
  EXPECT_TRUE(lines_with(profiled.err, "statically linked").empty()) << profiled.err;
  const std::optional<analysis::Profile> profile = read_profile(profile_path());
  ASSERT_TRUE(profile) << "no profile written\n" << profiled.err;
  uint64_t samples = 0;
  for (const auto& [location, at] : profile->samples) samples += at.count;
  ASSERT_GT(samples, 0u) << "no sample reached the profile\n" << profiled.err;
  const uint64_t consume = samples_on_line(*profile, marked_line("go_pipeline/main.go", "consume"));
  EXPECT_GT(consume, samples / 2) << "of " << samples << " samples, " << consume << " on the consumer's line\n"
                                  << profiled.err;
}

// A Go program ends with its own raw exit_group, past the C library's exit:
// the runtime redirects it (go_exit.h), so the profile still gets its last
// records, and the status is the program's (os.Exit(3) here).
TEST_F(GoTest, AGoProgramsExitFinishesTheProfile) {
  const std::vector<std::string> program = {GO_PIPELINE_EXE, "20000", "3"};
  const ProcessResult plain = run_process(program, scratch_);
  ASSERT_TRUE(plain.exited && plain.exit_status == 3) << describe(plain);
  const ProcessResult profiled = coz_run(profile_path(), {}, program, scratch_);
  EXPECT_TRUE(profiled.exited && profiled.exit_status == 3) << describe(profiled);
  EXPECT_EQ(profiled.out, plain.out);
  const std::optional<analysis::Profile> profile = read_profile(profile_path());
  ASSERT_TRUE(profile) << "no profile written\n" << profiled.err;
  EXPECT_EQ(profile->sampling.processes, 1u) << "no `sampling` record: the runtime's exit never ran\n" << profiled.err;
}

// Progress points marked in source with the coz package (include/go/coz,
// Coz's Go API): a named throughput point, one named after its file and
// line, and a latency point, each counted as often as the program visits it.
TEST_F(GoTest, ProgressPointsFromTheCozPackage) {
  constexpr uint64_t items = 200'000;  // ~0.6 s: experiments cover most of it, not the start-up
  const std::vector<std::string> program = {GO_PROGRESS_EXE, std::to_string(items)};
  const ProcessResult profiled = coz_run(profile_path(), {}, program, scratch_);
  ASSERT_TRUE(profiled.exited && profiled.exit_status == 0) << describe(profiled);
  EXPECT_NE(profiled.out.find("available=true"), std::string::npos) << profiled.out;
  const std::optional<analysis::Profile> profile = read_profile(profile_path());
  ASSERT_TRUE(profile) << "no profile written\n" << profiled.err;
  const std::string by_line = marked_line("go_progress/main.go", "progress");
  uint64_t named = 0, lined = 0, arrivals = 0, departures = 0;
  for (const analysis::Experiment& e : profile->experiments) {
    for (const analysis::ThroughputMeasurement& m : e.throughput) {
      if (m.name == "item done") named += m.delta;
      if (location_matches(m.name, by_line)) lined += m.delta;
    }
    for (const analysis::LatencyMeasurement& m : e.latency) {
      if (m.name == "item work") arrivals += m.arrivals, departures += m.departures;
    }
  }
  // Each experiment reads the counters one after the other: a visit between two reads
  // counts in one experiment for the one point and in the next for the other.
  const uint64_t reads = profile->experiments.size();
  auto apart = [](uint64_t a, uint64_t b) { return a > b ? a - b : b - a; };
  EXPECT_GT(named, items * 2 / 5) << "visits of \"item done\" in the experiments";
  EXPECT_LE(named, items) << "more visits of \"item done\" than happened";
  EXPECT_LE(apart(lined, named), reads) << by_line << ": the same loop, the same visits: " << lined << " and " << named;
  EXPECT_GT(arrivals, items * 2 / 5) << "operations begun of \"item work\"";
  EXPECT_LE(arrivals, items) << "more operations of \"item work\" than happened";
  EXPECT_LE(apart(arrivals, departures), reads) << arrivals << " begun, " << departures << " ended";
}

}  // namespace
}  // namespace coz_itest
