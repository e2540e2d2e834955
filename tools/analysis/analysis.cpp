// The causal analysis: from experiments to "program speedup vs line speedup"
// with confidence intervals. docs/analysis.md is the specification (sections
// 2-8 there map onto the steps below) and the viewer mirrors it; every sum runs
// in profile order so both sides add the same doubles in the same order.
#include "analysis.h"

#include "verdicts.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace coz::analysis {

const char* to_string(PointKind kind) {
  return kind == PointKind::Throughput ? "throughput" : "latency";
}

const char* to_string(Baseline baseline) {
  switch (baseline) {
    case Baseline::Pooled: return "pooled";
    case Baseline::Line: return "line";
    case Baseline::Local: break;
  }
  return "local";
}

std::optional<Baseline> baseline_named(std::string_view name) {
  for (Baseline b : {Baseline::Local, Baseline::Pooled, Baseline::Line}) {
    if (name == to_string(b)) return b;
  }
  return std::nullopt;
}

const char* to_string(BaselineSource source) {
  switch (source) {
    case BaselineSource::Local: return "local";
    case BaselineSource::Pooled: return "pooled";
    case BaselineSource::Line: return "line";
    case BaselineSource::None: break;
  }
  return "none";
}

const char* to_string(Label label) {
  switch (label) {
    case Label::InsufficientData: return "insufficient-data";
    case Label::Positive: return "positive";
    case Label::Negative: return "negative";
    case Label::NoEffect: return "no-effect";
    case Label::Undecided: return "undecided";
    case Label::Unmeasured: break;
  }
  return "unmeasured";
}

const char* to_string(Withheld withheld) {
  switch (withheld) {
    case Withheld::CoresContended: return "cores-contended";
    case Withheld::FastHandOffs: return "fast-hand-offs";
    case Withheld::No: break;
  }
  return "";
}

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// One experiment's record for one point (docs/analysis.md section 2).
struct Observation {
  const std::string* line;
  int bucket;
  uint64_t x;  // visits (throughput) or arrivals (latency)
  double y;    // duration (throughput) or duration * in-flight (latency)
  uint64_t duration_ns;
  bool untreated;  // at s > 0, but no sample in the selected line: no delay (section 2)
  const Experiment* experiment;  // for its core figures (section 5.1)
};

// Sums over the observations of one cell (line, bucket) or of a baseline pool.
struct Cell {
  uint64_t n = 0;
  uint64_t x = 0;
  double y = 0.0;
  uint64_t duration_ns = 0;
  uint64_t untreated = 0;
  std::vector<size_t> members;  // its observations' positions, in profile order

  void add(const Observation& o, size_t position) {
    ++n;
    x += o.x;
    y += o.y;
    duration_ns += o.duration_ns;
    untreated += o.untreated;
    members.push_back(position);
  }
  bool has_ratio() const { return x > 0; }
  double ratio() const { return y / static_cast<double>(x); }
  bool usable_baseline() const { return has_ratio() && ratio() > 0.0; }
};

using PointKey = std::pair<std::string, PointKind>;
using CellKey = std::pair<std::string, int>;  // line, bucket

// An observation's local baseline (docs/analysis.md section 4): the 0%
// observations nearest to it in time.
struct Neighbourhood {
  std::vector<size_t> members;  // indices into PointData::zero, increasing; empty: the whole pool
  double visits = 0.0;          // X_i^loc
};

struct PointData {
  std::vector<Observation> observations;  // profile order
  std::map<CellKey, Cell> cells;
  Cell baseline;  // the pool: every bucket-0 observation, as measured
  std::vector<size_t> zero;  // positions of the bucket-0 observations
  std::vector<Neighbourhood> local;  // per observation with --baseline local, else empty
  double dispersion = nan;
  int64_t dof = 0;
  // Pearson's sums over each line's own measured observations (s > 0).
  struct LineSums {
    double sum = 0.0;
    int64_t terms = 0;
    int64_t cells = 0;  // its cells with a term
  };
  std::map<std::string, LineSums> line_sums;
};

