#include "settling.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/core.h>

#include "verdicts.h"

namespace coz::analysis {
namespace {

/// Weights of aim_weights, by a unit's part in settling the answer.
constexpr double blocking_weight = 1.0;
constexpr double open_weight = 0.25;
constexpr double settled_weight = 0.05;

/// The effects of each point, in the report's order (Analysis::effects is ranked).
std::map<std::pair<std::string, PointKind>, std::vector<const LineEffect*>> by_point(const Analysis& a) {
  std::map<std::pair<std::string, PointKind>, std::vector<const LineEffect*>> points;
  for (const PointSummary& p : a.points) points[{p.name, p.kind}];
  for (const LineEffect& e : a.effects) points[{e.point, e.kind}].push_back(&e);
  return points;
}

PointSettling settle_point(const std::string& name, PointKind kind, const std::vector<const LineEffect*>& ranked,
                           size_t top, bool contended) {
  PointSettling p;
  p.point = name;
  p.kind = kind;
  p.contended = contended;
  for (const LineEffect* e : ranked) {
    if (settled_label(e->label)) ++p.settled;
    else if (e->label != Label::Unmeasured) ++p.open;
  }
  if (ranked.empty()) return p;
  const LineEffect& leader = *ranked.front();
  p.leader = leader.line;
  p.leader_label = leader.label;
  p.leader_impact = leader.impact;
  p.leader_half_width = (leader.impact_high - leader.impact_low) / 2.0;

  auto block = [&](const LineEffect& e) {
    p.blocking.push_back(e.line);
    if (e.measured_experiments < min_settle_experiments) ++p.thin_blocking;
    p.experiments_to_settle += experiments_to_settle(e);
  };
  const size_t n = std::min(top, ranked.size());
  for (size_t i = 0; i < n; ++i) {
    // More experiments on a line that rarely runs would insert no delay
    // either, and on a line of a contended point would not settle it.
    if (!settled_label(ranked[i]->label) && !rarely_runs(*ranked[i]) && !undecidable(*ranked[i])) block(*ranked[i]);
  }
  // A line still undecided after enough experiments could yet outrank the
  // N-th: a discovery above its bound, or any real speed-up when the N-th
  // is "no effect" or a slow-down. Thinner lines do not hold the answer
  // back (they would hold it forever in a program with many lines).
  const LineEffect& last = *ranked[n - 1];
  const double cut = last.label == Label::Positive ? last.adjusted_low : settle_half_width;
  for (size_t i = n; i < ranked.size(); ++i) {
    const LineEffect& e = *ranked[i];
    if (e.label == Label::Undecided && e.measured_experiments >= min_settle_experiments && e.impact_high > cut) {
      block(e);
    }
  }
  // A contended point's lines get no verdict, however many experiments: its
  // answer is never settled (its estimates still narrow as the run goes on).
  p.top_settled = p.blocking.empty() && !contended;
  return p;
}

}  // namespace

bool settled_label(Label label) {
  return label == Label::Positive || label == Label::Negative || label == Label::NoEffect;
}

uint64_t experiments_to_settle(const LineEffect& e) {
  if (undecidable(e)) return 0;
  if (e.experiments_needed) return std::min(*e.experiments_needed, max_counted_experiments);
  uint64_t measured = e.measured_experiments;
  return measured < min_settle_experiments ? min_settle_experiments - measured : 1;
}

std::string format_settle_time(double seconds) {
  if (!(seconds >= 0)) return "?";
  if (seconds < 1) return "<1 s";
  if (seconds < 90) return fmt::format("{:.0f} s", seconds);
  if (seconds < 5400) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

Settling settle_state(const Analysis& analysis, size_t top) {
  Settling s;
  top = std::max<size_t>(top, 1);
  bool any_measured = false;
  s.settled = true;
  std::set<std::pair<std::string, PointKind>> contended;
  for (const PointSummary& p : analysis.points) {
    if (p.contended) contended.insert({p.name, p.kind});
  }
  for (const auto& [key, ranked] : by_point(analysis)) {
    PointSettling p = settle_point(key.first, key.second, ranked, top, contended.count(key) > 0);
    s.contended = s.contended || p.contended;
    any_measured = any_measured || !ranked.empty();
    s.settled = s.settled && p.top_settled && !ranked.empty();
    s.experiments_to_settle += p.experiments_to_settle;
    s.points.push_back(std::move(p));
  }
  s.settled = s.settled && any_measured;
  return s;
}

double aim_baseline_share(const Settling& state) {
  constexpr double least = 0.25, most = 0.5;
  std::set<std::string> blocking;
  size_t thin = 0;
  for (const PointSettling& p : state.points) {
    blocking.insert(p.blocking.begin(), p.blocking.end());
    thin += p.thin_blocking;
  }
  if (blocking.empty()) return 0.0;
  // A thin line is held back by its count of measured experiments, not by
  // its width (unix_rpc's no-effect line waited at 9 of 10 with ±2.1%, while
  // half the experiments went to 0%); the width hardly changes between
  // shares of 0.25 and 0.5 (docs/settling.md).
  if (thin > 0) return least;
  // Var(impact) ~ 1/X_line + 1/X_0 for each of L lines sharing X_0:
  // sum over lines of 1/((1 - f)/L) + L/f is least at f = 1/(1 + sqrt(L)).
  const double share = 1.0 / (1.0 + std::sqrt(static_cast<double>(blocking.size())));
  return std::clamp(share, least, most);
}

std::vector<AimWeight> aim_weights(const Analysis& analysis, const Settling& state) {
  std::map<std::string, double> weights;  // a unit's largest over the points
  for (const PointSettling& p : state.points) {
    for (const std::string& line : p.blocking) weights[line] = blocking_weight;
  }
  for (const LineEffect& e : analysis.effects) {
    double base = settled_label(e.label) ? settled_weight : open_weight;
    double& w = weights[e.line];
    w = std::max(w, base);
  }
  std::map<std::string, double> share;
  for (const LineEffect& e : analysis.effects) share[e.line] = std::max(share[e.line], e.sample_share);
  // Blocking units get a floor so that a thin line at the top is still
  // tried; the others only their share: a floor for each of hundreds of
  // rarely sampled lines would send most aimed experiments to lines whose
  // speedups insert no delay (memcached: 42% of them, docs/settling.md).
  std::vector<AimWeight> out;
  for (const auto& [unit, w] : weights) {
    const double floor = w == blocking_weight ? 0.1 : 0.0;
    out.push_back({unit, w * (floor + share[unit])});
  }
  return out;
}

double run_experiments_left(const Analysis& analysis, const Settling& state, const std::vector<AimWeight>& aim,
                            double aimed_share) {
  if (aim.empty()) aimed_share = 0.0;
  std::map<std::string, double> weight;
  double total_weight = 0;
  for (const AimWeight& w : aim) {
    weight[w.unit] = w.weight;
    total_weight += w.weight;
  }
  std::map<std::string, std::pair<double, uint64_t>> line;  // share of the samples, experiments to settle
  for (const LineEffect& e : analysis.effects) {
    auto& [share, needed] = line[e.line];
    share = std::max(share, e.sample_share);
    needed = std::max(needed, experiments_to_settle(e));
  }
  double left = 0;
  for (const PointSettling& p : state.points) {
    for (const std::string& unit : p.blocking) {
      const auto& [sample_share, needed] = line[unit];
      const double aimed = total_weight > 0 ? weight[unit] / total_weight : 0.0;
      const double share = aimed_share * aimed + (1.0 - aimed_share) * sample_share;
      if (needed == 0) continue;
      left = std::max(left, share > 0 ? static_cast<double>(needed) / share : static_cast<double>(max_counted_experiments));
    }
  }
  return left;
}

}  // namespace coz::analysis
