// The runtime's lifecycle inside the program (issue #14: locks, forks,
// exits, the preload boundary): each program in test/programs/robust runs
// plain and under `coz run`, and must behave the same (output, exit status,
// time within a bound), with a whole profile. What each test guards against
// is said above it.
//
// Every program runs well under 2 s; a hang is cut by the run's timeout.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"

namespace coz_itest {
namespace {

class LifecycleTest : public ShortExperimentsTest {
 protected:
  /// `coz run -o PROFILE OPTIONS --- PROGRAM`; a hang costs `timeout`.
  ProcessResult run(const std::vector<std::string>& options, const std::vector<std::string>& program,
                    std::chrono::seconds timeout = std::chrono::seconds(20), const std::string& profile = "") {
    std::vector<std::string> argv = {COZ_EXE, "run", "-o", profile.empty() ? profile_path() : profile};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("---");
    argv.insert(argv.end(), program.begin(), program.end());
    return run_process(argv, scratch_, timeout);
  }

  ProcessResult plain(const std::vector<std::string>& program) {
    return run_process(program, scratch_, std::chrono::seconds(20));
  }

  /// Checks the file is whole records and returns it split into lines.
  RawProfile whole_profile(const std::string& path = "") {
    const std::string file = path.empty() ? profile_path() : path;
    RawProfile raw = read_raw(file);
    const std::string problem = whole_records_problem(file, raw);
    EXPECT_TRUE(problem.empty()) << problem;
    return raw;
  }
};

/// The same ending: exit status, or the signal that ended it.
void expect_same_ending(const ProcessResult& profiled, const ProcessResult& plain) {
  EXPECT_FALSE(profiled.timed_out) << "hung under the profiler: " << describe(profiled);
  EXPECT_EQ(profiled.exited, plain.exited) << describe(profiled) << "\nplain: " << describe(plain);
  EXPECT_EQ(profiled.exit_status, plain.exit_status) << describe(profiled) << "\nplain: " << describe(plain);
  EXPECT_EQ(profiled.term_signal, plain.term_signal) << describe(profiled) << "\nplain: " << describe(plain);
}

uint64_t field(const analysis::RecordLine& record, const std::string& key) {
  const std::string* value = record.find(key);
  return value ? std::stoull(*value) : 0;
}

/// The sum of `key` over the records of `type`.
uint64_t sum_of(const RawProfile& raw, const std::string& type, const std::string& key) {
  uint64_t sum = 0;
  for (const analysis::RecordLine* r : raw.of(type)) sum += field(*r, key);
  return sum;
}

// ======================================================================================
// Forks (issue #14, item 8)
// ======================================================================================

// Four threads sleep, contend for a mutex and start threads, all of which
// take the runtime's locks, while the main thread forks children that sleep
// and start threads. A child inherits only the forking thread: a runtime
// lock held by another thread at the fork, or a table it was changing,
// would stay held or torn in the child forever. Every child must exit 0,
// and write its own whole records.
TEST_F(LifecycleTest, ChildrenForkedAmongBusyThreadsAllExit) {
  const std::vector<std::string> program = {FORK_SLEEPERS_EXE, "--forks", "30", "--child-ms", "1500"};
  const ProcessResult before = plain(program);
  ASSERT_TRUE(before.exited && before.exit_status == 0) << describe(before);
  const ProcessResult result = run({}, program, std::chrono::seconds(60));
  expect_same_ending(result, before);
  EXPECT_EQ(number_after(result.out, "hung"), 0) << result.out;
  EXPECT_EQ(number_after(result.out, "ok"), 30) << result.out;
  const RawProfile raw = whole_profile();
  EXPECT_EQ(raw.count("runtime"), 31u) << "one runtime record per process (the parent and 30 children)";
}

// ======================================================================================
// Threads that leave without exit() (item 9)
// ======================================================================================

// The only thread ends with syscall(SYS_exit, 3): the process ends, with
// status 3, once the runtime's own thread has finished the profile.
TEST_F(LifecycleTest, RawExitOfTheOnlyThreadEndsTheProcess) {
  const std::vector<std::string> program = {RAW_EXIT_EXE, "main", "3"};
  const ProcessResult before = plain(program);
  ASSERT_TRUE(before.exited && before.exit_status == 3) << describe(before);
  const ProcessResult result = run({}, program, std::chrono::seconds(10));
  expect_same_ending(result, before);
  EXPECT_EQ(result.out, before.out);
  EXPECT_LT(result.seconds, before.seconds + 2.0) << "the process lingered after its last thread";
  const RawProfile raw = whole_profile();
  EXPECT_EQ(raw.count("runtime"), 1u) << raw.text;
}

// The main thread leaves with syscall(SYS_exit, 3) while a second thread
// works on and returns: the process ends when that one does, with the
// status the last thread left (0, as glibc ends a thread that returns).
TEST_F(LifecycleTest, RawExitOfMainWhileAThreadWorksOn) {
  const std::vector<std::string> program = {RAW_EXIT_EXE, "thread", "3"};
  const ProcessResult before = plain(program);
  ASSERT_TRUE(before.exited) << describe(before);
  const ProcessResult result = run({}, program, std::chrono::seconds(10));
  expect_same_ending(result, before);
  EXPECT_EQ(result.out, before.out);
  const RawProfile raw = whole_profile();
  EXPECT_EQ(raw.count("runtime"), 1u) << raw.text;
}

// A program that enters seccomp strict mode may only read, write, _exit and
// sigreturn: the runtime must make no other system call on its thread (a
// sample handler's would get the thread killed) and must not keep the
// process alive after the thread's _exit.
TEST_F(LifecycleTest, SeccompStrictProgramEndsAsWithoutTheProfiler) {
  const std::vector<std::string> program = {RAW_EXIT_EXE, "strict"};
  const ProcessResult before = plain(program);
  ASSERT_TRUE(before.exited && before.exit_status == 0) << describe(before);
  const ProcessResult result = run({}, program, std::chrono::seconds(10));
  expect_same_ending(result, before);
  EXPECT_EQ(result.out, before.out);
  EXPECT_LT(result.seconds, before.seconds + 2.0) << "the process lingered after its last thread";
  const RawProfile raw = whole_profile();
  EXPECT_EQ(raw.count("runtime"), 1u) << raw.text;
}

// ======================================================================================
// exit() from a signal handler while the runtime maps a library (item 10)
// ======================================================================================

// SIGALRM's handler calls exit(7); the signal comes while dlopen returns,
// which under the profiler is while the runtime maps the new library's lines
// and holds the line map's lock. The exit must not wait for that lock.
TEST_F(LifecycleTest, ExitFromASignalHandlerDuringDlopen) {
  const std::vector<std::string> program = {EXIT_IN_HANDLER_EXE};
  const ProcessResult before = plain(program);
  ASSERT_TRUE(before.exited && before.exit_status == 7) << describe(before);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string profile = profile_path("round" + std::to_string(round) + ".coz");
    const ProcessResult result = run({"-b", "MAIN", "-b", "*libexit_plugin.so"}, program, std::chrono::seconds(10),
                                     profile);
    expect_same_ending(result, before);
    EXPECT_EQ(result.out, before.out);
    const RawProfile raw = whole_profile(profile);
    EXPECT_EQ(raw.count("runtime"), 1u) << raw.text;
  }
}

// ======================================================================================
// An exit while the profiler thread writes (item 11)
// ======================================================================================

// Experiments of a few ms each, and a program that returns from main while
// its threads sample on: the exit's last records and the profiler thread's
// records of the experiment that just ended race. Every count must be
// written once: the samples and stack records sum to no more than the
// in-scope samples the process took (the `sampling` record, written last),
// and nothing follows the `runtime` record. (The race is narrow: this run
// rarely lost it before the fix; conventional_test and profile_writer_test
// hammer the two halves of it.)
TEST_F(LifecycleTest, AnExitWhileExperimentsEndWritesEachCountOnce) {
  setenv("COZ_EXPERIMENT_MIN_NS", "2000000", 1);
  setenv("COZ_EXPERIMENT_MAX_NS", "4000000", 1);
  setenv("COZ_COOLOFF_NS", "500000", 1);
  struct Restore {
    ~Restore() {
      unsetenv("COZ_EXPERIMENT_MIN_NS");
      unsetenv("COZ_COOLOFF_NS");
      setenv("COZ_EXPERIMENT_MAX_NS", kShortExperimentMaxNs, 1);
    }
  } restore;
  const std::vector<std::string> program = {MANY_PATHS_EXE, "--threads", "2", "--depth", "11", "--ms", "250"};
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string profile = profile_path("round" + std::to_string(round) + ".coz");
    const ProcessResult result = run({"--period", "200us"}, program, std::chrono::seconds(10), profile);
    EXPECT_TRUE(result.exited && result.exit_status == 0) << describe(result);
    const RawProfile raw = whole_profile(profile);
    ASSERT_FALSE(raw.records.empty());
    EXPECT_EQ(raw.records.back().type, "runtime") << "records after the end of the run:\n" << raw.text.substr(0, 2000);
    ASSERT_EQ(raw.count("sampling"), 1u);
    const uint64_t in_scope = field(*raw.of("sampling").front(), "in-scope");
    const uint64_t samples = sum_of(raw, "samples", "count");
    const uint64_t stacks = sum_of(raw, "stack", "count");
    EXPECT_GT(samples, 0u);
    EXPECT_LE(samples, in_scope) << "samples written twice";
    EXPECT_LE(stacks, in_scope) << "stacks written twice";
  }
}

