#include "percentiles.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "latency_buckets.h"

namespace coz::analysis {

const char* percentile_name(size_t level) {
  static constexpr const char* names[percentile_count] = {"p50", "p95", "p99"};
  return level < percentile_count ? names[level] : "";
}

namespace {

/// A request longer than 3/4 of its experiment counts at most 4 times (docs/analysis.md section 13).
constexpr double max_inclusion_weight = 4.0;
/// A cell estimates a percentile p only with this many requests beyond it
/// (weighted): 2 / (1 - p) requests in all, 200 for p99.
constexpr double min_requests_beyond = 2.0;

/// One bucket of one experiment: its bounds, the requests' weight and the
/// sum of their squared weights.
struct WeightedBucket {
  double low = 0, high = 0;
  double weight = 0, weight_squared = 0;
};

/// One experiment's requests at one point.
struct ExperimentRequests {
  std::vector<WeightedBucket> buckets;  // increasing
  double weight = 0, weight_squared = 0;
  uint64_t requests = 0;  // as recorded
};

/// A request of virtual latency `v` in an experiment of effective duration
/// `d` was recorded only if it began and ended inside it: with beginnings
/// spread evenly, with probability (d - v) / d. Its inverse undoes that.
double inclusion_weight(double v, double d) {
  if (v >= d) return max_inclusion_weight;
  return std::min(max_inclusion_weight, d / (d - v));
}

ExperimentRequests weigh(const LatencyHistogramRecord& h, uint64_t duration_ns) {
  ExperimentRequests r;
  const double d = static_cast<double>(duration_ns);
  for (const auto& [bucket, n] : h.buckets) {
    WeightedBucket b;
    b.low = static_cast<double>(latency::bucket_low(bucket));
    b.high = static_cast<double>(latency::bucket_high(bucket));
    const double w = inclusion_weight((b.low + b.high) / 2, d);
    b.weight = w * static_cast<double>(n);
    b.weight_squared = w * w * static_cast<double>(n);
    r.weight += b.weight;
    r.weight_squared += b.weight_squared;
    r.requests += n;
    r.buckets.push_back(b);
  }
  return r;
}

/// The experiments of one cell, merged into one distribution.
struct Cell {
  std::vector<const ExperimentRequests*> experiments;
  std::map<double, WeightedBucket> merged;  // by low bound
  double weight = 0, weight_squared = 0;

  void add(const ExperimentRequests& e) {
    experiments.push_back(&e);
    for (const WeightedBucket& b : e.buckets) {
      WeightedBucket& m = merged[b.low];
      m.low = b.low;
      m.high = b.high;
      m.weight += b.weight;
      m.weight_squared += b.weight_squared;
    }
    weight += e.weight;
    weight_squared += e.weight_squared;
  }

  /// The latency below which a share p of the weight lies, linear inside its bucket.
  double quantile(double p) const {
    const double target = p * weight;
    double below = 0;
    for (const auto& [low, b] : merged) {
      if (below + b.weight >= target && b.weight > 0) {
        return b.low + (target - below) / b.weight * (b.high - b.low);
      }
      below += b.weight;
    }
    return merged.empty() ? undefined : merged.rbegin()->second.high;
  }

