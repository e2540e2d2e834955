#include "two_phase.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace coz {

void TwoPhase::observe_samples(uint64_t total_samples, size_t sampled_lines) {
  if (phase_ != Phase::Undecided || total_samples < limits_.samples_to_decide) return;
  phase_ = sampled_lines >= limits_.large_program_lines ? Phase::Functions : Phase::Lines;
}

std::optional<double> TwoPhase::rate_of(const ExperimentResult& r) {
  if (r.duration_ns == 0) return std::nullopt;
  double visits = 0;
  bool throughput = false;
  for (const PointResult& p : r.points) {
    if (!p.latency) {
      throughput = true;
      visits += static_cast<double>(p.delta);
    }
  }
  if (!throughput) {
    for (const PointResult& p : r.points) visits += static_cast<double>(p.departures);
  }
  return visits / static_cast<double>(r.duration_ns);
}

void TwoPhase::record(const ExperimentResult& result) {
  if (phase_ != Phase::Functions) return;
  if (std::optional<double> rate = rate_of(result)) {
    if (result.speedup == 0) {
      // The baselines are pooled: any unit's 0% experiment measures the same program.
      baseline_visits_ += *rate * static_cast<double>(result.duration_ns);
      baseline_ns_ += static_cast<double>(result.duration_ns);
    } else if (*rate > 0) {
      by_unit_[result.selected].push_back({result.speedup, *rate, static_cast<double>(result.duration_ns)});
    }
  }
  if (++experiments_ >= limits_.function_experiments) {
    choose_winners();
    phase_ = Phase::Lines;
  }
}

std::optional<TwoPhase::Estimate> TwoPhase::estimate(const std::string& unit) const {
  auto it = by_unit_.find(unit);
  if (it == by_unit_.end() || baseline_ns_ == 0 || baseline_visits_ == 0) return std::nullopt;
  double base_rate = baseline_visits_ / baseline_ns_;
  // The rate gain z = rate / baseline rate - 1 against line speedup s,
  // fitted as z = b s by least squares through the origin, each experiment
  // weighted by its length. Through the origin: an experiment at 5% says
  // little about b (dividing its z by s, a mean of per-experiment slopes,
  // gave it 20 times the noise of one at 100%). In rate terms, not period
  // terms (1 - baseline / rate): one stalled experiment (a rate near 0, from
  // a burst of load) is a bounded -1 there instead of an unbounded negative.
  // This orders the functions only; the analysis makes the verdicts.
  const std::vector<Observation>& obs = it->second;
  double swsz = 0, swss = 0, sw = 0;
  for (const Observation& o : obs) {
    double z = o.rate / base_rate - 1.0;
    swsz += o.weight * o.speedup * z;
    swss += o.weight * o.speedup * o.speedup;
    sw += o.weight;
  }
  Estimate e;
  e.experiments = obs.size();
  e.slope = swsz / swss;
  if (obs.size() > 1) {
    double residual = 0;
    for (const Observation& o : obs) {
      double r = o.rate / base_rate - 1.0 - e.slope * o.speedup;
      residual += o.weight * r * r;
    }
    // Weighted residual variance per unit weight, scaled to the mean weight.
    double n = static_cast<double>(obs.size());
    double variance = residual / sw * n / (n - 1);
    e.se = std::sqrt(variance * (sw / n) / swss);
  }
  return e;
}

/// The functions whose effect is clearly above zero (mean two standard
/// errors over it) and large enough to matter, best lower bound first, at
/// most max_winners. Loose on purpose: this only picks where the second
/// phase looks, and the analysis, which sees every experiment, still decides
/// what is settled. Large enough: a rate gain of at least min_winner_slope
/// when the whole function goes (5%). Below that, its lines could at best be
/// "no effect" (within ±2.5% on average over the speedups), yet with enough
/// experiments a real 1% effect is clearly above zero too: many_functions'
/// 64 functions of ~1% each made winners beside its bottleneck in 3 runs of
/// 20 (IntegrationTest.TwoPhaseTestsFunctionsThenTheWinnersLines). Nothing
/// that stands out: no restriction, the second phase tests every line.
void TwoPhase::choose_winners() {
  struct Candidate {
    std::string unit;
    double lower;
  };
  std::vector<Candidate> candidates;
  for (const auto& [unit, observations] : by_unit_) {
    std::optional<Estimate> e = estimate(unit);
    if (!e || e->experiments < limits_.min_unit_experiments) continue;
    if (e->slope - 2 * e->se > 0 && e->slope >= limits_.min_winner_slope) {
      candidates.push_back({unit, e->slope - 2 * e->se});
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.lower > b.lower; });
  winners_.clear();
  for (size_t i = 0; i < candidates.size() && i < limits_.max_winners; ++i) winners_.push_back(candidates[i].unit);
}

std::vector<std::string> TwoPhase::summary() const {
  std::vector<std::string> out;
  for (const auto& [unit, observations] : by_unit_) {
    std::optional<Estimate> e = estimate(unit);
    if (!e || e->experiments < limits_.min_unit_experiments) continue;
    out.push_back(fmt::format("{}: rate {:+.1f}% ±{:.1f} at 100% ({} exps)", unit, e->slope * 100, 2 * e->se * 100,
                              e->experiments));
  }
  return out;
}

}  // namespace coz