// The dispersion a line's intervals use (docs/analysis.md section 3): the
// point's, unless the line's own measured experiments spread more; theirs is
// shrunk toward the point's as if the point's were line_dispersion_prior_dof
// more degrees of freedom, so that one wild experiment of a thin line widens
// its interval without deciding it.
double line_dispersion(const PointData& d, const std::string& line) {
  if (std::isnan(d.dispersion)) return nan;
  auto it = d.line_sums.find(line);
  if (it == d.line_sums.end()) return d.dispersion;
  const PointData::LineSums& l = it->second;
  const int64_t dof = l.terms - l.cells;
  if (dof <= 0) return d.dispersion;
  const double own = (l.sum + line_dispersion_prior_dof * d.dispersion) /
                     (static_cast<double>(dof) + line_dispersion_prior_dof);
  return std::max(d.dispersion, own);
}

// The `local_neighbours` bucket-0 observations nearest to position `i`, `i`
// itself excluded; at equal distance the earlier first. Indices into `zero`.
std::vector<size_t> nearest_zero(const std::vector<size_t>& zero, size_t i) {
  const size_t count = zero.size();
  size_t right = static_cast<size_t>(std::lower_bound(zero.begin(), zero.end(), i) - zero.begin());
  size_t left = right;  // candidates are zero[left - 1] and zero[right]
  if (right < count && zero[right] == i) ++right;
  std::vector<size_t> near;
  while (near.size() < local_neighbours && (left > 0 || right < count)) {
    const bool take_left = left > 0 && (right == count || i - zero[left - 1] <= zero[right] - i);
    near.push_back(take_left ? --left : right++);
  }
  std::sort(near.begin(), near.end());
  return near;
}

// Section 4, local: each observation's y measured against its neighbours,
// rescaled to the pool's rate. The pool itself stays as measured.
void apply_local_baseline(PointData& d) {
  if (!d.baseline.usable_baseline()) return;
  const double r0 = d.baseline.ratio();
  std::vector<Observation>& obs = d.observations;
  for (size_t i = 0; i < obs.size(); ++i) {
    if (obs[i].bucket == 0) d.zero.push_back(i);
  }
  d.local.resize(obs.size());
  std::vector<double> adjusted(obs.size());
  for (size_t i = 0; i < obs.size(); ++i) {
    Neighbourhood& near = d.local[i];
    near.members = nearest_zero(d.zero, i);
    uint64_t x = 0;
    double y = 0.0;
    for (size_t z : near.members) {
      x += obs[d.zero[z]].x;
      y += obs[d.zero[z]].y;
    }
    if (!near.members.empty() && x > 0 && y > 0.0) {
      near.visits = static_cast<double>(x);
      adjusted[i] = obs[i].y * (r0 / (y / static_cast<double>(x)));
    } else {  // neighbours that never reached the point: the whole pool
      near.members.clear();
      near.visits = static_cast<double>(d.baseline.x);
      adjusted[i] = obs[i].y;
    }
  }
  for (size_t i = 0; i < obs.size(); ++i) obs[i].y = adjusted[i];
}

// Pearson's statistic over all cells of a point (docs/analysis.md section 3).
void estimate_dispersion(PointKind kind, PointData& d) {
  double sum = 0.0;
  int64_t terms = 0;
  std::set<CellKey> cells_with_terms;
  for (size_t i = 0; i < d.observations.size(); ++i) {
    const Observation& o = d.observations[i];
    CellKey key{*o.line, o.bucket};
    const Cell& c = d.cells.at(key);
    if (!c.has_ratio()) continue;
    double r = c.ratio();
    if (!(r > 0.0)) continue;
    double x = static_cast<double>(o.x);
    double t = 0.0;
    if (kind == PointKind::Throughput) {
      double m = o.y / r;
      if (!(m > 0.0)) continue;
      t = (x - m) * (x - m) / m;
      // Measured against a local baseline, y carries its neighbours' noise
      // too: the variance counts that apart (section 4), so φ must not.
      if (!d.local.empty()) t /= 1.0 + m / d.local[i].visits;
    } else {
      if (o.x == 0) continue;
      double e = o.y - r * x;
      t = e * e / (r * r * x);
      if (!d.local.empty()) t /= 1.0 + x / d.local[i].visits;
    }
    sum += t;
    ++terms;
    cells_with_terms.insert(key);
    if (o.bucket > 0) {
      PointData::LineSums& l = d.line_sums[*o.line];
      l.sum += t;
      ++l.terms;
    }
  }
  for (const CellKey& key : cells_with_terms) {
    if (key.second > 0) ++d.line_sums[key.first].cells;
  }
  d.dof = terms - static_cast<int64_t>(cells_with_terms.size());
  d.dispersion = d.dof > 0 ? sum / static_cast<double>(d.dof) : nan;
}