// ======================================================================================
// The preload boundary (items 16, 17)
// ======================================================================================

// Being preloaded, every symbol libcoz.so exports wins the process's symbol
// lookup: its copies of std:: templates (std::string's, std::vector's) would
// serve the program and its libraries. Only the Coz ABI (C) and the
// interposed C functions may be exported.
TEST_F(LifecycleTest, RuntimeExportsOnlyTheCozAbiAndTheWrappers) {
  const std::string listing = scratch_.file("symbols.txt");
  const std::string command = std::string(NM) + " -D --defined-only " + COZ_RUNTIME_SO + " > " + listing;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<std::string> cxx;
  std::vector<std::string> names;
  FILE* in = std::fopen(listing.c_str(), "r");
  ASSERT_NE(in, nullptr);
  char line[4096];
  while (std::fgets(line, sizeof line, in)) {
    std::string text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    const size_t space = text.rfind(' ');
    const std::string name = space == std::string::npos ? text : text.substr(space + 1);
    names.push_back(name);
    if (name.rfind("_Z", 0) == 0 || name.find("std::") != std::string::npos) cxx.push_back(name);
  }
  std::fclose(in);
  std::string shown;
  for (size_t i = 0; i < cxx.size() && i < 20; ++i) shown += "  " + cxx[i] + "\n";
  EXPECT_TRUE(cxx.empty()) << cxx.size() << " C++ symbols exported, e.g.:\n" << shown;
  for (const char* needed : {"_coz_get_counter", "_coz_pre_block", "_coz_post_block", "_coz_catch_up",
                             "pthread_create", "pthread_mutex_lock", "read", "write", "sigaction", "dlopen"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), needed), names.end()) << needed << " is not exported";
  }
}

