// The profiler thread's sequence of steps for each experiment, and when it
// stops, apart from the steps themselves (Profiler does them): so that the
// order, which the profile's correctness rests on, is tested on its own
// (test/unit/experiment_cycle_test.cpp).
//
// One cycle: read the monitor's control file (stop there if it says so);
// wait for a line and choose the speedup and length; drain the samples
// taken before (they are not the experiment's); begin; sleep the length;
// drain the experiment's last samples; stop crediting delays; wait for the
// threads to pay what they owe; end the experiment and write it; restore
// the period and start the window the next line is chosen from; cool off.
// Any step that finds the run stopping (shutdown() from the exiting thread,
// or every program thread gone) ends the sequence: shutdown() then ends
// what is running.
#pragma once

#include <cstdint>
#include <string>

namespace coz {

struct SourceLine;

/// What one experiment tests.
struct ExperimentChoice {
  SourceLine* line = nullptr;  // this process's unit; null in `coz run --system` when only others have that code
  std::string name;            // the unit's name, as the experiment's record gives it
  double speedup = 0.0;
  uint64_t length_ns = 0;
};

/// The steps, done by the runtime. Each returning bool returns false when
/// it found the run stopping (and then did nothing).
class ExperimentSteps {
 public:
  virtual ~ExperimentSteps() = default;
  virtual bool stopping() = 0;
  /// Reads the monitor's control file; true when it says stop experimenting.
  virtual bool stop_asked() = 0;
  /// Writes why experiments stopped, then only drains samples until the run ends.
  virtual void stop_experiments() = 0;
  /// Waits for a line; false when the run stopped first.
  virtual bool choose(ExperimentChoice& choice) = 0;
  /// Consumes the samples that no signal has delivered yet.
  virtual void drain_samples() = 0;
  virtual bool begin(const ExperimentChoice& choice) = 0;
  /// The end-to-end mode's one experiment: runs until the run stops.
  virtual void run_to_the_end() = 0;
  /// Sleeps `ns`, polling the progress points' in-flight counts if asked.
  virtual bool sleep(uint64_t ns, bool poll_points) = 0;
  virtual bool stop_crediting() = 0;
  /// Waits until the threads have paid the delays they owe.
  virtual bool drain_debts(uint64_t length_ns) = 0;
  /// Ends the experiment and writes it (with the samples taken since the last write).
  virtual bool end_and_write() = 0;
  /// Back to the regular sample period; the next line's choice window starts.
  virtual void after_experiment() = 0;
};

/// Runs experiments one after the other until the run stops.
void run_experiment_cycles(ExperimentSteps& steps, bool end_to_end, uint64_t cooloff_ns);

}  // namespace coz