// A linear combination L = sum a_k * delta_k of the measured points and its
// delta-method standard error (docs/analysis.md section 6).
struct Combination {
  double value = 0.0;
  double se = nan;
};

struct Measured {
  double s;
  double delta;
  double r;
  double x;
  std::vector<double> g;  // G_c(j) per index j of PointData::zero against local baselines; empty against the pool
};

// Σ_j x_j h_j² over the 0% observations j (docs/analysis.md section 4).
double squares_by_visits(const std::vector<double>& h, const PointData& d) {
  double v = 0.0;
  for (size_t j = 0; j < h.size(); ++j) v += static_cast<double>(d.observations[d.zero[j]].x) * h[j] * h[j];
  return v;
}

// The baseline's share of Var / φ for weights `w_k` on the measured points:
// (Σ w_k)² / X_0 against the pool, Σ_j x_j (Σ_k w_k G_k(j))² against local
// baselines (docs/analysis.md section 4).
double baseline_variance(const std::vector<Measured>& pts, const std::vector<double>& w, double x0,
                         const PointData& d) {
  if (pts.front().g.empty()) {
    double lin = 0.0;
    for (double wk : w) lin += wk;
    return lin * lin / x0;
  }
  std::vector<double> h(d.zero.size(), 0.0);
  for (size_t k = 0; k < pts.size(); ++k) {
    for (size_t j = 0; j < h.size(); ++j) h[j] += w[k] * pts[k].g[j];
  }
  return squares_by_visits(h, d);
}

Combination combine(const std::vector<Measured>& pts, const std::vector<double>& a, double phi, double x0,
                    const PointData& d) {
  Combination c;
  double sq = 0.0;  // sum a^2 r^2 / X
  std::vector<double> w;  // a r
  for (size_t k = 0; k < pts.size(); ++k) {
    c.value += a[k] * pts[k].delta;
    sq += a[k] * a[k] * pts[k].r * pts[k].r / pts[k].x;
    w.push_back(a[k] * pts[k].r);
  }
  c.se = std::sqrt(phi * (sq + baseline_variance(pts, w, x0, d)));
  return c;
}

// G_c(j) of section 4: how cell `c`'s comparison depends on each 0% observation.
std::vector<double> local_weights(const Cell& c, const PointData& d) {
  std::vector<double> g(d.zero.size(), 0.0);
  for (size_t i : c.members) {
    const double u = c.y > 0.0 ? d.observations[i].y / c.y : 0.0;
    const Neighbourhood& near = d.local[i];
    if (near.members.empty()) {
      for (double& gj : g) gj += u / near.visits;
    } else {
      for (size_t j : near.members) g[j] += u / near.visits;
    }
  }
  return g;
}

std::vector<double> trapezoid_coefficients(const std::vector<Measured>& pts) {
  size_t m = pts.size();
  std::vector<double> a(m);
  double last = pts[m - 1].s;
  for (size_t k = 0; k < m; ++k) {
    double prev = k == 0 ? 0.0 : pts[k - 1].s;
    double next = k + 1 < m ? pts[k + 1].s : pts[k].s;
    a[k] = (next - prev) / (2.0 * last);
  }
  return a;
}

std::vector<double> slope_coefficients(const std::vector<Measured>& pts) {
  double denominator = 0.0;
  for (const Measured& p : pts) denominator += p.x * p.s * p.s;
  std::vector<double> a;
  for (const Measured& p : pts) a.push_back(p.x * p.s / denominator);
  return a;
}

// Section 5.1: the cores of a point, over its 0% observations with core figures.
void summarize_cores(const PointData& d, PointSummary& summary) {
  double weight = 0.0, busy = 0.0, waiting = 0.0;
  uint64_t cores = 0;
  // Every bucket-0 observation, whatever the baseline (d.zero is filled by
  // the local one only: with --baseline pooled or line, no point was ever
  // contended until stop 55).
  for (const Observation& o : d.observations) {
    if (o.bucket != 0) continue;
    const Experiment& e = *o.experiment;
    if (e.cores == 0) continue;
    const double w = static_cast<double>(e.duration_ns);
    cores = std::max(cores, e.cores);
    weight += w;
    busy += w * e.cores_busy;
    waiting += w * e.waiting_for_core;
  }
  if (cores == 0 || weight == 0.0) return;
  summary.cores = cores;
  summary.cores_busy = busy / weight;
  summary.waiting_for_core = waiting / weight;
  summary.contended = summary.waiting_for_core >= contended_waiting_threads;
}

