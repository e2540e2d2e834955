// Harness for the integration tests: runs `coz run` on a target program,
// reads the profile it wrote, and looks things up in it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis.h"
#include "profile.h"
#include "record_line.h"

namespace coz_itest {

namespace analysis = coz::analysis;

/// How a child process ended, with what it printed.
struct ProcessResult {
  bool exited = false;     // exited normally (else killed by a signal or by the timeout)
  int exit_status = -1;    // valid when `exited`
  int term_signal = 0;     // the signal that ended it, when not `exited`
  bool timed_out = false;  // the harness killed it
  std::string out;         // everything it wrote to stdout
  std::string err;         // everything it wrote to stderr
  double seconds = 0.0;    // wall time
};

/// "exit status 3" / "killed by signal 9 (timed out)", then stderr: for failure messages.
std::string describe(const ProcessResult& result);

/// A scratch directory under $TMPDIR (or /tmp), removed on destruction unless keep().
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  void keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

/// The fixture of every integration test: a scratch directory for the
/// run's files, kept (and named on stderr) when the test fails.
class ScratchTest : public ::testing::Test {
 protected:
  void TearDown() override;
  std::string profile_path(const std::string& name = "profile.coz") const { return scratch_.file(name); }
  TempDir scratch_;
};

/// Experiments capped at 150 ms (COZ_EXPERIMENT_MAX_NS, for every run of
/// the test suite), so that programs of a second or two still finish several.
inline constexpr const char* kShortExperimentMaxNs = "150000000";
class ShortExperimentsTest : public ScratchTest {
 protected:
  static void SetUpTestSuite() { setenv("COZ_EXPERIMENT_MAX_NS", kShortExperimentMaxNs, 1); }
};

/// Runs argv[0] (a path) with posix_spawn in its own process group, stdin from
/// /dev/null, stdout and stderr into files under `scratch`. Past `timeout` the
/// whole group is killed with SIGKILL.
ProcessResult run_process(const std::vector<std::string>& argv, const TempDir& scratch,
                          std::chrono::seconds timeout = std::chrono::seconds(150));

/// Runs `coz run -o PROFILE OPTIONS... --- PROGRAM ARGS...` (coz appends to PROFILE).
ProcessResult coz_run(const std::string& profile_path, const std::vector<std::string>& options,
                      const std::vector<std::string>& program_and_args, const TempDir& scratch);

/// Reads a profile; returns nullopt if the file cannot be opened.
std::optional<analysis::Profile> read_profile(const std::string& path);

// ---- reading profiles line by line ----------------------------------------------

/// A profile file as text, each line split into a record.
struct RawProfile {
  bool exists = false;
  std::string text;
  std::vector<analysis::RecordLine> records;
  std::vector<std::string> problems;  // lines that are not whole, known records