// The program's allocator takes a pthread mutex, so the runtime's own
// allocations call the interposed pthread_mutex_lock from inside the
// runtime, and the runtime's bookkeeping after a contended lock of that
// very mutex must not allocate (the mutex is held: it would wait for itself).
TEST_F(LifecycleTest, AllocatorThatTakesAPthreadMutex) {
  const std::vector<std::string> program = {MUTEX_MALLOC_EXE, "--ms", "400"};
  const ProcessResult before = plain(program);
  ASSERT_TRUE(before.exited && before.exit_status == 0) << describe(before);
  const ProcessResult result = run({}, program, std::chrono::seconds(15));
  expect_same_ending(result, before);
  EXPECT_GT(number_after(result.out, "allocations"), 0) << result.out;
  const RawProfile raw = whole_profile();
  EXPECT_EQ(raw.count("runtime"), 1u) << raw.text.substr(0, 2000);
  bool mutex_waits = false;
  for (const analysis::RecordLine* r : raw.of("blocked")) {
    const std::string* kind = r->find("kind");
    mutex_waits = mutex_waits || (kind && *kind == "mutex");
  }
  EXPECT_TRUE(mutex_waits) << "no blocked record of kind mutex: the waits for the allocator's mutex went unrecorded";
}

// ======================================================================================
// Limits said, not silent (item 18)
// ======================================================================================

// Threads descending down 2^15 call paths sampled every 50 us give more
// distinct call stacks than the runtime's stack table holds (it is fixed:
// the sampling path cannot allocate). The samples whose stacks found no
// room must be counted in the profile (`sampling` record, stacks-dropped=),
// so that the stack records plus them account for the in-scope samples, and
// `coz report` must say the stack view is partial.
TEST_F(LifecycleTest, StacksBeyondTheTableAreCountedAndReported) {
  // CPU time, not wall time: the test once failed with no stacks-dropped at
  // all in a full run, while other tenants loaded this machine; 600 ms of wall
  // time with little CPU gives too few samples to fill the table.
  const std::vector<std::string> program = {MANY_PATHS_EXE, "--threads", "2", "--depth", "15", "--leaf", "3000",
                                            "--cpu-ms", "1200"};
  const ProcessResult result = run({"--period", "50us", "--fixed-speedup", "0"}, program, std::chrono::seconds(20));
  ASSERT_TRUE(result.exited && result.exit_status == 0) << describe(result);
  const RawProfile raw = whole_profile();
  ASSERT_EQ(raw.count("sampling"), 1u) << raw.text.substr(0, 2000);
  const analysis::RecordLine& sampling = *raw.of("sampling").front();
  const uint64_t in_scope = field(sampling, "in-scope");
  const uint64_t stacks = sum_of(raw, "stack", "count");
  ASSERT_NE(sampling.find("stacks-dropped"), nullptr)
      << "in-scope " << in_scope << ", in stack records " << stacks << ": the rest is not accounted for";
  const uint64_t dropped = field(sampling, "stacks-dropped");
  EXPECT_GT(dropped, 0u);
  EXPECT_LE(stacks + dropped, in_scope);
  EXPECT_GE(stacks + dropped + in_scope / 100, in_scope) << "samples neither in a stack record nor dropped";
  const ProcessResult report = run_process({COZ_EXE, "report", "--no-color", profile_path()}, scratch_);
  EXPECT_TRUE(report.exited && report.exit_status == 0) << describe(report);
  std::string text = report.out;
  std::replace(text.begin(), text.end(), '\n', ' ');  // the report wraps its lines
  EXPECT_NE(text.find("in-scope samples have no call stack"), std::string::npos) << report.out;
}

}  // namespace
}  // namespace coz_itest
