// The profiler thread: runs one performance experiment after another and
// writes each one to the profile as soon as it ends.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "control.h"
#include "core_use.h"
#include "experiment_cycle.h"
#include "experiment.h"
#include "profiler_loop.h"
#include "two_phase.h"
#include "runtime.h"
#include "futex_lock.h"
#include "system_link.h"

namespace coz {

class Profiler {
 public:
  explicit Profiler(Runtime& rt);

  /// Starts the thread (not sampled, all signals blocked).
  bool start();

  /// At process exit: ends the experiment in progress (kept if it ran long
  /// enough; in end-to-end mode it is the whole run), then writes the samples
  /// not yet written and the run time. Safe to call while the thread runs.
  void shutdown();

  /// From a signal handler (async-signal-safe): has the profiler thread run
  /// shutdown(), and waits up to `timeout_ns` for it to finish.
  void shutdown_from_signal(uint64_t timeout_ns);
  /// At process exit, where only the profiler thread can write the profile
  /// (the runtime's own descriptor table, descriptors.h): has it run
  /// shutdown(), and waits up to `timeout_ns`; false if it did not finish.
  /// `may_sleep` false: waits without a system call (a sealed thread's
  /// seccomp filter may allow none).
  bool shutdown_on_profiler_thread(uint64_t timeout_ns, bool may_sleep = true);
  /// Runs `report` on the profiler thread after a shutdown_from_signal()'s
  /// records, before the signal handler lets the process end.
  void after_signal_shutdown(void (*report)()) { signal_report_ = report; }

 private:
  struct Running {
    bool active = false;
    SourceLine* line = nullptr;  // null when only other processes have that code (`coz run --system`)
    std::string name;
    double speedup = 0;
    uint32_t deaths = 0;  // `coz run --system`: processes of the run found dead before it began
    uint64_t start_ns = 0;
    uint64_t start_global = 0;
    uint64_t last_poll_ns = 0;  // for the time-weighted in-flight average
    uint64_t start_cpu_ns = 0;  // the process's CPU time at the start (waited_for_the_world)
    int64_t start_switches = -1;  // program_voluntary_switches() at the start
    bool after_first_progress = false;  // a point had been reached when it began (any_progress_yet)
    CoreUseSnapshot core_use;  // the threads' runqueue counters as it began
  };

  static void* thread_main(void* self);
  /// The control file, where it will be read: on this thread, or where the
  /// runtime keeps a table of its own, on the profiler thread.
  void open_control();
  /// On the profiler thread, where the runtime keeps a table of its own:
  /// enters it and opens the files only this thread uses (descriptors.h).
  void open_own_files();
  /// Waits up to `timeout_ns` for shutdown() to have written the last records.
  bool wait_until_shut_down(uint64_t timeout_ns, bool may_sleep = true);
  void on_wake();
  void take_realtime_priority();
  void run();
  /// `coz run --system`: leads the experiments, or follows another
  /// process's until it is gone, then leads (system_link.h).
  void run_in_system();
  /// The system's choice: a line by name from every process's samples, or the --fixed-line.
  bool choose_in_system(ExperimentChoice& choice);
  SourceLine* wait_for_line();
  /// Starts the window of samples the next line is chosen from (choose_line).
  void start_line_choice();
  /// A line chosen in proportion to its samples since start_line_choice; nullptr if none yet.
  SourceLine* choose_line();
  /// choose_line's look at every line's samples.
  SourceLine* look_for_line();
  /// --granularity auto (two_phase.h): groups lines into functions in the
  /// first phase; in the second, leaves in `fresh` only the samples of the
  /// winners' lines. Caller holds the line map's lock.
  void apply_two_phase(std::vector<uint64_t>& fresh);
  SourceLine* wait_for_fixed_line();
  /// Reads the monitor's control file (control.h), if the run has one:
  /// where to aim, and whether to stop experimenting.
  void read_control();
  /// A unit the monitor aims at, chosen by its weight; nullptr when none of
  /// its units is among this process's lines. Caller holds the line map's lock.
  SourceLine* choose_aimed_unit();
  /// After the monitor said stop: writes why, then only keeps the samples
  /// coming until the program ends. Returns when shutdown began.
  void stop_experiments();
  /// At the run's end, in its first process: tells the monitor, and clears
  /// its status line from the terminal (docs/settling.md).
  void end_monitor();
  /// Every program thread has exited, or a terminating signal is ending the process.
  bool program_gone();
  /// After the last records, when exit_watch_ says the main thread left
  /// alone: ends the process as the last program thread left it.
  [[noreturn]] void end_process_as_main_left();
  void begin(const ExperimentChoice& choice);
  /// Stops the delays of the running experiment. Caller holds lock_.
  void stop_crediting();
  /// Waits until the threads have paid the delays they owe; false if shutdown began.
  bool drain_debts(uint64_t length_ns);
  /// Ends the running experiment; returns false if there was none. Caller holds lock_.
  bool end(ExperimentResult& result);
  static bool waited_for_the_world(const ExperimentResult& result, uint64_t wall_ns, uint64_t cpu_ns);
  /// Whether any progress point has been reached (always, --end-to-end). Caller holds lock_.
  bool any_progress_yet();
  /// The program's voluntary context switches so far (docs/delays.md, "make
  /// sleeps shorter"); -1 when unknown. Profiler thread only.
  int64_t program_voluntary_switches() const;
  void poll_in_flight();
  std::vector<VisitRate> visit_rates();
  void write_new_samples();
  /// Sleeps up to `ns` in steps of at most `step_ns` (polling the in-flight
  /// counts if `poll_points`), or until `done()` holds; false if shutdown began.
  template <typename Done>
  bool wait_unless_stopping(uint64_t ns, uint64_t step_ns, bool poll_points, Done done);
  /// A sleep step, shortened so that no ring that no signal drains fills (unsignalled_drain_interval_ns).
  uint64_t quiet_step(uint64_t step_ns) const;
  /// Sleeps up to `ns` in poll-interval steps; false if shutdown began.
  bool sleep_unless_stopping(uint64_t ns, bool poll_points);
  /// No experiment any more: only the rings are drained, until shutdown
  /// began or every program thread is gone.
  void idle_until_stopping();

