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
    if (std::string(GO_PIPELINE_EXE).empty()) GTEST_SKIP() << "go not found";
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
// plain and its samples reach the profile. (Where they land is #52's
// further work: Go's standard library and runtime are in the binary, so in
// the default scope, and its sha256 assembly takes the consumer's time.)
TEST_F(GoTest, TheRebuiltProgramIsProfiled) {
  const std::vector<std::string> program = {GO_PIPELINE_EXE, "20000"};
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
  EXPECT_GT(samples, 0u) << "no sample reached the profile\n" << profiled.err;
}

}  // namespace
}  // namespace coz_itest
