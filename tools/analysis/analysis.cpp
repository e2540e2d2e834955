// The causal analysis: from experiments to "program speedup vs line speedup".
// The viewer mirrors these formulas; test/vectors/ holds the shared fixtures.
//
// Pooling. Experiments are grouped by (selected line, progress point, point
// kind, line speedup s rounded to the runtime's 5% step). Only experiments
// that carry a record for the point take part: a process that never
// registered the point says nothing about it. A record with delta 0 does take
// part (its duration counts), so a point that was not reached lowers the
// estimated rate instead of vanishing.
//
// Throughput point, per pool:   P(s) = sum(duration) / sum(delta)
//   (ns per visit; no estimate when sum(delta) = 0).
// Latency point, per experiment i with duration d_i > 0:
//   arrival rate  lambda_i = arrivals_i / d_i
//   mean in flight L_i = mean-in-flight when recorded, else Coz's `difference`
// and per pool, duration-weighted means of both, then Little's law:
//   L = sum(d_i L_i) / sum(d_i),  lambda = sum(d_i lambda_i) / sum(d_i)
//   W(s) = L / lambda = sum(d_i L_i) / sum(arrivals_i)
//   (ns per transaction; no estimate when no transaction arrived).
//
// Program speedup at s:  (P(0) - P(s)) / P(0)   (W for latency points), so a
// positive value always means "the program got better". P(0) is the line's own
// 0% pool (phase-matched, as Coz does); when the line has no usable 0% pool,
// all 0% experiments of the profile for that point are pooled instead and the
// effect is marked global_baseline. Without any baseline there is no curve.
//
// Impact: the mean program speedup over the measured range, i.e. the area
// under the curve from s = 0 (program speedup 0) to the largest measured s,
// by the trapezoid rule, divided by that s. It ranks lines; lines with no
// measurement at s > 0 are listed after all others with impact 0.
#include "analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace coz::analysis {

const char* to_string(PointKind kind) {
  return kind == PointKind::Throughput ? "throughput" : "latency";
}

namespace {

// The runtime picks speedups in 5% steps; rounding pools values written
// with a little noise (0.349, 0.35) and Coz's two-decimal output alike.
constexpr int buckets_per_unit = 20;  // 1 / 0.05

int speedup_bucket(double speedup) {
  return static_cast<int>(std::lround(speedup * buckets_per_unit));
}

double bucket_speedup(int bucket) { return static_cast<double>(bucket) / buckets_per_unit; }

struct Pool {
  uint64_t experiments = 0;
  uint64_t duration_ns = 0;
  uint64_t visits = 0;
  // Latency sums over experiments with a non-zero duration only (their
  // arrival rate is defined).
  double weighted_in_flight = 0.0;  // sum(d_i * L_i)
  uint64_t timed_arrivals = 0;      // sum(arrivals_i)
  std::vector<Observation> observations;

  void add(const Observation& o) {
    ++experiments;
    duration_ns += o.duration_ns;
    visits += o.visits;
    if (o.duration_ns > 0) {
      weighted_in_flight += static_cast<double>(o.duration_ns) * o.in_flight;
      timed_arrivals += o.visits;
    }
    observations.push_back(o);
  }