  std::vector<const analysis::RecordLine*> of(const std::string& type) const;
  size_t count(const std::string& type) const { return of(type).size(); }
  /// pids of the `process` records, in file order.
  std::vector<long> process_pids() const;
  /// Experiments per `pid=` value; experiments without the key count under -1.
  std::map<long, size_t> experiments_by_pid() const;
};

/// Reads `path` line by line; every line that is not a whole record of a
/// type the format defines (docs/profile-format.md) is listed in `problems`.
RawProfile read_raw(const std::string& path);

/// Empty if the file exists, ends with a newline, and every line is a whole,
/// known record that the profile reader accepts without a warning.
std::string whole_records_problem(const std::string& path, const RawProfile& raw);

/// The number after "key=" in `text` (first occurrence at a word start), or -1.
long long number_after(const std::string& text, const std::string& key);

/// A whole file as text (empty if it cannot be read).
std::string read_text(const std::string& path);

/// The non-empty lines of `text`.
std::vector<std::string> lines_of(const std::string& text);
/// The lines of `text` that contain `needle`.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle);

/// How many lines of `text` contain `needle`.
size_t count_lines_containing(const std::string& text, const std::string& needle);

/// The 1-based line of `// @line:MARKER` in `source_file`, 0 when absent.
int marker_line(const std::string& source_file, const std::string& marker);

/// A file under test/programs in the source tree.
std::string program_source(const std::string& relative_path);

/// "two_threads.cpp:40" for the line marked `marker` in test/programs/FILE.
std::string marked_line(const std::string& file, const std::string& marker);

/// True when `location` ("/abs/dir/two_threads.cpp:40") is `suffix`
/// ("two_threads.cpp:40") or ends with "/" + suffix. A location's program
/// (" [processes]", under --system) is ignored unless `suffix` names one.
bool location_matches(const std::string& location, const std::string& suffix);

/// The effect of the line `line_suffix` on the point whose name ends with
/// `point_suffix` (path-boundary match as above, or the exact name); nullptr if none.
const analysis::LineEffect* find_effect(const analysis::Analysis& result, const std::string& line_suffix,
                                        const std::string& point_suffix);

/// The pooled estimate at `line_speedup` (0..1) on the effect's curve, if measured.
const analysis::SpeedupEstimate* estimate_at(const analysis::LineEffect& effect, double line_speedup);

/// Whether perf_event lets this process sample kernel time (root, or
/// perf_event_paranoid <= 1); `why_not` says why not.
bool kernel_sampling_allowed(std::string& why_not);

/// Samples attributed to locations matching `line_suffix` ("file.cpp:40").
uint64_t samples_on_line(const analysis::Profile& profile, const std::string& line_suffix);

/// Samples attributed to any line of a file whose path ends with `file_suffix`.
uint64_t samples_in_file(const analysis::Profile& profile, const std::string& file_suffix);

/// Experiments (and their speedups) in the profile: "12 experiments: 6 at 0.00, 6 at 0.50 on file.cpp:40".
std::string describe_experiments(const analysis::Profile& profile);

/// The ranked effects with their curves, for failure messages.
std::string describe(const analysis::Analysis& result, size_t max_effects = 12);

/// `n` work units scaled by $COZ_ITEST_SCALE (default 1; e.g. 2 on a slow machine).
uint64_t scaled(uint64_t n);

/// The outcome of profiling one line at a fixed speedup, with 0% baselines.
struct FixedLineRun {
  std::string error;  // empty on success
  analysis::Profile profile;
  analysis::Analysis result;
  analysis::LineEffect effect;         // the line on the point (copied out of `result`)
  analysis::SpeedupEstimate baseline;  // at 0%
  analysis::SpeedupEstimate sped_up;   // at the fixed speedup
  ProcessResult process;               // the last `coz run` (its stderr: what -v said)
  /// The share of the machine's CPU time that went to other processes than
  /// the profiled run (and this test) while it ran: OutsideLoad. NaN if unknown.
  double outside_share = 0.0;
};

/// The machine's busy CPU time from /proc/stat against the CPU time of this
/// process's waited-for children, over a stretch: what other processes kept
/// the cores busy with meanwhile. A run beside another process's busy loop
/// is another program than the one its truth was measured on: syscall_write's
/// write line at 50% beside one spinning thread, 2 cores, reads +31-32%, and
/// its truth there is +33-36%, not the +47% of an idle machine.
class OutsideLoad {
 public:
  OutsideLoad();
  /// The share of the machine's CPU time (wall time x online CPUs) since
  /// construction that was busy but not this process's or its children's;
  /// NaN where /proc/stat cannot be read.
  double share() const;

 private:
  uint64_t busy_ns_, own_ns_, wall_ns_;
};

/// The share of the machine other processes may keep busy during a profiled
/// run for run_fixed_line to judge it at once (about a fifth of a core on 2:
/// the monitor's analyses, the kernel's threads and this test's own thread
/// stay well under it on an idle machine; a spinning process takes half).
constexpr double max_outside_share = 0.1;

/// The share of the machine's CPU time a hypervisor may take during a
/// profiled run (steal time, in its `sampling` records) for run_fixed_line
/// to judge it at once. Above it, effects drift with the steal, which comes
/// in bursts of seconds and grows as paying threads idle their vCPUs: in a
/// Firecracker VM, steal of 1-8% of the CPUs' time made spinner's line
/// without effect read -2% to -10% at 95%, and pipeline's consumer at 50%
/// read +6% (truth +50%) in a run of the suite that lost 7% in all.
constexpr double max_steal_share = 0.02;
/// How many times run_fixed_line profiles while the steal or the outside
/// load stays above its share.
constexpr int max_profiles_per_run = 3;

/// What one attempt of a test that counts rounds or experiments found.
struct AttemptVerdict {
  bool holds = true;         // its checks pass
  double steal_share = 0.0;  // of its profile (analysis::SamplingTotals::steal_share)
};

/// Calls `attempt(n)` for n = 1, 2, ... again while its checks fail and a
/// hypervisor took more than max_steal_share of the machine during it, up to
/// max_profiles_per_run times in all, and says why on stderr. With little
/// steal a failure stands at once; the caller asserts on what the last
/// attempt left. `what` names the run in that line.
void again_under_steal(const std::string& what, const std::function<AttemptVerdict(int)>& attempt);

/// Runs `coz run --fixed-line LINE --fixed-speedup PCT [extra_options]` on the
/// program. If that run wrote no 0% experiments for the line (a runtime may or
/// may not interleave baselines), runs again with `--fixed-speedup 0` into the
/// same file. Fails (sets `error`) if coz or the program fail, if any
/// experiment selected another line, or if either speedup has fewer than
/// `min_experiments` experiments for `point_suffix`. While a hypervisor took
/// more than max_steal_share of the machine's time during the run, or other
/// processes more than max_outside_share, profiles again, up to
/// max_profiles_per_run times in all, and returns the run they took least
/// from: the assertions judge that one.
FixedLineRun run_fixed_line(const std::vector<std::string>& program_and_args, const std::string& line_suffix,
                            int speedup_percent, const std::string& point_suffix, const TempDir& scratch,
                            const std::vector<std::string>& extra_options = {}, uint64_t min_experiments = 4);

}  // namespace coz_itest