  bool estimates(double p) const { return weight * (1 - p) >= min_requests_beyond && experiments.size() > 0; }
};

/// The weight of `e`'s requests below `q` (linear inside q's bucket).
double weight_below(const ExperimentRequests& e, double q) {
  double below = 0;
  for (const WeightedBucket& b : e.buckets) {
    if (b.high <= q) {
      below += b.weight;
    } else {
      if (b.low < q) below += b.weight * (q - b.low) / (b.high - b.low);
      break;
    }
  }
  return below;
}

/// The design effect of percentile p (docs/analysis.md section 13): over every cell
/// with two or more experiments, how far each experiment's share of
/// requests below the cell's percentile strays from p, against the spread
/// of independent requests; at least 1.
double design_effect(const std::vector<const Cell*>& cells, double p) {
  double sum = 0;
  size_t terms = 0, groups = 0;
  for (const Cell* c : cells) {
    if (c->experiments.size() < 2 || !c->estimates(p)) continue;
    const double q = c->quantile(p);
    size_t here = 0;
    for (const ExperimentRequests* e : c->experiments) {
      if (e->weight_squared <= 0) continue;
      const double off = weight_below(*e, q) - p * e->weight;
      sum += off * off / (p * (1 - p) * e->weight_squared);
      ++here;
    }
    if (here > 0) {
      terms += here;
      ++groups;
    }
  }
  if (terms <= groups) return 1.0;
  return std::max(1.0, sum / static_cast<double>(terms - groups));
}

/// The percentile p of a cell and the standard error of its logarithm, by
/// Woodruff's interval: the percentiles at p -/+ z95 standard errors of the
/// share below it. NaN when the cell has too few requests.
std::pair<double, double> percentile_with_log_se(const Cell& c, double p, double deff) {
  if (!c.estimates(p)) return {undefined, undefined};
  const double q = c.quantile(p);
  const double var_share = deff * p * (1 - p) * c.weight_squared / (c.weight * c.weight);
  const double spread = z95 * std::sqrt(var_share);
  const double q_low = c.quantile(std::max(1e-9, p - spread));
  const double q_high = c.quantile(std::min(1 - 1e-9, p + spread));
  if (!(q > 0) || !(q_low > 0) || !(q_high > 0)) return {undefined, undefined};
  return {q, (std::log(q_high) - std::log(q_low)) / (2 * z95)};
}

PercentileChange change_from(double log_ratio, double se) {
  PercentileChange c;
  c.change = 1 - std::exp(log_ratio);
  if (std::isfinite(se)) {
    c.low = 1 - std::exp(log_ratio + z95 * se);
    c.high = 1 - std::exp(log_ratio - z95 * se);
  }
  return c;
}

}  // namespace

std::vector<PointPercentiles> analyze_percentiles(const Profile& profile) {
  // Every experiment's requests, by point; kept in place for the cells' pointers.
  std::map<std::string, std::vector<std::pair<const Experiment*, ExperimentRequests>>> by_point;
  for (const Experiment& e : profile.experiments) {
    if (e.duration_ns == 0) continue;
    for (const LatencyHistogramRecord& h : e.latency_histograms) {
      by_point[h.name].emplace_back(&e, weigh(h, e.duration_ns));
    }
  }
  std::vector<PointPercentiles> out;
  for (const auto& [name, experiments] : by_point) {
    PointPercentiles point;
    point.point = name;
    Cell baseline;
    std::map<std::string, std::map<int, Cell>> lines;  // line -> speedup step -> cell
    for (const auto& [e, requests] : experiments) {
      point.requests += requests.requests;
      const int step = speedup_bucket(e->speedup);
      if (step == 0) baseline.add(requests);
      else lines[e->selected][step].add(requests);
    }
    point.baseline_experiments = baseline.experiments.size();
    point.baseline_requests = baseline.weight;
    std::vector<const Cell*> cells = {&baseline};
    for (const auto& [line, steps] : lines) {
      for (const auto& [step, cell] : steps) cells.push_back(&cell);
    }
    std::array<double, percentile_count> base_log_se{};
    for (size_t k = 0; k < percentile_count; ++k) {
      point.design_effect[k] = design_effect(cells, percentile_levels[k]);
      auto [q, se] = percentile_with_log_se(baseline, percentile_levels[k], point.design_effect[k]);
      point.baseline_ns[k] = q;
      base_log_se[k] = se;
    }
    for (const auto& [line, steps] : lines) {
      LinePercentiles lp;
      lp.line = line;
      std::vector<const Cell*> line_cells;
      for (const auto& [step, cell] : steps) {
        PercentileCell pc;
        pc.line_speedup = bucket_speedup(step);
        pc.experiments = cell.experiments.size();
        pc.requests = cell.weight;
        lp.curve.push_back(pc);
        line_cells.push_back(&cell);
      }
      for (size_t k = 0; k < percentile_count; ++k) {
        // log(q(s)/q(0)) = beta * s, weighted by each cell's own precision;
        // its variance counts the shared baseline once (as docs/analysis.md section 6).
        double sum_wss = 0, sum_wsy = 0;
        std::vector<std::pair<double, double>> parts;  // (w*s, own variance)
        for (size_t i = 0; i < lp.curve.size(); ++i) {
          PercentileCell& pc = lp.curve[i];
          auto [q, se] = percentile_with_log_se(*line_cells[i], percentile_levels[k], point.design_effect[k]);
          pc.levels[k].latency_ns = q;
          if (!std::isfinite(q) || !std::isfinite(point.baseline_ns[k])) continue;
          const double log_ratio = std::log(q / point.baseline_ns[k]);
          const PercentileChange c = change_from(log_ratio, std::hypot(se, base_log_se[k]));
          pc.levels[k].change = c.change;
          pc.levels[k].low = c.low;
          pc.levels[k].high = c.high;
          if (!std::isfinite(se) || se <= 0) continue;
          const double s = pc.line_speedup;
          const double w = 1 / (se * se);
          sum_wss += w * s * s;
          sum_wsy += w * s * log_ratio;
          parts.emplace_back(w * s, se * se);
        }
        if (sum_wss <= 0) continue;
        const double beta = sum_wsy / sum_wss;
        double own = 0, shared = 0;
        for (const auto& [ws, var] : parts) {
          const double a = ws / sum_wss;
          own += a * a * var;
          shared += a;
        }
        const double se_beta = std::sqrt(own + shared * shared * base_log_se[k] * base_log_se[k]);
        lp.at_half[k] = change_from(beta * material_line_speedup, se_beta * material_line_speedup);
      }
      point.lines.push_back(std::move(lp));
    }
    constexpr size_t p99 = percentile_count - 1;
    std::stable_sort(point.lines.begin(), point.lines.end(), [](const LinePercentiles& a, const LinePercentiles& b) {
      const double x = a.at_half[p99].change, y = b.at_half[p99].change;
      if (std::isfinite(x) != std::isfinite(y)) return std::isfinite(x);
      return std::isfinite(x) && x > y;
    });
    out.push_back(std::move(point));
  }
  return out;
}

}  // namespace coz::analysis
