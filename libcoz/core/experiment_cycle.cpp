#include "experiment_cycle.h"

namespace coz {

void run_experiment_cycles(ExperimentSteps& steps, bool end_to_end, uint64_t cooloff_ns) {
  while (!steps.stopping()) {
    if (steps.stop_asked()) {
      steps.stop_experiments();
      return;
    }
    ExperimentChoice choice;
    if (!steps.choose(choice)) return;
    steps.drain_samples();  // samples taken before the experiment are not the experiment's
    if (!steps.begin(choice)) return;
    if (end_to_end) {  // one experiment, until shutdown() or every program thread is gone
      steps.run_to_the_end();
      return;
    }
    if (!steps.sleep(choice.length_ns, true)) return;
    steps.drain_samples();  // the experiment's last samples
    if (!steps.stop_crediting()) return;
    if (!steps.drain_debts(choice.length_ns)) return;
    if (!steps.end_and_write()) return;
    steps.after_experiment();  // the regular period only once the experiment has ended (see Profiler::begin)
    if (!steps.sleep(cooloff_ns, false)) return;
  }
}

}  // namespace coz
