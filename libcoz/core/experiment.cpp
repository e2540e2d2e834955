#include "experiment.h"

#include <algorithm>
#include <cmath>

namespace coz {

namespace {
constexpr int speedup_steps = 20;  // 5% steps: 5%, 10%, ..., 100%
}

ExperimentScheduler::ExperimentScheduler(const Config& config, uint64_t seed) : config_(config), rng_(seed) {}

double ExperimentScheduler::choose_speedup(std::optional<double> zero_share) {
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  // Baselines even with a fixed speedup: one run then answers "what would
  // S% do?" by itself, against 0% experiments from the same phases of the run.
  if (config_.only_baselines() || coin(rng_) < zero_share.value_or(config_.zero_speedup_share)) return 0.0;
  if (config_.fixed_speedup_percent > 0) return config_.fixed_speedup_percent / 100.0;
  std::uniform_int_distribution<int> step(1, speedup_steps);
  return step(rng_) / static_cast<double>(speedup_steps);
}

size_t ExperimentScheduler::choose_line(const std::vector<uint64_t>& samples_per_line) {
  uint64_t total = 0;
  for (uint64_t n : samples_per_line) total += n;
  if (total == 0) return no_line;
  uint64_t pick = std::uniform_int_distribution<uint64_t>(0, total - 1)(rng_);
  for (size_t i = 0; i < samples_per_line.size(); ++i) {
    if (pick < samples_per_line[i]) return i;
    pick -= samples_per_line[i];
  }
  return no_line;  // not reached
}

bool ExperimentScheduler::aim_next() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < aimed_share; }

size_t ExperimentScheduler::choose_weighted(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += std::max(w, 0.0);
  if (!(total > 0)) return no_line;
  double pick = std::uniform_real_distribution<double>(0.0, total)(rng_);
  size_t last = no_line;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!(weights[i] > 0)) continue;
    last = i;
    if (pick < weights[i]) return i;
    pick -= weights[i];
  }
  return last;  // rounding left a sliver past the end
}

uint64_t ExperimentScheduler::choose_length(const std::vector<VisitRate>& rates) const {
  double needed_ns = static_cast<double>(config_.experiment_min_ns);
  for (const auto& r : rates) {
    if (r.visits == 0 || r.ns == 0) continue;  // never reached yet: nothing to size for
    double ns_per_visit = static_cast<double>(r.ns) / static_cast<double>(r.visits);
    double want = ns_per_visit * static_cast<double>(config_.target_visits);
    if (want > static_cast<double>(config_.experiment_max_ns)) continue;  // too rare: do not let it starve the rest
    needed_ns = std::max(needed_ns, want);
  }
  return static_cast<uint64_t>(std::min(needed_ns, static_cast<double>(config_.experiment_max_ns)));
}

uint64_t ExperimentScheduler::delay_per_sample(double speedup, uint64_t period_ns) {
  return static_cast<uint64_t>(std::llround(speedup * static_cast<double>(period_ns)));
}

}  // namespace coz
