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
#include <sys/statvfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness.h"

namespace coz_itest {
namespace {

namespace fs = std::filesystem;

class OwnershipTest : public ShortExperimentsTest {
 protected:
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
};

/// The same exit status and the same stdout as the plain run.
void expect_same_behaviour(const ProcessResult& plain, const ProcessResult& profiled, const std::string& what) {
  ASSERT_TRUE(plain.exited && plain.exit_status == 0) << what << " (plain): " << describe(plain) << plain.out;
  EXPECT_TRUE(profiled.exited) << what << ": " << describe(profiled);
  EXPECT_EQ(profiled.exit_status, plain.exit_status) << what << ": " << describe(profiled) << profiled.out;
  EXPECT_EQ(profiled.out, plain.out) << what << ": the program's output differs under coz run";
  // Its own stderr too (the runtime's lines start with "coz").
  std::string program_err;
  for (const std::string& line : lines_of(profiled.err)) {
    if (line.rfind("coz", 0) != 0) program_err += line + "\n";
  }
  EXPECT_EQ(program_err, plain.err) << what << ": the program's stderr differs under coz run";
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
  for (const std::string how : {"range", "syscall", "closefrom", "procfd"}) {
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

// While the program runs, the runtime opens nothing below the program's
// descriptors, not even for a moment: main opens and closes a file over and
// over for 600 ms while two threads work (samples, experiments, the
// profiler thread's periodic checks); every open must get the lowest free
// number, as without the profiler. The profiler thread used to open
// /proc/self/stat every 50 ms, and an open of the program's that fell in
// that moment got the next number (the test above failed once that way;
// this one, against that runtime, found 11 to 25 renumbered opens in each
// of 5 runs).
TEST_F(OwnershipTest, TheProgramsOpensKeepTheirNumbersWhileTheRuntimeWorks) {
  const std::vector<std::string> program = {FD_REUSE_EXE, directory("plain-reopen"), "--threads", "2", "--files", "1",
                                            "--close", "range", "--ms", "1000", "--reopen", "1"};
  const ProcessResult plain = run_plain(program);
  EXPECT_NE(plain.out.find("renumbered=0\n"), std::string::npos) << plain.out;
  std::vector<std::string> profiled_program = program;
  profiled_program[1] = directory("coz-reopen");
  const ProcessResult profiled = run_coz({}, profiled_program);
  expect_same_behaviour(plain, profiled, "fd_reuse --reopen 1");
  const RawProfile raw = whole_profile();
  EXPECT_GE(raw.count("samples"), 1u) << "the profile lost its samples\n" << raw.text;
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

/// `with_ulimit(args)`, run without CAP_SYS_RESOURCE (which root has, and
/// which lets the runtime raise the hard limit for a moment): there is then
/// no number above a hard limit, as for a user, or for root in a container.
std::vector<std::string> with_ulimit_as_user(const std::string& args) {
  std::vector<std::string> argv = with_ulimit(args);
  if (may_raise_hard_limit()) {
    argv.insert(argv.begin(), {"setpriv", "--inh-caps=-sys_resource", "--bounding-set=-sys_resource"});
  }
  return argv;
}

// Under `ulimit -Sn 16` a program that opens 12 files gets 12 (3 are stdio),
// as without the profiler; it, a forked child and an exec'ed child see the
// limit the user set. Likewise with a larger soft limit below the hard one
// (nothing raises it behind the program's back), and under `ulimit -n 16`
// (the hard limit too), whether the runtime may raise the hard limit for a
// moment (CAP_SYS_RESOURCE) or not: without, it keeps its files in a
// descriptor table of its own (it got 8 of the 12 before).
TEST_F(OwnershipTest, TheProgramKeepsItsWholeDescriptorBudgetAndItsLimit) {
  std::vector<std::pair<std::string, std::vector<std::string>>> limits = {
      {"-Sn 16", with_ulimit("-Sn 16")},
      {"-Sn 1024", with_ulimit("-Sn 1024")},
      {"-n 16, no CAP_SYS_RESOURCE", with_ulimit_as_user("-n 16")}};
  if (may_raise_hard_limit()) limits.emplace_back("-n 16", with_ulimit("-n 16"));
  for (const auto& [limit, launcher] : limits) {
    SCOPED_TRACE("ulimit " + limit);
    const ProcessResult plain = run_plain({FD_BUDGET_EXE, "--files", "12"}, launcher);
    ASSERT_NE(plain.out.find("opened=12 of 12\n"), std::string::npos) << plain.out << describe(plain);
    fs::remove(profile_path());
    const ProcessResult profiled = run_coz({}, {FD_BUDGET_EXE, "--files", "12"}, launcher);
    expect_same_behaviour(plain, profiled, "fd_budget under ulimit " + limit);
    // The program and its exec'ed copy: each process's records once, from start-up to its last.
    const RawProfile raw = whole_profile();
    const std::vector<long> pids = raw.process_pids();
    EXPECT_EQ(pids.size(), 2u) << raw.text;
    EXPECT_EQ(std::set<long>(pids.begin(), pids.end()).size(), pids.size()) << "a process's records twice\n" << raw.text;
    EXPECT_EQ(raw.count("runtime"), pids.size()) << "each process's last record, once\n" << raw.text;
  }
}

// coz run's monitor (it steers the experiments and prints the status line)
// shares a control file with the run's runtimes, in $TMPDIR, and removed it
// as it noticed the end. Killed with the run's process group first (as this
// harness does after every run; `kill -9 -PGID`, a CI job's end), it never
// did: the test above left two files in /tmp per run, this one one of two. The run's first
// process removes it as it marks the run ended.
TEST_F(OwnershipTest, ARunKilledWithItsGroupAtTheEndLeavesNoControlFile) {
  TempDir tmp;
  for (const std::string limit : {"-Sn 16", "-Sn 1024"}) {
    SCOPED_TRACE("ulimit " + limit);
    std::vector<std::string> launcher = with_ulimit(limit);
    launcher.insert(launcher.end(), {"/usr/bin/env", "TMPDIR=" + tmp.path()});
    const ProcessResult profiled = run_coz({}, {FD_BUDGET_EXE, "--files", "12"}, launcher);
    EXPECT_TRUE(profiled.exited && profiled.exit_status == 0) << describe(profiled);
  }
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    EXPECT_NE(entry.path().filename().string().rfind("coz-control-", 0), 0u) << "left behind: " << entry.path();
  }
}

// The same hard limit on a program that uses every number it has: four
// threads working (each would have had a sampler's descriptor), main closing
// everything from 3 up and opening 12 files, then reading each back (the
// 13th number). Its files, flags and output are as without the profiler, and
// the profile has what a profile has: samples, experiments, every process's
// last records, also from two forked children that work and exit.
TEST_F(OwnershipTest, UnderAHardLimitTheRuntimeTakesNoNumberFromTheProgram) {
  const std::vector<std::string> launcher = with_ulimit_as_user("-n 16");
  const std::vector<std::string> program = {FD_REUSE_EXE, directory("plain"), "--threads", "4", "--files", "12",
                                            "--close", "range", "--ms", "800"};
  const ProcessResult plain = run_plain(program, launcher);
  std::vector<std::string> profiled_program = program;
  profiled_program[1] = directory("coz");
  const ProcessResult profiled = run_coz({}, profiled_program, launcher);
  expect_same_behaviour(plain, profiled, "fd_reuse --threads 4 --files 12 under ulimit -n 16");
  EXPECT_NE(profiled.err.find("descriptor table of its own"), std::string::npos) << profiled.err;
  RawProfile raw = whole_profile();
  EXPECT_GE(raw.count("experiment"), 2u) << raw.text;
  EXPECT_GE(raw.count("samples"), 1u) << raw.text;
  EXPECT_EQ(raw.count("runtime"), 1u) << raw.text;

  fs::remove(profile_path());
  const ProcessResult forked = run_coz({}, {FORKER_EXE, "--children", "2", "--ms", "600"}, launcher);
  ASSERT_TRUE(forked.exited && forked.exit_status == 0) << describe(forked) << forked.err;
  raw = whole_profile();
  EXPECT_EQ(raw.count("startup"), 3u) << "one per process, each once\n" << raw.text;
  EXPECT_EQ(raw.count("runtime"), 3u) << "each process's last records\n" << raw.text;
  const std::map<long, size_t> by_pid = raw.experiments_by_pid();
  EXPECT_EQ(by_pid.size(), 3u) << "experiments from each process\n" << raw.text;
}

// ======================================================================================
// Files: the profile is a regular file of the user's, opened without
// following links and never blocking; records stay whole when the disk
// fills; coz plot's temporary file cannot be planted.
// ======================================================================================

/// The program run with the runtime preloaded directly (no `coz run`, so
/// none of its checks), the profile going to `output`.
std::vector<std::string> preloaded(const std::string& output) {
  return {"/usr/bin/env", std::string("LD_PRELOAD=") + COZ_RUNTIME, "COZ_OUTPUT=" + output,
          std::string("COZ_PROGRAM=") + OWNER_WORK_EXE};
}

// `-o` naming a FIFO used to block the program before main (the runtime's
// open waited for a reader); /dev/full lost every record silently. `coz run`
// refuses both with one line; the runtime itself, reached without `coz run`,
// neither blocks nor writes there, says so in one line, and the program
// runs as usual.
TEST_F(OwnershipTest, AnOutputThatIsNotARegularFileIsRefused) {
  const std::string fifo = scratch_.file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  for (const std::string& output : {fifo, std::string("/dev/full")}) {
    SCOPED_TRACE("-o " + output);
    std::vector<std::string> argv = {COZ_EXE, "run", "-o", output, "---", OWNER_WORK_EXE, "--ms", "50"};
    const ProcessResult refused = run_process(argv, scratch_, std::chrono::seconds(10));
    EXPECT_TRUE(refused.exited && refused.exit_status == 125) << describe(refused);
    EXPECT_EQ(lines_of(refused.err).size(), 1u) << refused.err;
    EXPECT_NE(refused.err.find("not a regular file"), std::string::npos) << refused.err;
    EXPECT_EQ(refused.out, "") << "the program must not run";

    std::vector<std::string> direct = preloaded(output);
    for (const std::string& a : {std::string(OWNER_WORK_EXE), std::string("--ms"), std::string("50")}) direct.push_back(a);
    const ProcessResult ran = run_process(direct, scratch_, std::chrono::seconds(10));
    EXPECT_TRUE(ran.exited && ran.exit_status == 0) << describe(ran);
    EXPECT_EQ(ran.out, "owner_work done\n");
    EXPECT_EQ(lines_with(ran.err, "not a regular file").size(), 1u) << ran.err;
  }
}

// A full disk cut a record in the middle, and when space returned the next
// record was glued to its first half, with nothing said. Here the profile
// sits on a tmpfs of one page, already holding 4,056 bytes of whole
// records: the runtime's first write is cut after 40 bytes, the ones after
// it fail, and the file system grows 300 ms later. The runtime must say so
// once on stderr, the cut record must end with `cut=write-failed` (the
// reader skips it, with a warning) and every other line be a whole record.
// Needs a mount namespace (root); skipped otherwise.
TEST_F(OwnershipTest, AFullDiskLeavesWholeRecordsAndSaysSo) {
  std::string filler;
  for (int i = 0; filler.size() < 4056 - 40; ++i) filler += "runtime\ttime=0\n";  // 15 bytes each
  filler += "runtime\ttime=" + std::string(4056 - filler.size() - 14, '0') + "\n";
  ASSERT_EQ(filler.size(), 4056u);
  std::ofstream(scratch_.file("filler.coz"), std::ios::binary) << filler;
  const std::string mount_point = directory("small-disk");
  const std::string script =
      "mount -t tmpfs -o size=4k tmpfs \"$1\" 2>/dev/null || exit 99\n"
      "cp \"$2\" \"$1/profile.coz\" || exit 98\n"
      "(sleep 0.3; mount -o remount,size=1m \"$1\") &\n"
      "\"$3\" run -o \"$1/profile.coz\" --- \"$4\" --ms 1000\n"
      "status=$?\n"
      "wait\n"
      "cp \"$1/profile.coz\" \"$5\"\n"
      "exit $status\n";
  const ProcessResult result =
      run_process({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script, "sh", mount_point, scratch_.file("filler.coz"),
                   COZ_EXE, OWNER_WORK_EXE, profile_path()},
                  scratch_, std::chrono::seconds(30));
  if (result.exited && (result.exit_status == 99 || (result.exit_status == 1 && result.out.empty() &&
                                                      result.err.find("unshare") != std::string::npos))) {
    GTEST_SKIP() << "no mount namespace with a small tmpfs here: " << result.err;
  }
  ASSERT_TRUE(result.exited && result.exit_status == 0) << describe(result);
  EXPECT_EQ(result.out, "owner_work done\n");
  EXPECT_EQ(lines_with(result.err, "cannot write the profile").size(), 1u)
      << "the runtime must say once that records were lost\n" << result.err;

  const std::string text = read_text(profile_path());
  ASSERT_EQ(text.compare(0, filler.size(), filler), 0) << "the records already there must stay";
  const std::vector<std::string> cut = lines_with(text, "cut=write-failed");
  ASSERT_EQ(cut.size(), 1u) << "one record was cut, and its line ended\n" << text;
  const RawProfile raw = read_raw(profile_path());
  EXPECT_TRUE(raw.problems.empty()) << "no line glues two records:\n" << raw.problems.front();
  EXPECT_GE(raw.count("experiment"), 1u) << "the records written once the disk had room\n" << text;
  const std::optional<analysis::Profile> profile = read_profile(profile_path());
  ASSERT_TRUE(profile);
  ASSERT_EQ(profile->warnings.size(), 1u) << "the reader skips the cut record and nothing else";
  EXPECT_NE(profile->warnings[0].find("cut short by a failed write"), std::string::npos) << profile->warnings[0];

  const ProcessResult report = run_process({COZ_EXE, "report", profile_path()}, scratch_, std::chrono::seconds(30));
  EXPECT_TRUE(report.exited && report.exit_status == 0) << describe(report);
  EXPECT_NE(report.err.find("cut short by a failed write"), std::string::npos) << "coz report says so\n" << report.err;
}

// A symbolic link planted where the profile goes (a shared directory) made
// the program, maybe root's, append to any file. Neither `coz run` nor the
// runtime follows it; the file it points to stays as it was.
TEST_F(OwnershipTest, APlantedLinkAtTheProfileIsNotFollowed) {
  const std::string victim = scratch_.file("victim");
  std::ofstream(victim) << "precious\n";
  const std::string link = scratch_.file("planted.coz");
  ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0);

  const ProcessResult refused =
      run_process({COZ_EXE, "run", "-o", link, "---", OWNER_WORK_EXE, "--ms", "50"}, scratch_, std::chrono::seconds(10));
  EXPECT_TRUE(refused.exited && refused.exit_status == 125) << describe(refused);
  EXPECT_EQ(lines_of(refused.err).size(), 1u) << refused.err;
  EXPECT_NE(refused.err.find("symbolic link"), std::string::npos) << refused.err;

  std::vector<std::string> direct = preloaded(link);
  for (const std::string& a : {std::string(OWNER_WORK_EXE), std::string("--ms"), std::string("200")}) direct.push_back(a);
  const ProcessResult ran = run_process(direct, scratch_, std::chrono::seconds(10));
  EXPECT_TRUE(ran.exited && ran.exit_status == 0) << describe(ran);
  EXPECT_EQ(ran.out, "owner_work done\n");
  EXPECT_EQ(lines_with(ran.err, "symbolic link").size(), 1u) << ran.err;
  EXPECT_EQ(read_text(victim), "precious\n") << "the runtime wrote through the planted link";
}

// `coz plot` wrote `<out>.tmp` with O_TRUNC: a link planted at that name
// truncated and overwrote any file. The temporary file is a new one now.
TEST_F(OwnershipTest, PlotNeverWritesThroughAPlantedLink) {
  const std::string viewer = fs::path(COZ_EXE).parent_path() / "coz-viewer.html";
  if (!fs::exists(viewer)) GTEST_SKIP() << "the viewer page is not built (" << viewer << ")";
  const std::string profile = scratch_.file("small.coz");
  std::ofstream(profile) << "experiment\tselected=a.c:1\tspeedup=0.00\tduration=50000000\tselected-samples=3\n"
                            "throughput-point\tname=p\tdelta=100\n"
                            "samples\tlocation=a.c:1\tcount=3\n";
  const std::string victim = scratch_.file("victim");
  std::ofstream(victim) << "precious\n";
  const std::string out = scratch_.file("report.html");
  ASSERT_EQ(symlink(victim.c_str(), (out + ".tmp").c_str()), 0);

  const ProcessResult plot = run_process({COZ_EXE, "plot", profile, "-o", out}, scratch_, std::chrono::seconds(30));
  EXPECT_TRUE(plot.exited && plot.exit_status == 0) << describe(plot);
  EXPECT_EQ(read_text(victim), "precious\n") << "coz plot wrote through the planted link";
  struct stat st;
  ASSERT_EQ(lstat(out.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << out << " must be the report itself, not a link";
  EXPECT_NE(read_text(out).find("<html"), std::string::npos);
}

// ======================================================================================
// stderr and programs the runtime cannot reach
// ======================================================================================

// `coz run -v ... 2>&1 | true`: the reader of stderr is gone when the
// runtime writes its summary, and its write raised SIGPIPE in the program
// (exit 141). The program writes nothing itself, so plain it exits 0.
TEST_F(OwnershipTest, TheRuntimesLogNeverRaisesSigpipe) {
  // The program's status goes to fd 3, the shell's own stdout; stdout and
  // stderr go into a pipe to `true`, which is gone by the time it ends.
  const std::vector<std::string> shell = {"/bin/sh", "-c",
                                          "exec 3>&1; { \"$@\"; echo \"status=$?\" >&3; } 2>&1 | true", "sh"};
  const ProcessResult plain = run_plain({OWNER_WORK_EXE, "--quiet", "--ms", "300"}, shell);
  ASSERT_EQ(plain.out, "status=0\n") << describe(plain);
  const ProcessResult profiled = run_coz({"-v"}, {OWNER_WORK_EXE, "--quiet", "--ms", "300"}, shell);
  EXPECT_EQ(profiled.out, "status=0\n") << "the program's status under coz run -v (141: SIGPIPE)\n"
                                         << describe(profiled);
}

// A static binary, and a set-user-ID one (the loader ignores LD_PRELOAD in
// its secure mode), ran with no profile and no word. `coz run` says so in
// one line; the program still runs and keeps its output and exit status,
// and no temporary file of the run is left (the messages' side file, made
// by coz run until stop 60, stayed behind each time: the runtime that
// removes it never ran).
TEST_F(OwnershipTest, AProgramTheRuntimeCannotReachRunsWithAWarning) {
  std::vector<std::pair<std::string, std::string>> programs = {{OWNER_WORK_STATIC_EXE, "statically linked"}};
  const std::string setuid_copy = scratch_.file("owner_work_setuid");
  struct statvfs scratch_fs;
  const bool nosuid = statvfs(scratch_.path().c_str(), &scratch_fs) == 0 && (scratch_fs.f_flag & ST_NOSUID);
  if (geteuid() == 0 && !nosuid) {
    fs::copy_file(OWNER_WORK_EXE, setuid_copy);
    ASSERT_EQ(chown(setuid_copy.c_str(), 65534, 65534), 0);
    ASSERT_EQ(chmod(setuid_copy.c_str(), 04755), 0);
    programs.emplace_back(setuid_copy, "set-user-ID");
  } else {
    std::cerr << "[ note     ] the set-user-ID case needs root and a file system without nosuid\n";
  }
  for (const auto& [program, why] : programs) {
    SCOPED_TRACE(program);
    const ProcessResult plain = run_plain({program, "--ms", "100", "--status", "3"});
    ASSERT_TRUE(plain.exited && plain.exit_status == 3) << describe(plain);
    fs::remove(profile_path());
    TempDir tmp;
    const ProcessResult profiled =
        run_coz({}, {program, "--ms", "100", "--status", "3"}, {"/usr/bin/env", "TMPDIR=" + tmp.path()});
    EXPECT_TRUE(profiled.exited && profiled.exit_status == 3) << describe(profiled);
    for (const auto& entry : fs::directory_iterator(tmp.path())) {
      // (The monitor's control file goes when the monitor notices the end, which may come after coz run's exit.)
      EXPECT_NE(entry.path().filename().string().rfind("coz-messages-", 0), 0u) << "left behind: " << entry.path();
    }
    EXPECT_EQ(profiled.out, plain.out);
    const std::vector<std::string> warnings = lines_with(profiled.err, "coz run: warning:");
    ASSERT_EQ(warnings.size(), 1u) << profiled.err;
    EXPECT_NE(warnings[0].find(why), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("nothing will be profiled"), std::string::npos) << warnings[0];
  }
}

}  // namespace
}  // namespace coz_itest
