// What belongs to the program stays the program's (issue #14): its
// descriptors, its descriptor limit, its files, its stderr. Each test runs a
// small program (test/programs/robust/fd_*.c and friends) plain and under
// `coz run`, and checks that the program's own behaviour is the same (its
// output, its files, its exit status), and that the profile stays whole.
//
// Every program here runs well under a second; experiments are capped at
// 150 ms (COZ_EXPERIMENT_MAX_NS) so that half a second of work writes some.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "harness.h"

namespace coz_itest {
namespace {

namespace fs = std::filesystem;

constexpr const char* kExperimentMaxNs = "150000000";  // 150 ms

class OwnershipTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("COZ_EXPERIMENT_MAX_NS", kExperimentMaxNs, 1); }

  void TearDown() override {
    if (HasFailure()) {
      scratch_.keep();
      std::cerr << "[ kept     ] profiles and output in " << scratch_.path() << "\n";
    }
  }

  std::string profile_path() const { return scratch_.file("profile.coz"); }

  /// A fresh directory under the scratch directory, for one run's files.
  std::string directory(const std::string& name) const {
    const std::string dir = scratch_.file(name);
    fs::create_directories(dir);
    return dir;
  }

  /// `coz run -o PROFILE OPTIONS --- PROGRAM...`, prefixed by `launcher`
  /// (e.g. a shell that lowers a limit first) when given.
  ProcessResult run_coz(const std::vector<std::string>& options, const std::vector<std::string>& program,
                        const std::vector<std::string>& launcher = {}) {
    std::vector<std::string> argv = launcher;
    for (const std::string& a : {std::string(COZ_EXE), std::string("run"), std::string("-o"), profile_path()}) {
      argv.push_back(a);
    }
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("---");
    argv.insert(argv.end(), program.begin(), program.end());
    return run_process(argv, scratch_, std::chrono::seconds(30));
  }

  ProcessResult run_plain(const std::vector<std::string>& program, const std::vector<std::string>& launcher = {}) {
    std::vector<std::string> argv = launcher;
    argv.insert(argv.end(), program.begin(), program.end());
    return run_process(argv, scratch_, std::chrono::seconds(30));
  }

  /// The profile, checked to be whole records.
  RawProfile whole_profile() {
    RawProfile raw = read_raw(profile_path());
    const std::string problem = whole_records_problem(profile_path(), raw);
    EXPECT_TRUE(problem.empty()) << problem;
    return raw;
  }

  TempDir scratch_;
};

/// The same exit status and the same stdout as the plain run.
void expect_same_behaviour(const ProcessResult& plain, const ProcessResult& profiled, const std::string& what) {
  ASSERT_TRUE(plain.exited && plain.exit_status == 0) << what << " (plain): " << describe(plain) << plain.out;
  EXPECT_TRUE(profiled.exited) << what << ": " << describe(profiled);
  EXPECT_EQ(profiled.exit_status, plain.exit_status) << what << ": " << describe(profiled) << profiled.out;
  EXPECT_EQ(profiled.out, plain.out) << what << ": the program's output differs under coz run";
}

/// A shell that runs its arguments after `ulimit ARGS` (e.g. "-Sn 16").
std::vector<std::string> with_ulimit(const std::string& args) {
  return {"/bin/sh", "-c", "ulimit " + args + " && exec \"$@\"", "sh"};
}

// ======================================================================================
// Descriptors: the runtime's own (profile, per-thread samplers) live where the
// program never allocates, and the program's close/dup calls pass them by.
// ======================================================================================

