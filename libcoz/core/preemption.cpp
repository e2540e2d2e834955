#include "preemption.h"

#include <algorithm>

namespace coz::preemption {

bool long_enough(const Counts& then, const Counts& now) {
  return now.cpu_ns >= then.cpu_ns + min_stretch_cpu_ns && now.run_delay_ns >= then.run_delay_ns &&
         now.voluntary >= then.voluntary && now.involuntary >= then.involuntary;
}

double wall_per_cpu(const Counts& then, const Counts& now, double previous) {
  if (!long_enough(then, now)) return previous;
  const double cpu = static_cast<double>(now.cpu_ns - then.cpu_ns);
  const double delay = static_cast<double>(now.run_delay_ns - then.run_delay_ns);
  const double involuntary = static_cast<double>(now.involuntary - then.involuntary);
  const double switches = involuntary + static_cast<double>(now.voluntary - then.voluntary);
  if (involuntary == 0 || switches == 0) return 1.0;
  const double preempted = delay * (involuntary / switches);
  return std::min(max_factor, 1.0 + preempted / cpu);
}

}  // namespace coz::preemption