  /// P(s) or W(s) in ns, when the pool supports an estimate.
  std::optional<double> value(PointKind kind) const {
    if (kind == PointKind::Throughput) {
      if (visits == 0) return std::nullopt;
      return static_cast<double>(duration_ns) / static_cast<double>(visits);
    }
    if (timed_arrivals == 0) return std::nullopt;
    return weighted_in_flight / static_cast<double>(timed_arrivals);
  }
};

using EffectKey = std::tuple<std::string, std::string, PointKind>;  // line, point, kind
using PointKey = std::pair<std::string, PointKind>;

double trapezoid_mean(const std::vector<SpeedupEstimate>& curve) {
  double area = 0.0;
  double prev_s = 0.0;
  double prev_y = 0.0;  // program speedup is 0 at line speedup 0 by definition
  for (const SpeedupEstimate& p : curve) {
    if (p.line_speedup <= 0.0) continue;
    area += (p.line_speedup - prev_s) * (prev_y + p.program_speedup) / 2.0;
    prev_s = p.line_speedup;
    prev_y = p.program_speedup;
  }
  return prev_s > 0.0 ? area / prev_s : 0.0;
}

LineEffect make_effect(const EffectKey& key, const std::map<int, Pool>& pools,
                       const std::map<PointKey, Pool>& global_baselines) {
  LineEffect eff;
  std::tie(eff.line, eff.point, eff.kind) = key;
  for (const auto& [bucket, pool] : pools) eff.experiments += pool.experiments;

  std::optional<double> baseline;
  if (auto own = pools.find(0); own != pools.end()) baseline = own->second.value(eff.kind);
  if (!baseline || *baseline <= 0.0) {
    baseline.reset();
    auto global = global_baselines.find({eff.point, eff.kind});
    if (global != global_baselines.end()) {
      if (auto v = global->second.value(eff.kind); v && *v > 0.0) {
        baseline = v;
        eff.global_baseline = true;
      }
    }
  }
  if (!baseline) return eff;  // nothing to compare against: no curve
  eff.baseline_ns = *baseline;

  for (const auto& [bucket, pool] : pools) {
    std::optional<double> v = pool.value(eff.kind);
    if (!v) continue;
    // With a global baseline the line's own 0% pool was unusable; the curve
    // starts at (0, 0) implicitly.
    if (bucket == 0 && eff.global_baseline) continue;
    SpeedupEstimate est;
    est.line_speedup = bucket_speedup(bucket);
    est.program_speedup = bucket == 0 ? 0.0 : (*baseline - *v) / *baseline;
    est.experiments = pool.experiments;
    est.visits = pool.visits;
    est.duration_ns = pool.duration_ns;
    est.value_ns = *v;
    est.observations = pool.observations;
    eff.curve.push_back(std::move(est));
  }

  double best = -std::numeric_limits<double>::infinity();
  for (const SpeedupEstimate& p : eff.curve) {
    if (p.line_speedup > 0.0) {
      eff.measured = true;
      best = std::max(best, p.program_speedup);
    }
  }
  eff.max_effect = eff.measured ? best : 0.0;
  eff.impact = trapezoid_mean(eff.curve);
  return eff;
}

bool ranks_before(const LineEffect& a, const LineEffect& b) {
  if (a.measured != b.measured) return a.measured;
  if (a.impact != b.impact) return a.impact > b.impact;
  if (a.max_effect != b.max_effect) return a.max_effect > b.max_effect;
  return std::tie(a.line, a.point, a.kind) < std::tie(b.line, b.point, b.kind);
}

}  // namespace

Analysis analyze(const Profile& profile, const AnalysisOptions& options) {
  Analysis result;
  result.experiments = profile.experiments.size();
  for (const auto& [location, count] : profile.samples) {
    // Saturating: the reader already caps each count, garbage must not wrap the sum.
    uint64_t room = std::numeric_limits<uint64_t>::max() - result.total_samples;
    result.total_samples += std::min(count, room);
  }

  std::map<EffectKey, std::map<int, Pool>> pools;
  std::map<PointKey, Pool> global_baselines;
  std::set<std::string> points;

  auto record = [&](const Experiment& e, const std::string& point, PointKind kind,
                    const Observation& o) {
    points.insert(point);
    if (!options.point.empty() && point != options.point) return;
    int bucket = speedup_bucket(e.speedup);
    pools[{e.selected, point, kind}][bucket].add(o);
    if (bucket == 0) global_baselines[{point, kind}].add(o);
  };

  for (const Experiment& e : profile.experiments) {
    for (const ThroughputMeasurement& t : e.throughput) {
      record(e, t.name, PointKind::Throughput, {e.duration_ns, t.delta, 0.0});
    }
    for (const LatencyMeasurement& l : e.latency) {
      double in_flight =
          l.mean_in_flight >= 0.0 ? l.mean_in_flight : static_cast<double>(l.difference);
      record(e, l.name, PointKind::Latency, {e.duration_ns, l.arrivals, in_flight});
    }
  }
  result.points.assign(points.begin(), points.end());

  for (const auto& [key, line_pools] : pools) {
    LineEffect eff = make_effect(key, line_pools, global_baselines);
    if (eff.experiments < options.min_experiments) continue;
    if (auto it = profile.samples.find(eff.line); it != profile.samples.end()) {
      eff.samples = it->second;
    }
    if (result.total_samples > 0) {
      eff.sample_share = static_cast<double>(eff.samples) / static_cast<double>(result.total_samples);
    }
    result.effects.push_back(std::move(eff));
  }
  std::stable_sort(result.effects.begin(), result.effects.end(), ranks_before);
  return result;
}

}  // namespace coz::analysis