  Runtime& rt_;
  std::unique_ptr<SystemLink> system_;  // `coz run --system` only
  bool warned_fixed_line_ = false;      // choose_in_system
  ExperimentScheduler scheduler_;
  FutexLock lock_;  // guards running_ and the writing of records against shutdown() from the exiting thread
  std::atomic<bool> shutdown_requested_{false};  // by shutdown_from_signal
  std::atomic<bool> exit_requested_{false};       // by shutdown_on_profiler_thread
  std::atomic<bool> shut_down_{false};           // shutdown() has written the last records
  void (*signal_report_)() = nullptr;            // after_signal_shutdown
  Running running_;
  struct {
    uint64_t before_progress = 0;  // begun before any point was reached (end)
    uint64_t idle = 0;             // waited_for_the_world
  } unrecorded_;                   // experiments not recorded, under lock_
  std::atomic<bool> stopping_{false};
  // The monotonic clock, and the thread registry with /proc/self/stat
  // (profiler_loop.h; tests use their own).
  struct SystemClock final : LoopClock {
    uint64_t now_ns() override;
    void sleep_ns(uint64_t ns) override;
  } clock_;
  struct RuntimeCensus final : ThreadCensus {
    int registered_threads() override;
    std::optional<ProcessThreads> process_threads() override;
  } census_;
  MainExitWatch exit_watch_{clock_, census_};  // profiler thread only
  // The steps of each experiment, in the order experiment_cycle.h runs them.
  struct Steps final : ExperimentSteps {
    explicit Steps(Profiler& profiler) : p(profiler) {}
    bool stopping() override;
    bool stop_asked() override;
    void stop_experiments() override;
    bool choose(ExperimentChoice& choice) override;
    void drain_samples() override;
    bool begin(const ExperimentChoice& choice) override;
    void run_to_the_end() override;
    bool sleep(uint64_t ns, bool poll_points) override;
    bool stop_crediting() override;
    bool drain_debts(uint64_t length_ns) override;
    bool end_and_write() override;
    void after_experiment() override;
    Profiler& p;
  };
  std::vector<uint64_t> choice_base_;  // each line's samples when the choice window started (by index)
  // The lines with samples, which the passes at each experiment visit (under rt_.lines_lock).
  SampledLines sampled_lines_;
  // The run's sample count when a look at the lines last chose nothing, and
  // the looks skipped since (choose_line); no_look: the next one looks.
  static constexpr uint64_t no_look = UINT64_MAX;
  uint64_t samples_at_empty_look_ = no_look;
  uint32_t looks_skipped_ = 0;
  uint64_t request_windows_ = 0;  // experiments begun: the next request window's number
  TwoPhase two_phase_;
  bool two_phase_grouped_ = false;    // the line map is grouped by function (first phase)
  std::vector<bool> two_phase_lines_;  // second phase: which lines (by index) the winners hold; empty: all
  // The monitor's control file (control.h): -1 when the run has none.
  int control_fd_ = -1;
  Control control_;
  // control_.aim resolved to this process's units, for the line map as it
  // was (its size) when resolved; apply_two_phase clears aim_resolved_
  // when the units change between lines and functions.
  std::vector<std::pair<SourceLine*, double>> aim_units_;
  bool aim_resolved_ = false;
  size_t aim_lines_ = 0;
};

}  // namespace coz