// Section 5.2: the program's hand-offs, over the same 0% observations. Only
// those: a speedup experiment's pauses make threads wait for each other.
void summarize_hand_offs(const PointData& d, PointSummary& summary) {
  double switches = 0.0, seconds = 0.0;
  for (const Observation& o : d.observations) {
    if (o.bucket != 0 || o.experiment->voluntary_switches < 0) continue;
    switches += static_cast<double>(o.experiment->voluntary_switches);
    seconds += static_cast<double>(o.experiment->duration_ns) / 1e9;
  }
  if (seconds <= 0.0) return;
  summary.hand_offs_per_second = switches / seconds;
  summary.fast_hand_offs = summary.hand_offs_per_second >= fast_hand_offs_per_second;
}

// Section 5.1: the most program speedup the cores allow at line speedup `s`
// for a line with CPU share `f`, in a contended point; NaN elsewhere, when
// unknown, or for latency. (Where no thread waits for a core the cores are
// not what limits the program, and a thread whose work follows time, not
// progress, a poller, keeps them busy: hot_no_effect's stage_b, +16% for
// real, was cut to +10%.)
double core_bound(const PointSummary& summary, PointKind kind, double s, double f) {
  if (kind != PointKind::Throughput || !summary.contended || summary.cores == 0 || std::isnan(summary.cores_busy) ||
      std::isnan(f)) {
    return nan;
  }
  return 1.0 - (summary.cores_busy / static_cast<double>(summary.cores)) * (1.0 - s * f);
}

void withhold(LineEffect& e, Withheld why) {
  e.label = Label::Undecided;
  e.withheld = why;
  e.experiments_needed = std::nullopt;
}

// Section 5.1: in a contended point no line gets a confident label.
// Section 5.2: where hand-offs are fast, no line is "no effect" (its
// statistics stay: only the reading of a small effect as none is withheld).
void withhold_labels(std::vector<LineEffect>& effects, PointSummary& summary) {
  if (summary.contended) {
    for (LineEffect& e : effects) {
      if (e.label == Label::Positive || e.label == Label::Negative || e.label == Label::NoEffect ||
          e.label == Label::Undecided) {
        withhold(e, Withheld::CoresContended);
        e.adjusted_low = e.adjusted_high = nan;
      }
    }
    summary.discoveries = 0;
    summary.adjusted_level = nan;
  } else if (summary.fast_hand_offs) {
    for (LineEffect& e : effects) {
      if (e.label == Label::NoEffect) withhold(e, Withheld::FastHandOffs);
    }
  }
}

