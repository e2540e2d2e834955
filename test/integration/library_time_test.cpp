// Integration tests: time spent inside libraries and the kernel. Each program
// (test/programs/lib_*.c*, syscall_write.cpp) is pipeline.cpp's structure,
// producer -> bounded queue -> consumer 3x slower, but the consumer's
// bottleneck line spends its time in code that is out of scope and built
// without frame pointers: glibc's memcpy, qsort (with strcmp as comparator)
// and malloc/free, zlib's compress2, libstdc++'s std::_Hash_bytes, and the
// kernel's copy of a pwrite. A sample there must be charged to the first
// in-scope line up the real call stack, which takes unwinding through the
// library's CFI (the kernel's frame-pointer call chains lose the caller).
// A runtime that drops those samples sees only the producer's line (no
// effect) and ranks the wrong line first.
//
// Ground truth (plain runs without the profiler, median of 5; reproduce with
// ONLY='^(lib_|syscall_)' test/programs/measure_ground_truth.sh
// BUILD_DIR/test/programs). Each `_fast_` variant really halves the work of
// one marked line, i.e. it is that line sped up by 50%:
//
//   program / variant                 plain median   real speedup
//   lib_memcpy                          3.717 s
//     lib_memcpy_fast_copy              1.924 s        +48.2%
//     lib_memcpy_fast_produce           3.864 s         -4.0%
//     (after its buffers moved into one aligned block, independent of the
//     heap's history, median of 7: 4.099 s / 2.031 s, +50.5%; fast_produce
//     -12.1% in runs scattered from 4.4 to 5.9 s)
//   lib_qsort                           3.579 s
//     lib_qsort_fast_sort               1.824 s        +49.0%
//     lib_qsort_fast_produce            3.716 s         -3.8%
//   lib_malloc                          4.071 s
//     lib_malloc_fast_churn             2.042 s        +49.8%
//     lib_malloc_fast_produce           4.124 s         -1.3%
//   lib_zlib                            3.994 s
//     lib_zlib_fast_compress            1.958 s        +51.0%
//     lib_zlib_fast_produce             4.134 s         -3.5%
//   lib_stdcxx                          3.453 s
//     lib_stdcxx_fast_hash              1.760 s        +49.0%
//     lib_stdcxx_fast_produce           3.421 s         +0.9%
//   syscall_write                       3.416 s
//     syscall_write_fast_write          1.780 s        +47.9%
//     syscall_write_fast_produce        3.549 s         -3.9%
//
// Measured under SCHED_FIFO (the script does that as root) on the 2-core
// Debian 12 VM while other jobs were compiling: load average 5.2 at the
// start, 5.7 at the end, and the VM showed up to 25% steal time; single runs
// scattered by +-10%, hence 5 runs and "no effect" variants within +-4%.
//
// Default runs last ~3.5-4 s plain (8'000 items); the ranking tests run
// 10'000 items (syscall_write: 30'000, ~4 s), which gave 126-165
// experiments per run (~17 per second of profiled run time: a loaded
// machine, which stretches the run, only adds experiments). Each test runs
// one `coz run` (the fixed-line one up to two): 5-10 s each, 53 s for the
// file with a load average of 15-60; 83 s against the frame-pointer runtime
// below, whose experiments, nearly all on the producer's line, pause the
// consumer, on the critical path. RUN_SERIAL, like the other integration
// tests: they measure time.
//
// Against the runtime of commit 4fdf76f (user call chains from the kernel,
// through frame pointers) every test here fails: the samples in libraries
// are dropped (`coz run -v`: 27-31% of the samples in scope for lib_*; for
// syscall_write the kernel's time is not sampled at all), the bottleneck
// lines get 1-61 samples (lib_malloc: 469, its own arithmetic), the
// producer's line takes 79-99% of the experiments and ranks first (the
// bottleneck lines have < 8 experiments, except lib_malloc's: 57, impact
// -0.08 [-0.16, -0.00], as its pauses are sized by the few samples of its
// own arithmetic), and the fixed-line memcpy test predicts +4% (truth +48%).
#include <filesystem>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"

