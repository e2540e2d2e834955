// One process's part in a `coz run --system` run (system_shared.h,
// docs/system.md): leading the experiments, or following them.
//
// The leader is the process whose profiler thread runs the experiment cycle
// (experiment_cycle.h); at first the run's first process to start, later
// whichever process finds the leader gone. It chooses a line by name from
// the samples every process publishes, and announces each experiment's
// begin and end through the shared experiment_seq. A follower's profiler
// thread waits on that word: at a begin, it selects its own code of that
// name (if it has any) and samples at the experiment's period; at an end, it
// stops crediting, has its threads pay what they owe, and says it has
// settled. The leader counts an experiment once every live process has
// settled, and drops it if a process of the run died during it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "experiment.h"
#include "runtime.h"

namespace coz {

class SystemLink {
 public:
  /// The samples taken so far are not published (in a forked child, they are the parent's).
  explicit SystemLink(Runtime& rt);

  /// Whether this process leads now: it did, or takes the lead because none
  /// has it or its leader is gone (a dead leader's experiment is ended first).
  bool lead();
  /// Whether this process leads, without taking the lead.
  bool lead_held() const { return shared_.leader.load(std::memory_order_acquire) == sys::getpid(); }
  /// Ends the experiment a leader left crediting: it died, or exec'd this image.
  void end_orphaned_experiment();
  /// Gives the lead up at exit, so that a follower takes it at once.
  void release_lead();
  /// At exit: this process takes part no more.
  void leave();

  // ---- samples and choice (any process publishes; the leader chooses) ----
  /// Adds this process's samples since the last call to the shared counts.
  void publish_samples();
  /// Has every follower publish its samples now, and waits for them (at
  /// most 10 ms; false then). A follower otherwise publishes when it
  /// wakes, up to 20 ms late: the leader's own samples of the window came
  /// first, and a line only a follower ran was never chosen.
  bool gather_samples();
  /// Starts the window of samples the next line is chosen from.
  void start_choice();
  /// A line name in proportion to its samples in every process since
  /// start_choice(); nullopt if there are none yet.
  std::optional<std::string> choose(ExperimentScheduler& scheduler);
  /// The --fixed-line as a process with code there named it; "" if none has yet.
  std::string fixed_line_name();
  /// Publishes this process's name for the --fixed-line (at start-up).
  void publish_fixed_line(const std::string& name);
  /// This process's unit of that name; nullptr when it has no such code.
  SourceLine* unit_named(const std::string& name);

  // ---- the leader's experiment ----
  /// Before the ledger starts crediting: what every process selects, at which period.
  void announce_selection(const std::string& name, uint64_t period_ns);
  /// After the ledger starts (`crediting`) or stops crediting: the followers
  /// act on it. Stopping twice (end() after stop_crediting()) announces once.
  void announce(bool crediting);
  /// Whether every live follower has paid the delays of the experiment
  /// whose crediting just stopped; marks the dead ones.
  bool followers_settled();
  /// How many processes of the run were found dead so far.
  uint32_t deaths() const { return shared_.deaths.load(std::memory_order_acquire); }
  /// The followers' samples of the selected line since the last call.
  uint64_t take_follower_samples() { return shared_.selected_samples.exchange(0, std::memory_order_acq_rel); }

  // ---- a follower ----
  /// Follows the leader's experiments until `stop()` (false) or the leader
  /// is gone (true). `write_samples` runs every so often.
  bool follow(const std::function<bool()>& stop, const std::function<void()>& write_samples);

 private:
  bool leader_gone() const;
  void follow_begin();
  void follow_end(uint32_t seq);

  Runtime& rt_;
  SystemShared& shared_;
  std::vector<uint64_t> published_;         // each line's samples already published (by index)
  std::vector<SharedLine*> shared_lines_;   // each line's shared entry (by index), once claimed
  SampledLines sampled_lines_;              // the lines publish_samples visits (under rt_.lines_lock)
  std::vector<uint64_t> choice_base_;       // each shared entry's samples when the choice window began
  size_t indexed_lines_ = 0;                // lines in names_
  std::vector<std::pair<std::string, SourceLine*>> names_;  // sorted by name
};

}  // namespace coz