LineEffect make_effect(const std::string& line, const PointKey& point, const PointData& d,
                       const PointSummary& summary, double cpu_share, const AnalysisOptions& options) {
  LineEffect eff;
  eff.line = line;
  eff.cpu_share = cpu_share;
  std::tie(eff.point, eff.kind) = point;
  eff.baseline_ns = nan;
  eff.impact_se = eff.impact_low = eff.impact_high = nan;
  eff.slope = eff.slope_se = eff.slope_low = eff.slope_high = nan;

  auto first = d.cells.lower_bound({line, std::numeric_limits<int>::min()});
  auto last = d.cells.upper_bound({line, std::numeric_limits<int>::max()});
  for (auto it = first; it != last; ++it) {
    eff.experiments += it->second.n;
    eff.untreated_experiments += it->second.untreated;
  }

  const Cell* base = nullptr;
  if (options.baseline == Baseline::Line) {
    auto own = d.cells.find({line, 0});
    if (own != d.cells.end() && own->second.usable_baseline()) {
      base = &own->second;
      eff.baseline = BaselineSource::Line;
    }
  }
  if (base == nullptr && d.baseline.usable_baseline()) {
    base = &d.baseline;
    eff.baseline = options.baseline == Baseline::Local ? BaselineSource::Local : BaselineSource::Pooled;
  }
  const bool local = eff.baseline == BaselineSource::Local;
  if (base == nullptr) {  // nothing to compare against: no curve
    eff.label = Label::Unmeasured;
    return eff;
  }
  const double r0 = base->ratio();
  const double x0 = static_cast<double>(base->x);
  const double phi = line_dispersion(d, line);
  eff.dispersion = phi;
  eff.baseline_ns = r0;

  std::vector<Measured> measured;
  uint64_t untreated_measured = 0;  // of measured_experiments
  for (auto it = first; it != last; ++it) {
    const auto& [key, cell] = *it;
    if (!cell.has_ratio()) continue;
    SpeedupEstimate est;
    est.line_speedup = bucket_speedup(key.second);
    est.value_ns = cell.ratio();
    double r = est.value_ns / r0;
    est.program_speedup = 1.0 - r;
    est.experiments = cell.n;
    est.visits = cell.x;
    est.duration_ns = cell.duration_ns;
    if (key.second > 0) {
      double x = static_cast<double>(cell.x);
      Measured m{est.line_speedup, est.program_speedup, r, x, local ? local_weights(cell, d) : std::vector<double>{}};
      est.bound = core_bound(summary, eff.kind, est.line_speedup, cpu_share);
      if (est.program_speedup > est.bound) {  // false for a NaN bound
        est.program_speedup = est.bound;
        r = 1.0 - est.bound;
        est.bounded = true;
        m.delta = est.program_speedup;
        m.r = r;
      }
      const double base = local ? squares_by_visits(m.g, d) : 1.0 / x0;  // V_c, or the pool's
      est.se = r * std::sqrt(phi * (1.0 / x + base));
      measured.push_back(std::move(m));
      eff.measured_experiments += cell.n;
      untreated_measured += cell.untreated;
    } else {
      est.se = nan;  // this cell is part of the pooled baseline: not independent of it
    }
    est.low = est.program_speedup - z95 * est.se;
    est.high = est.program_speedup + z95 * est.se;
    if (!std::isnan(est.bound) && !std::isnan(est.se)) {
      est.high = est.bound;  // a bound is a contended point's: the freed core may go to the critical path
    }
    eff.curve.push_back(est);
  }

  // Every speedup of the line inserted no delay: nothing was tried, and its
  // points at s > 0 are baselines by another name (section 2).
  if (!measured.empty() && untreated_measured == eff.measured_experiments) {
    measured.clear();
    eff.measured_experiments = 0;
    eff.curve.erase(std::remove_if(eff.curve.begin(), eff.curve.end(),
                                   [](const SpeedupEstimate& p) { return p.line_speedup > 0.0; }),
                    eff.curve.end());
  }
  eff.measured = !measured.empty();
  if (eff.measured) {
    Combination impact = combine(measured, trapezoid_coefficients(measured), phi, x0, d);
    Combination slope = combine(measured, slope_coefficients(measured), phi, x0, d);
    eff.impact = impact.value;
    eff.impact_se = impact.se;
    // The 95% confidence sequence: the user and the monitor look many times.
    const double half = anytime_half_width(impact.se, false_discovery_rate);
    eff.impact_low = impact.value - half;
    eff.impact_high = impact.value + half;
    eff.slope = slope.value;
    eff.slope_se = slope.se;
    eff.slope_low = slope.value - z95 * slope.se;
    eff.slope_high = slope.value + z95 * slope.se;
    eff.max_effect = -std::numeric_limits<double>::infinity();
    for (const Measured& p : measured) eff.max_effect = std::max(eff.max_effect, p.delta);
  }
  if (!eff.measured) eff.label = Label::Unmeasured;  // decide() labels the rest, over the whole point
  return eff;
}

// A line's share of the program's CPU time (section 5.1), NaN when unknown.
using CpuShares = std::function<double(const std::string& line)>;

// The causal part of the analysis (sections 2-8) over some experiments:
// every point's summary and the effects kept by the options, ranked.
struct CausalEffects {
  std::vector<PointSummary> points;
  std::vector<LineEffect> effects;
};