namespace coz_itest {
namespace {

constexpr const char* kPoint = "item consumed";

class LibraryTimeTest : public ScratchTest {
 protected:
};

// --------------------------------------------------------------------------
// The `sampling` record the runtime writes at exit:
//   sampling	samples=N	in-scope=M	lost=L	...
// (tab-separated key=value; other keys may follow). The analysis reader
// ignores record types it does not know, so it is read from the raw file.
// --------------------------------------------------------------------------
struct SamplingTotals {
  uint64_t records = 0;  // processes that wrote one
  uint64_t samples = 0;
  uint64_t in_scope = 0;
  uint64_t lost = 0;
};

SamplingTotals read_sampling_records(const std::string& path) {
  SamplingTotals totals;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("sampling\t", 0) != 0) continue;
    ++totals.records;
    std::istringstream fields(line.substr(9));
    for (std::string field; std::getline(fields, field, '\t');) {
      const size_t eq = field.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = field.substr(0, eq);
      const uint64_t value = std::strtoull(field.c_str() + eq + 1, nullptr, 10);
      if (key == "samples") totals.samples += value;
      if (key == "in-scope") totals.in_scope += value;
      if (key == "lost") totals.lost += value;
    }
  }
  return totals;
}

// --------------------------------------------------------------------------
// `stack` records: frames outermost first, an in-scope frame is FILE:LINE, an
// out-of-scope one (a function an in-scope line called) FUNCTION [LIBRARY].
// --------------------------------------------------------------------------
bool out_of_scope_frame(const std::string& frame) {
  return frame.size() > 3 && frame.back() == ']' && frame.find(" [") != std::string::npos;
}

std::vector<std::string> split_frames(const std::string& frames) {
  std::vector<std::string> out;
  std::istringstream in(frames);
  for (std::string f; std::getline(in, f, ';');) out.push_back(f);
  return out;
}

// The stacks whose innermost in-scope frame is `line`: how many samples, how
// many of them with that frame's callee in `library` ("libc.so.6"), and the
// callees seen (for failure messages).
struct LineStacks {
  uint64_t samples = 0;
  uint64_t via_library = 0;
  std::map<std::string, uint64_t> callees;  // "FUNCTION [LIBRARY]" or "(none)"
  std::string describe() const {
    std::ostringstream text;
    text << samples << " samples with the line innermost in scope, " << via_library << " calling into the library; callees:";
    for (const auto& [callee, n] : callees) text << "\n  " << callee << ": " << n;
    return text.str();
  }
};

LineStacks stacks_of_line(const analysis::Profile& profile, const std::string& line, const std::string& library) {
  LineStacks result;
  const std::string suffix = " [" + library + "]";
  for (const auto& [frames, count] : profile.stacks) {
    const std::vector<std::string> f = split_frames(frames);
    size_t innermost = f.size();
    while (innermost > 0 && out_of_scope_frame(f[innermost - 1])) --innermost;
    if (innermost == 0 || !location_matches(f[innermost - 1], line)) continue;
    result.samples += count;
    const std::string callee = innermost < f.size() ? f[innermost] : "(none)";
    result.callees[callee] += count;
    if (callee.size() > suffix.size() && callee.compare(callee.size() - suffix.size(), suffix.size(), suffix) == 0) {
      result.via_library += count;
    }
  }
  return result;
}

// --------------------------------------------------------------------------
// One program: its bottleneck line (in a library or the kernel), its
// producer line (no effect), the library its time is in.
// --------------------------------------------------------------------------
struct LibraryCase {
  std::string exe;
  std::string source;      // in test/programs
  std::string bottleneck;  // marker of the consumer's line
  std::string library;     // basename of the library the line's time is in; "" for the kernel
  uint64_t items;          // -n for the default-mode run
  // A program that runs `exe` (no_perf_launcher: perf_event refused, so the
  // runtime samples with CPU-time timers); "" runs it directly.
  std::string launcher = "";
};

// Margins for a default-mode run (random lines and speedups, as a user runs it).
//
// (1) The bottleneck line ranks first for "item consumed" among lines with
// >= 8 experiments, and its impact interval excludes zero. Its true curve is
// min(s, 2/3) (measured at 50%: 46-50%, table above): about 0.45 averaged
// over s, far from 0 with ~40 experiments on it (the pipeline test's
// consumer line, the same structure in in-scope code, does this with room
// to spare). A runtime that drops library samples gives the line (almost) no
// samples, hence no experiments: the producer's line (truth 0) takes nearly
// all of them, and whichever line ranks first, it is not this one.
//
// (2) Samples attributed to in-scope lines >= 95% of all samples. Every
// thread's stack has an in-scope frame (main, the thread's lambda or
// function) under the library call; what is left is start-up before main
// and thread start and exit (a few samples), and walks that fail. The
// consumer runs all the time and the producer a third of it, so dropping
// library samples leaves ~25% in scope (lib_memcpy under the frame-pointer
// runtime: 5396 samples, 3975 outside the scope); failing one walk in ten
// already misses 95%.
//
// (3) Of the samples whose innermost in-scope frame is the bottleneck line,
// >= 80% have, right after it, a frame FUNCTION [LIBRARY] in the expected
// library (only the basename is checked: the functions depend on glibc's
// ifunc choice and on what the runtime names the callee). The rest is the
// line's own instructions (loop control; lib_malloc's random numbers, a few
// percent) and PLT stubs. A runtime that walks the stack but does not record
// the callee, or records the wrong object, gets 0%.
constexpr uint64_t kMinExperiments = 8;
constexpr double kMinInScopeShare = 0.95;
constexpr double kMinViaLibraryShare = 0.80;