// A program closes every descriptor from 3 up at start-up, then opens a data
// file: the lowest free number. The runtime's profile descriptor must not be
// that number, or the profile's records land in the program's file (and the
// profile keeps only its start-up record). close_range, the same through
// syscall(), and closefrom.
TEST_F(OwnershipTest, ClosingEveryDescriptorAtStartKeepsTheProfileOutOfTheProgramsFile) {
  for (const std::string how : {"range", "syscall", "closefrom"}) {
    SCOPED_TRACE("--close " + how);
    const std::vector<std::string> program = {FD_REUSE_EXE, directory("plain-" + how), "--files", "1", "--close", how,
                                              "--ms", "500"};
    const ProcessResult plain = run_plain(program);
    fs::remove(profile_path());
    std::vector<std::string> profiled_program = program;
    profiled_program[1] = directory("coz-" + how);
    const ProcessResult profiled = run_coz({}, profiled_program);
    expect_same_behaviour(plain, profiled, "fd_reuse --close " + how);
    const RawProfile raw = whole_profile();
    EXPECT_GE(raw.count("experiment"), 1u) << "the profile lost its experiments\n" << raw.text;
    EXPECT_GE(raw.count("samples"), 1u) << "the profile lost its samples\n" << raw.text;
  }
}

// Four threads start (each with its sampler), then main closes every
// descriptor from 3 to sysconf(_SC_OPEN_MAX) and opens 8 files with
// O_APPEND | O_NONBLOCK. The runtime must never act on those numbers: not
// set a period or clear flags on them while the threads run (a quiet run,
// --fixed-speedup 0, clears O_ASYNC on its samplers), not close them when
// the threads exit.
TEST_F(OwnershipTest, ThreadSamplersNeverActOnTheProgramsDescriptors) {
  for (const bool quiet : {false, true}) {
    SCOPED_TRACE(quiet ? "--fixed-speedup 0" : "default experiments");
    const std::string tag = quiet ? "quiet" : "default";
    const std::vector<std::string> program = {FD_REUSE_EXE, directory("plain-" + tag), "--threads", "4", "--files",
                                              "8", "--close", "loop", "--ms", "300"};
    const ProcessResult plain = run_plain(program);
    fs::remove(profile_path());
    std::vector<std::string> profiled_program = program;
    profiled_program[1] = directory("coz-" + tag);
    const ProcessResult profiled =
        run_coz(quiet ? std::vector<std::string>{"--fixed-speedup", "0"} : std::vector<std::string>{},
                profiled_program);
    expect_same_behaviour(plain, profiled, "fd_reuse --threads 4 --files 8 --close loop");
    const RawProfile raw = whole_profile();
    EXPECT_GE(raw.count("samples"), 1u) << raw.text;
  }
}

/// Whether this process may raise its hard descriptor limit (CAP_SYS_RESOURCE).
bool may_raise_hard_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  rlimit raised = limit;
  raised.rlim_max = limit.rlim_max + 1;
  if (setrlimit(RLIMIT_NOFILE, &raised) != 0) return false;
  setrlimit(RLIMIT_NOFILE, &limit);
  return true;
}

// Under `ulimit -Sn 16` a program that opens 12 files gets 12 (3 are stdio),
// as without the profiler; it, a forked child and an exec'ed child see the
// limit the user set. Likewise with a larger soft limit below the hard one
// (nothing raises it behind the program's back), and, where the runtime may
// raise the hard limit for a moment (CAP_SYS_RESOURCE), under `ulimit -n 16`.
TEST_F(OwnershipTest, TheProgramKeepsItsWholeDescriptorBudgetAndItsLimit) {
  std::vector<std::string> limits = {"-Sn 16", "-Sn 1024"};
  if (may_raise_hard_limit()) limits.push_back("-n 16");
  else std::cerr << "[ note     ] no CAP_SYS_RESOURCE: under `ulimit -n 16` (the hard limit too) there is no room above\n";
  for (const std::string& limit : limits) {
    SCOPED_TRACE("ulimit " + limit);
    const ProcessResult plain = run_plain({FD_BUDGET_EXE, "--files", "12"}, with_ulimit(limit));
    ASSERT_NE(plain.out.find("opened=12 of 12\n"), std::string::npos) << plain.out << describe(plain);
    fs::remove(profile_path());
    const ProcessResult profiled = run_coz({}, {FD_BUDGET_EXE, "--files", "12"}, with_ulimit(limit));
    expect_same_behaviour(plain, profiled, "fd_budget under ulimit " + limit);
    whole_profile();
  }
}

}  // namespace
}  // namespace coz_itest