CausalEffects causal_effects(const std::vector<const Experiment*>& experiments, const AnalysisOptions& options,
                             const CpuShares& cpu_shares) {
  std::map<PointKey, PointData> points;
  for (const Experiment* e : experiments) {
    int bucket = speedup_bucket(e->speedup);
    const bool untreated = bucket > 0 && e->selected_samples == 0;
    for (const ThroughputMeasurement& t : e->throughput) {
      points[{t.name, PointKind::Throughput}].observations.push_back(
          {&e->selected, bucket, t.delta, static_cast<double>(e->duration_ns), e->duration_ns, untreated, e});
    }
    for (const LatencyMeasurement& l : e->latency) {
      PointData& d = points[{l.name, PointKind::Latency}];
      if (e->duration_ns == 0) continue;  // no arrival rate: says nothing about latency
      double in_flight = l.mean_in_flight >= 0.0 ? l.mean_in_flight : static_cast<double>(l.difference);
      d.observations.push_back({&e->selected, bucket, l.arrivals, static_cast<double>(e->duration_ns) * in_flight,
                                e->duration_ns, untreated, e});
    }
  }

  CausalEffects result;
  for (auto& [key, d] : points) {
    for (size_t i = 0; i < d.observations.size(); ++i) {
      if (d.observations[i].bucket == 0) d.baseline.add(d.observations[i], i);
    }
    if (options.baseline == Baseline::Local) apply_local_baseline(d);
    for (size_t i = 0; i < d.observations.size(); ++i) {
      const Observation& o = d.observations[i];
      d.cells[{*o.line, o.bucket}].add(o, i);
    }
    estimate_dispersion(key.second, d);

    PointSummary summary;
    std::tie(summary.name, summary.kind) = key;
    summary.experiments = d.observations.size();
    summary.dispersion = d.dispersion;
    summary.dispersion_dof = d.dof;
    summary.baseline_ns = d.baseline.usable_baseline() ? d.baseline.ratio() : nan;
    summary.baseline_experiments = d.baseline.n;
    summary.baseline_visits = d.baseline.x;
    summarize_cores(d, summary);
    summarize_hand_offs(d, summary);

    // Verdicts are over every line of the point, whatever the filters keep.
    std::set<std::string> lines;
    for (const auto& [cell_key, cell] : d.cells) lines.insert(cell_key.first);
    std::vector<LineEffect> all;
    for (const std::string& line : lines) {
      all.push_back(make_effect(line, key, d, summary, cpu_shares(line), options));
    }
    decide(all, summary);
    withhold_labels(all, summary);
    result.points.push_back(summary);

    if (!options.point.empty() && !point_is(key.first, options.point)) continue;
    for (LineEffect& eff : all) {
      if (eff.experiments >= options.min_experiments) result.effects.push_back(std::move(eff));
    }
  }
  std::sort(result.points.begin(), result.points.end(), [](const PointSummary& a, const PointSummary& b) {
    if (a.name != b.name) return a.name < b.name;
    return std::string_view(to_string(a.kind)) < std::string_view(to_string(b.kind));
  });
  std::stable_sort(result.effects.begin(), result.effects.end(), ranks_before);
  return result;
}

// The first `k` measured lines of a point in a ranking.
std::vector<std::string> top_lines(const std::vector<LineEffect>& ranked, const PointSummary& point, size_t k) {
  std::vector<std::string> top;
  for (const LineEffect& e : ranked) {
    if (top.size() == k) break;
    if (e.measured && e.point == point.name && e.kind == point.kind) top.push_back(e.line);
  }
  return top;
}

// Split-half agreement (section 8): even- and odd-numbered experiments.
std::vector<Stability> stability(const Profile& profile, const AnalysisOptions& options, const CpuShares& cpu_shares,
                                 const CausalEffects& whole) {
  std::vector<const Experiment*> halves[2];
  for (size_t i = 0; i < profile.experiments.size(); ++i) halves[i % 2].push_back(&profile.experiments[i]);
  CausalEffects a = causal_effects(halves[0], options, cpu_shares);
  CausalEffects b = causal_effects(halves[1], options, cpu_shares);
  std::vector<Stability> result;
  for (const PointSummary& point : whole.points) {
    size_t measured = top_lines(whole.effects, point, stability_top).size();
    if (measured == 0) continue;
    std::vector<std::string> top_a = top_lines(a.effects, point, measured);
    std::vector<std::string> top_b = top_lines(b.effects, point, measured);
    Stability s{point.name, point.kind, measured, 0};
    for (const std::string& line : top_a) {
      s.agree += std::find(top_b.begin(), top_b.end(), line) != top_b.end();
    }
    result.push_back(s);
  }
  return result;
}