void check_library_case(const LibraryCase& c, const TempDir& scratch, const std::string& profile_path,
                        bool check_sampling = true) {
  const std::string line = marked_line(c.source, c.bottleneck);
  const std::string produce = marked_line(c.source, "produce_work");
  std::vector<std::string> run_options, command = {c.exe, "-n", std::to_string(scaled(c.items))};
  if (!c.launcher.empty()) {
    run_options = {"-b", "*/" + c.exe.substr(c.exe.rfind('/') + 1)};  // the program, not the launcher
    command.insert(command.begin(), c.launcher);
  }
  analysis::AnalysisOptions options;
  options.min_experiments = kMinExperiments;
  options.point = kPoint;
  ProcessResult process;
  std::optional<analysis::Profile> profile;
  analysis::Analysis result;
  // A run with much of the machine stolen is made again: its experiments
  // spread too much for an interval valid at every look to exclude 0 after
  // a few seconds (write_work +27% [-0.9, +55] from 49 experiments with 35%
  // stolen, a fresh clone's run, stop 56).
  again_under_steal(c.source, [&](int) {
    std::filesystem::remove(profile_path);  // coz run appends: each attempt is a run of its own
    process = coz_run(profile_path, run_options, command, scratch);
    profile = read_profile(profile_path);
    if (!process.exited || process.exit_status != 0 || !profile) return AttemptVerdict{};  // asserted below
    result = analysis::analyze(*profile, options);
    const analysis::LineEffect* e = find_effect(result, line, kPoint);
    const bool holds = !result.effects.empty() && location_matches(result.effects.front().line, line) && e &&
                       e->impact_low > 0.0;
    return AttemptVerdict{holds, profile->sampling.steal_share()};
  });
  ASSERT_TRUE(process.exited && process.exit_status == 0) << describe(process);
  if (!c.launcher.empty()) {
    ASSERT_NE(process.err.find("CPU-time timers"), std::string::npos) << process.err;
  }
  ASSERT_TRUE(profile) << "no profile written";
  const std::string context = describe_experiments(*profile) + "\n" + describe(result);

  const SamplingTotals sampling = read_sampling_records(profile_path);
  const uint64_t on_line = samples_on_line(*profile, line);
  std::cerr << "[ samples  ] " << c.source << ": " << result.total_samples << " attributed, " << on_line << " on "
            << line << " (" << c.bottleneck << "), " << samples_on_line(*profile, produce) << " on " << produce
            << " (produce_work); sampling record: ";
  if (sampling.records > 0) {
    std::cerr << sampling.samples << " samples, " << sampling.in_scope << " in scope, " << sampling.lost << " lost\n";
  } else {
    std::cerr << "none\n";
  }
  std::cerr << "[ ranked   ] " << (result.effects.empty() ? "(nothing)" : result.effects.front().line) << " first of "
            << result.effects.size() << "; " << profile->experiments.size() << " experiments\n";

  // (1) Ranking.
  ASSERT_FALSE(result.effects.empty()) << context;
  EXPECT_TRUE(location_matches(result.effects.front().line, line))
      << "ranked first: " << result.effects.front().line << ", expected " << line << "\n" << context;
  const analysis::LineEffect* effect = find_effect(result, line, kPoint);
  ASSERT_NE(effect, nullptr) << line << " has < " << kMinExperiments << " experiments\n" << context;
  std::cerr << "[ impact   ] " << c.bottleneck << " " << effect->impact << " [" << effect->impact_low << ", "
            << effect->impact_high << "]\n";
  EXPECT_GT(effect->impact_low, 0.0) << "impact interval of " << line << " includes zero\n" << context;

  if (!check_sampling) return;
  // (2) In-scope share, from the runtime's own count.
  if (sampling.records == 0) {
    ADD_FAILURE() << "no `sampling` record in " << profile_path
                  << ": the runtime should write `sampling\\tsamples=N\\tin-scope=M\\tlost=L` at exit";
  } else {
    ASSERT_GT(sampling.samples, 0u);
    const double share = static_cast<double>(sampling.in_scope) / static_cast<double>(sampling.samples);
    std::cerr << "[ in scope ] " << 100 * share << "% of " << sampling.samples << " samples\n";
    EXPECT_GE(share, kMinInScopeShare) << sampling.in_scope << " of " << sampling.samples
                                       << " samples attributed to in-scope lines\n" << context;
  }
  // (3) The line's stacks end in the library it calls.
  const LineStacks stacks = stacks_of_line(*profile, line, c.library);
  std::cerr << "[ stacks   ] " << line << ": " << stacks.describe() << "\n";
  ASSERT_GT(stacks.samples, 0u) << "no stack record has " << line << " as its innermost in-scope frame";
  EXPECT_GE(static_cast<double>(stacks.via_library) / static_cast<double>(stacks.samples), kMinViaLibraryShare)
      << "expected most of " << line << "'s stacks to end in FUNCTION [" << c.library << "]: " << stacks.describe();
  // (4) No callee is the runtime's own wrapper: the queue's waits call
  // pthread_cond_wait through libcoz.so's interposed one, and a user should
  // read glibc's function there ("pthread_cond_wait [libcoz.so]" before).
  for (const auto& [frames, count] : profile->stacks) {
    EXPECT_EQ(frames.find(" [libcoz.so]"), std::string::npos) << count << " samples: " << frames;
  }
}

