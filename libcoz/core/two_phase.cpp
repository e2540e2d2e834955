#include "two_phase.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace coz {

namespace {
/// The chance, over the whole first phase, that a function without effect
/// is picked. Every judged function is a chance for noise: a large program
/// has dozens (many_functions: 65), and at a fixed 2 standard errors
/// (one-sided 2.3% each) one of them now and then was. Bonferroni over the
/// judged functions: at 65, a winner stands 3.5 standard errors above zero;
/// a real one (the bottleneck's +50% or more, a 10% function with a 2%
/// error) still clears that.
constexpr double kFalseWinnerRate = 0.02;

/// z with P(Z > z) = p for a standard normal Z, by bisection on erfc.
double upper_normal_quantile(double p) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}
}  // namespace

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
      baselines_.push_back({0, *rate, static_cast<double>(result.duration_ns)});
    } else if (*rate > 0) {
      by_unit_[result.selected].push_back({result.speedup, *rate, static_cast<double>(result.duration_ns)});
    }
  }
  if (++experiments_ >= limits_.function_experiments) {
    choose_winners();
    phase_ = Phase::Lines;
  }
}

std::optional<double> TwoPhase::base_rate() const {
  double visits = 0, ns = 0;
  for (const Observation& o : baselines_) {
    visits += o.rate * o.weight;
    ns += o.weight;
  }
  if (ns == 0 || visits == 0) return std::nullopt;
  return visits / ns;
}

std::optional<TwoPhase::Estimate> TwoPhase::estimate(const std::string& unit) const {
  auto it = by_unit_.find(unit);
  const std::optional<double> base = base_rate();
  if (it == by_unit_.end() || !base) return std::nullopt;
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
    double z = o.rate / *base - 1.0;
    swsz += o.weight * o.speedup * z;
    swss += o.weight * o.speedup * o.speedup;
    sw += o.weight;
  }
  Estimate e;
  e.experiments = obs.size();
  e.slope = swsz / swss;
  // The spread of one experiment of the mean weight: the unit's own, but
  // never below the baselines' (noise_variance). A unit's own from its 5-9
  // experiments is itself noisy: among sixty functions, the one whose few
  // experiments happened to agree got a narrow interval and won
  // (many_functions' f61, +6.8% +-2.2 after 9 experiments, no effect in truth).
  const double n = static_cast<double>(obs.size());
  const double mean_weight = sw / n;
  double own = 0;
  if (n > 1) {
    double residual = 0;
    for (const Observation& o : obs) {
      double r = o.rate / *base - 1.0 - e.slope * o.speedup;
      residual += o.weight * r * r;
    }
    own = residual / mean_weight / (n - 1);
  }
  const double variance = std::max(own, noise_variance(*base));
  e.se = std::sqrt(variance * mean_weight / swss);
  return e;
}

/// The variance of one baseline experiment's rate gain (0 by definition,
/// so all of it is noise), per experiment of the baselines' mean weight:
/// the spread every experiment has whatever its line. From the baselines,
/// not from the units' residuals: a strong unit's residuals hold its curve
/// too (1 / (1 - e s) is not a line), which would widen every other unit.
double TwoPhase::noise_variance(double base_rate) const {
  if (baselines_.size() < 2) return 0;
  double sw = 0, residual = 0;
  for (const Observation& o : baselines_) sw += o.weight;
  const double mean_weight = sw / static_cast<double>(baselines_.size());
  for (const Observation& o : baselines_) {
    const double z = o.rate / base_rate - 1.0;
    residual += o.weight * z * z / mean_weight;
  }
  return residual / static_cast<double>(baselines_.size() - 1);
}

/// The functions whose effect is clearly above zero (kFalseWinnerRate,
/// Bonferroni over the functions judged) and large enough to matter, best
/// lower bound first, at most max_winners. This only picks where the second
/// phase looks; the analysis, which sees every experiment, still decides
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
  std::vector<std::pair<std::string, Estimate>> judged;
  for (const auto& [unit, observations] : by_unit_) {
    std::optional<Estimate> e = estimate(unit);
    if (e && e->experiments >= limits_.min_unit_experiments) judged.emplace_back(unit, *e);
  }
  const double z = upper_normal_quantile(kFalseWinnerRate / static_cast<double>(std::max<size_t>(judged.size(), 1)));
  std::vector<Candidate> candidates;
  for (const auto& [unit, e] : judged) {
    const double lower = e.slope - z * e.se;
    if (lower > 0 && e.slope >= limits_.min_winner_slope) candidates.push_back({unit, lower});
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