// A line's samples (section 9): its own `samples` records, or for a function
// unit (coz run --granularity function) those of every line of the function.
struct LineSampleCount {
  uint64_t samples = 0;
  std::string function;
  bool unit = false;
};

LineSampleCount line_samples(const Profile& profile, const std::string& line) {
  LineSampleCount c;
  auto found = profile.samples.find(line);
  if (found != profile.samples.end()) {
    c.samples = found->second.count;
    c.function = found->second.function;
  } else if (std::string unit = function_of_unit(profile, line); !unit.empty()) {
    c.function = unit;
    c.unit = true;
    for (const auto& [location, s] : profile.samples) {
      if (s.function == unit) c.samples += s.count;
    }
  }
  return c;
}

}  // namespace

std::string function_of_unit(const Profile& profile, const std::string& name) {
  std::string best;
  for (const auto& [location, s] : profile.samples) {
    const std::string& function = s.function;
    if (function.size() <= best.size() || name.size() <= function.size()) continue;
    size_t at = name.size() - function.size();
    if (name[at - 1] == ':' && name.compare(at, std::string::npos, function) == 0) best = function;
  }
  return best;
}

Analysis analyze(const Profile& profile, const AnalysisOptions& options) {
  Analysis result;
  result.options = options;
  result.experiments = profile.experiments.size();
  result.runtime_ns = profile.runtime_ns;
  result.experiments_stopped = profile.experiments_stopped;
  result.warnings = profile.warning_places;
  result.profile = conventional_profile(profile);
  if (profile.sampling.processes > 0) result.sampling = profile.sampling;
  for (const auto& [location, s] : profile.samples) {
    // Saturating: the reader already caps each count, garbage must not wrap the sum.
    uint64_t room = std::numeric_limits<uint64_t>::max() - result.total_samples;
    result.total_samples += std::min(s.count, room);
  }

  // Section 5.1: samples * attributed_ns / (total_samples * cpu_time_ns).
  const SamplingTotals& sampling = profile.sampling;
  const uint64_t total_samples = result.total_samples;
  std::map<std::string, double> shares;  // asked for every line of every point, and again by each half
  CpuShares cpu_shares = [&](const std::string& line) {
    if (total_samples == 0 || sampling.timed == 0 || sampling.cpu_time_ns == 0) return nan;
    auto [it, fresh] = shares.try_emplace(line, nan);
    if (fresh) {
      const double samples = static_cast<double>(line_samples(profile, line).samples);
      it->second = (samples * static_cast<double>(sampling.attributed_ns)) /
                   (static_cast<double>(total_samples) * static_cast<double>(sampling.cpu_time_ns));
    }
    return it->second;
  };

  std::vector<const Experiment*> experiments;
  for (const Experiment& e : profile.experiments) experiments.push_back(&e);
  CausalEffects causal = causal_effects(experiments, options, cpu_shares);
  result.stability = stability(profile, options, cpu_shares, causal);
  result.points = std::move(causal.points);
  result.effects = std::move(causal.effects);
  for (LineEffect& eff : result.effects) {
    const LineSampleCount count = line_samples(profile, eff.line);
    eff.samples = count.samples;
    eff.function = count.function;
    eff.function_unit = count.unit;  // a function unit (coz run --granularity function): all the lines of the function
    if (auto it = result.profile.callees.find(eff.line); it != result.profile.callees.end()) eff.callee = it->second;
    if (result.total_samples > 0) {
      eff.sample_share = static_cast<double>(eff.samples) / static_cast<double>(result.total_samples);
    }
  }
  result.percentiles = analyze_percentiles(profile);
  return result;
}

double seconds_per_experiment(const Analysis& analysis) {
  if (analysis.experiments == 0 || analysis.runtime_ns == 0) return undefined;
  return static_cast<double>(analysis.runtime_ns) / 1e9 / static_cast<double>(analysis.experiments);
}

bool point_is(std::string_view name, std::string_view wanted) {
  if (name == wanted) return true;
  return name.size() > wanted.size() + 3 && name.substr(0, wanted.size()) == wanted &&
         name.substr(wanted.size(), 2) == " [" && name.back() == ']';
}

}  // namespace coz::analysis
