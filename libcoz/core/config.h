// Everything the runtime reads from its environment, in one place.
//
// `coz run` sets these variables; they are the runtime's only configuration
// (documented in docs/environment.md). Tunables without a variable live here
// too, each with its unit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coz {

struct Config {
  // --- set by `coz run` ---
  std::string output_path = "profile.coz";  // COZ_OUTPUT
  /// COZ_PROFILE_FORMAT: how the records are written (docs/profile-format.md).
  /// "coz" (default): tab-separated `type<TAB>key=value`; "coz-jsonl": one
  /// JSON object per line, as Coz 0.2.4 and later write by default.
  enum class ProfileFormat { Coz, CozJsonl };
  ProfileFormat profile_format = ProfileFormat::Coz;
  std::string program;                      // COZ_PROGRAM: the program `coz run` launched (real path); "" = this process's
  std::vector<std::string> binary_scope;    // COZ_BINARY_SCOPE, one glob per line; empty: the main executable
  std::vector<std::string> source_scope;    // COZ_SOURCE_SCOPE, one glob per line; empty: all but system sources
  std::vector<std::string> progress_lines;  // COZ_PROGRESS_LINES, FILE:LINE per line: counted with breakpoints
  std::vector<std::string> latency_lines;   // COZ_LATENCY_LINES, BEGIN and END FILE:LINE, alternating
  std::string fixed_line;                   // COZ_FIXED_LINE "FILE:LINE"; empty: chosen by samples
  std::string control_path;                 // COZ_CONTROL: the monitor's control file (control.h); empty: none
  int run_pid = 0;                          // COZ_RUN_PID: the pid `coz run` became (the run's first process)
  std::string system_path;                  // COZ_SYSTEM: `coz run --system`'s shared file (system_shared.h); empty: none
  // COZ_MESSAGES and COZ_STDERR: the file where a process whose stderr is not
  // `coz run`'s (device:inode of it) writes its messages, for the run's first
  // process to show (log.h, send_to_side_file). Empty: every process writes to its stderr.
  std::string messages_path;
  std::string run_stderr;
  bool status_line = false;                 // COZ_STATUS=1: the monitor keeps a status line on this stderr
  int fixed_speedup_percent = -1;           // COZ_FIXED_SPEEDUP 0..100; -1: random
  /// COZ_GRANULARITY: what one virtual speedup covers. "line": one line;
  /// "function": every line of the selected line's function
  /// (LineMap::group_by_function); "auto" (default): functions first, then
  /// lines inside the winners, in a large program (two_phase.h).
  enum class Granularity { Line, Function, Auto };
  Granularity granularity = Granularity::Auto;
  bool function_granularity() const { return granularity == Granularity::Function; }
  uint64_t two_phase_experiments = 150;     // COZ_TWO_PHASE_EXPERIMENTS: experiments on functions before lines (auto)
  bool end_to_end = false;                  // COZ_END_TO_END=1: one experiment for the whole run
  uint64_t sample_period_ns = 1'000'000;    // COZ_SAMPLE_PERIOD_NS: 1 ms of thread CPU time
  /// COZ_CPU_RINGS=0: the samples no signal drains are taken by an event per
  /// thread, as they were before per-CPU rings (cpu_rings.h), for comparing the two.
  bool cpu_rings = true;
  /// COZ_SAMPLE_TRAPS=0: every thread's sampler maps a ring and signals
  /// through its descriptor, as before samplers without rings (sampler.cpp,
  /// choose_trap_sampling), for comparing the two.
  bool sample_traps = true;
  /// COZ_WHOLE_CPU_SAMPLING=0: the threads that leave their trap events
  /// (timer_switch_rate) are sampled by their CPU-time timers on the tick,
  /// as before whole-CPU rings (sampler.cpp, g_whole_cpu), and
  /// timer_switch_rate_outside is off.
  bool whole_cpu_sampling = true;
  /// COZ_SAMPLING=0: no thread is sampled (no perf_event, no timer, no
  /// signal), so no line is chosen for an experiment; the interposed calls
  /// and the profiler thread run as ever. What the runtime costs a program
  /// apart from its samples, for benchmarks (bench/real, `--overhead-modes runtime`).
  bool sampling = true;
  int verbosity = 0;                        // COZ_VERBOSE: 0 warnings, 1 info, 2 debug
  std::string debug_root = "/usr/lib/debug"; // COZ_DEBUG_ROOT: where separate debug files live

  // --- experiment tunables (COZ_EXPERIMENT_* for tests and benchmarks) ---
  uint64_t experiment_min_ns = 50'000'000;   // COZ_EXPERIMENT_MIN_NS: shortest experiment, 50 ms
  uint64_t experiment_max_ns = 2'000'000'000; // COZ_EXPERIMENT_MAX_NS: longest experiment, 2 s
  uint64_t cooloff_ns = 5'000'000;           // COZ_COOLOFF_NS: pause between experiments, 5 ms: pauses in flight (at most one sample period each) end well within it
  uint64_t target_visits = 10;               // COZ_TARGET_VISITS: visits each progress point should get per experiment
  double zero_speedup_share = 0.25;          // share of experiments run at 0% (the baselines)

  // --- fixed internals ---
  uint64_t poll_interval_ns = 2'000'000;  // profiler thread wake-up during an experiment with latency points, 2 ms
  uint64_t idle_wake_ns = 20'000'000;     // its wake-up when nothing needs polling: how soon it sees the program gone
  static constexpr unsigned max_unwind_frames = 64;  // frames a sample's stack walk follows at most
  /// User stack the kernel copies into each sample, from the sampled rsp up,
  /// for the walk (bytes, a multiple of 8). See docs/unwinding.md for how it
  /// was chosen; a walk that needs more stops as "unreadable".
  static constexpr unsigned stack_sample_bytes = 4096;
  unsigned delay_sampling_rate = 2;       // samples per sample period while an experiment inserts delays (see Profiler::begin)
  /// Context switches per second of a thread's CPU time above which the
  /// thread trades its trap event for a CPU-time timer (0: never, whatever
  /// woke it); see sample_policy::switch_verdict and docs/lifecycle.md.
  uint64_t timer_switch_rate = 15'000;
  /// The same for a thread whose waits mostly only the outside could end
  /// (0: only above timer_switch_rate). Only where whole-CPU events sample
  /// the threads that move (sampler.cpp, g_whole_cpu), else 0: on nghttpd
  /// the tick's samples of its loops left 11% of the experiments without a
  /// sample in their line, and its top line got half the experiments in a
  /// run of the same length (docs/lifecycle.md, "Lower for threads woken
  /// from outside"). Also, with or without those events, the rate above
  /// which a thread that hardly waits, preempted at every turn, moves to
  /// its timer (sample_policy::rare_waits_per_cpu_second).
  uint64_t timer_switch_rate_outside = 2'000;

  /// Every experiment is a 0% baseline (--fixed-speedup 0): no delay is ever inserted.
  bool only_baselines() const { return fixed_speedup_percent == 0; }

  /// Reads the environment. Malformed values are reported in `errors` (one
  /// line each) and leave the default in place.
  static Config from_environment(std::vector<std::string>& errors);
};

}  // namespace coz