// (a) memcpy of a runtime size (128 KiB) in glibc: leaf, no frame of its own.
TEST_F(LibraryTimeTest, MemcpyLineRanksFirst) {
  check_library_case({LIB_MEMCPY_EXE, "lib_memcpy.cpp", "copy_work", "libc.so.6", 10'000}, scratch_, profile_path());
}

// (b) qsort with strcmp as comparator: qsort -> msort_with_tmp (recursive) -> strcmp, all in glibc.
TEST_F(LibraryTimeTest, QsortLineRanksFirst) {
  check_library_case({LIB_QSORT_EXE, "lib_qsort.c", "sort_work", "libc.so.6", 10'000}, scratch_, profile_path());
}

// (c) malloc/free churn: glibc's allocator (_int_malloc, _int_free, ...).
TEST_F(LibraryTimeTest, MallocLineRanksFirst) {
  check_library_case({LIB_MALLOC_EXE, "lib_malloc.c", "churn_work", "libc.so.6", 10'000}, scratch_, profile_path());
}

// (d) zlib's compress2 (Debian's libz.so.1: no debug info, no frame pointers).
TEST_F(LibraryTimeTest, ZlibLineRanksFirst) {
  check_library_case({LIB_ZLIB_EXE, "lib_zlib.c", "compress_work", "libz.so.1", 10'000}, scratch_, profile_path());
}

// (e) std::hash<std::string> -> std::_Hash_bytes in libstdc++.so.6.
TEST_F(LibraryTimeTest, StdcxxLineRanksFirst) {
  check_library_case({LIB_STDCXX_EXE, "lib_stdcxx.cpp", "hash_work", "libstdc++.so.6", 10'000}, scratch_,
                     profile_path());
}

// (f) A system call: the line's time is the kernel copying 1 MiB per pwrite.
// Only the ranking is checked: samples in the kernel need kernel sampling
// (kernel_sampling_allowed).
//
// Twice the items with the ring samplers (COZ_SAMPLE_TRAPS=0, the
// ring_samplers.library_time run): their kernel-time samples come from
// per-CPU rings whose delays are credited when drained, and the line reads
// lower and spreads more. At 30,000 items, 24 runs here: impact +34% (traps
// +43%), the interval's half-width above 0.15 in 4 (traps: 1 of 10), and
// the lower bound at or below 0 in about 1 run of 15 (one of 12 in another
// series, and a fresh clone's suite at stop 60). A build from before
// stop 60's changes, interleaved, spread the same (2 of 24 above 0.15): no
// regression, the method's noise. At 60,000: 14 runs,
// every half-width under 0.13, every lower bound above +0.23.
TEST_F(LibraryTimeTest, SyscallWriteLineRanksFirst) {
  std::string why_not;
  if (!kernel_sampling_allowed(why_not)) GTEST_SKIP() << why_not;
  const char* traps = std::getenv("COZ_SAMPLE_TRAPS");
  const bool ring_samplers = traps != nullptr && std::string_view{traps} == "0";
  check_library_case({SYSCALL_WRITE_EXE, "syscall_write.cpp", "write_work", "", ring_samplers ? 60'000u : 30'000u},
                     scratch_, profile_path(), /*check_sampling=*/false);
}

// The same where perf_event is refused (Debian's default for every user but
// root): a CPU-time clock counts the thread's time in the kernel, and the
// timer's signal arrives as the call returns, where the walk starts from
// the line that made it. Needs no permission. (The docs said for long that
// timers left kernel time unsampled; the line would then get only its own
// loop's samples, and the producer's line rank first.) Nine times the
// items of the perf_event case (~24 s): a timer samples on the 4 ms tick,
// each signal standing for the periods gone by, so a second of run holds a
// quarter of the sampling events, and the experiments' spread varies from
// run to run on this machine (the point's dispersion 12 and 28 in two runs
// here, 103 in a fresh clone's). At 3 s (stop 57's CI: +38% [-18, +93], 59
// experiments) and at 8 s (this stop's fresh clone: +36% [-21, +93], 146
// experiments, standard error 0.10) the interval valid at every look held
// zero; with three times the experiments that error is ~0.058, and the
// interval's half-width at dispersion 103 ~0.23.
TEST_F(LibraryTimeTest, SyscallWriteLineRanksFirstUnderTimers) {
  check_library_case({SYSCALL_WRITE_EXE, "syscall_write.cpp", "write_work", "", 270'000, NO_PERF_LAUNCHER_EXE},
                     scratch_, profile_path(), /*check_sampling=*/false);
}

// --------------------------------------------------------------------------
// (a) at a fixed 50% on the memcpy line, as the pipeline tests do in scope:
// truth +48.2% (lib_memcpy_fast_copy). Margin: > 30% and < 70%. On an idle machine a
// correct profiler lands within a few points (pooled over >= 4 experiments
// of >= 50 ms at 0.45 ms per item). A runtime that drops the samples in
// memcpy never sees the line run, inserts no delay and predicts ~0; one
// whose walk through memcpy fails on a fraction f of the samples inserts
// (1 - f) of the delays and predicts ~50% x (1 - f), so the lower bound
// catches f > 0.4; counting a sample twice (in the library and for the
// caller) predicts ~100%.
// --------------------------------------------------------------------------
TEST_F(LibraryTimeTest, MemcpyLineAtFiftyPercentMatchesTruth) {
  const std::string line = marked_line("lib_memcpy.cpp", "copy_work");
  const FixedLineRun run =
      run_fixed_line({LIB_MEMCPY_EXE, "-n", std::to_string(scaled(8'000))}, line, 50, kPoint, scratch_);
  ASSERT_TRUE(run.error.empty()) << run.error;
  std::cerr << "[ predicted] lib_memcpy copy_work at 50%: " << 100 * run.sped_up.program_speedup
            << "% (real: +48.2%)\n";
  EXPECT_GT(run.sped_up.program_speedup, 0.30) << describe(run.result);
  EXPECT_LT(run.sped_up.program_speedup, 0.70) << describe(run.result);
  EXPECT_GT(samples_on_line(run.profile, line), 0u) << "no samples on " << line;
}

// --------------------------------------------------------------------------
// The system call line at a fixed 50%: truth +47% (syscall_write_fast_write,
// 3.04 s against 1.60 s here). Margin: > 38% and < 60%. Traps read +48%, the
// per-CPU rings (COZ_SAMPLE_TRAPS=0, the ring_samplers run) +43% to +47%.
// What it catches, besides kernel time going unsampled (~0): delays
// credited in lumps. The per-CPU rings' samples credit their delay when the
// profiler thread drains them; drained every 60 ms, the producer paid ~30
// ms at once while the consumer emptied a queue of 2 ms and starved: +30%
// to +44%, in 2 runs of 4 below the margin.
// --------------------------------------------------------------------------
TEST_F(LibraryTimeTest, SyscallWriteLineAtFiftyPercentMatchesTruth) {
  std::string why_not;
  if (!kernel_sampling_allowed(why_not)) GTEST_SKIP() << why_not;
  const std::string line = marked_line("syscall_write.cpp", "write_work");
  const FixedLineRun run =
      run_fixed_line({SYSCALL_WRITE_EXE, "-n", std::to_string(scaled(30'000))}, line, 50, kPoint, scratch_);
  ASSERT_TRUE(run.error.empty()) << run.error;
  std::cerr << "[ predicted] syscall_write write_work at 50%: " << 100 * run.sped_up.program_speedup
            << "% (real: +47%)\n";
  EXPECT_GT(run.sped_up.program_speedup, 0.38) << describe(run.result);
  EXPECT_LT(run.sped_up.program_speedup, 0.60) << describe(run.result);
}

}  // namespace
}  // namespace coz_itest
