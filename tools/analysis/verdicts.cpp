// Verdicts (docs/analysis.md sections 7-8). Every expression is evaluated in
// the order the document writes it, so the viewer gets the same doubles.
#include "verdicts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

namespace coz::analysis {

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

bool tested(const LineEffect& e) { return e.measured && !std::isnan(e.impact_se); }

bool eligible(const LineEffect& e) { return tested(e) && e.measured_experiments >= min_settle_experiments; }

/// `level_next`: the level at which an undecided line's confidence sequence
/// must exclude 0 for it to join the discoveries.
void set_label(LineEffect& e, bool discovery, double level_next) {
  if (!e.measured) {
    e.label = Label::Unmeasured;
    return;
  }
  if (!tested(e)) {
    e.label = Label::InsufficientData;
    return;
  }
  // "No effect" is an equivalence: two one-sided tests, each at the false
  // discovery rate, so the two-sided sequence at twice it, with its own scale.
  double half = anytime_half_width(e.impact_se, 2.0 * false_discovery_rate, equivalence_mixture_scale);
  // An effect inside the no-effect band is none, however sure: a real
  // program's virtual speedups carry biases of a percent or two (a pause's
  // own cost), which enough experiments make significant. Its size is read
  // at a 50% line speedup from the slope, whatever speedups were measured
  // (the impact of a run at --fixed-speedup 50 is the mean over 0..50%:
  // half its effect at 50%). A NaN slope counts as material.
  const bool material = !(std::abs(e.slope) * material_line_speedup < settle_half_width);
  if (discovery && material) {
    e.label = e.impact > 0.0 ? Label::Positive : Label::Negative;
  } else if (eligible(e) && !material && half <= settle_half_width) {
    e.label = Label::NoEffect;
  } else {
    e.label = Label::Undecided;
  }
  if (e.label != Label::Undecided) {
    e.experiments_needed = 0;
    return;
  }
  // How many more experiments, at this line's current split, until the
  // interval excludes 0 at the level of a discovery or is narrower than
  // +-settle_half_width; a thin line needs at least its missing measured
  // experiments. (The boundaries' z at today's standard error: it grows
  // slowly, as the log of the experiments, so this is a little short.)
  double magnitude = std::abs(e.impact);
  double qe = magnitude > 0.0 ? anytime_half_width(e.impact_se, level_next) / magnitude
                              : std::numeric_limits<double>::infinity();
  double qh = half / settle_half_width;
  double f = std::min(qe * qe, qh * qh);
  double needed = std::ceil(static_cast<double>(e.experiments) * (f - 1.0));
  double missing = e.measured_experiments < min_settle_experiments
                       ? static_cast<double>(min_settle_experiments - e.measured_experiments)
                       : 0.0;
  needed = std::max({1.0, needed, missing});
  e.experiments_needed = static_cast<uint64_t>(std::min(needed, max_experiments_needed));
}

// Section 8's groups: thin undecided lines come after the other undecided ones.
int rank_group(const LineEffect& e) {
  switch (e.label) {
    case Label::Positive: return 0;
    case Label::Negative: return 1;
    case Label::NoEffect: return 2;
    case Label::Undecided: return e.measured_experiments < min_settle_experiments ? 4 : 3;
    case Label::InsufficientData: return 5;
    case Label::Unmeasured: break;
  }
  return 6;
}

// The bound an effect is ranked by within its group, larger first; NaN last.
double rank_bound(const LineEffect& e) {
  switch (e.label) {
    case Label::Positive: return e.adjusted_low;
    case Label::Negative: return -e.adjusted_high;
    case Label::Undecided: return e.impact_low;
    default: return e.impact;
  }
}

}  // namespace

double anytime_half_width(double se, double alpha, double scale) {
  if (std::isnan(se)) return nan;
  if (se <= 0.0) return 0.0;
  double u = (scale / se) * (scale / se);
  return se * std::sqrt((1.0 + 1.0 / u) * std::log((1.0 + u) / (alpha * alpha)));
}

double log_e_value(double estimate, double se) {
  if (se == 0.0) return estimate == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  double u = (mixture_scale / se) * (mixture_scale / se);
  double z = estimate / se;
  return z * z * u / (2.0 * (1.0 + u)) - 0.5 * std::log(1.0 + u);
}

void decide(std::vector<LineEffect>& effects, PointSummary& point) {
  // An undefined dispersion leaves every impact_se NaN: nothing is tested.
  std::vector<double> eligible_log_e;
  std::vector<double> log_e(effects.size(), -std::numeric_limits<double>::infinity());
  uint64_t m = 0;
  for (size_t i = 0; i < effects.size(); ++i) {
    LineEffect& e = effects[i];
    e.p_value = nan;
    e.adjusted_low = e.adjusted_high = nan;
    if (!tested(e)) continue;
    ++m;
    log_e[i] = log_e_value(e.impact, e.impact_se);
    e.p_value = std::min(1.0, std::exp(-log_e[i]));  // anytime-valid: 1/e
    if (eligible(e)) eligible_log_e.push_back(log_e[i]);
  }
  std::sort(eligible_log_e.begin(), eligible_log_e.end(), std::greater<>());
  // e-BH: the largest k whose k-th largest e-value is at least m / (alpha * k).
  size_t discoveries = 0;
  for (size_t k = 1; k <= eligible_log_e.size(); ++k) {
    double threshold = std::log(static_cast<double>(m) / (static_cast<double>(k) * false_discovery_rate));
    if (eligible_log_e[k - 1] >= threshold) discoveries = k;
  }
  point.tested = m;
  point.discoveries = discoveries;
  point.adjusted_level = nan;
  double cutoff = std::numeric_limits<double>::infinity();
  if (discoveries > 0) {
    cutoff = eligible_log_e[discoveries - 1];
    point.adjusted_level = (static_cast<double>(discoveries) * false_discovery_rate) / static_cast<double>(m);
  }
  double level_next = m > 0 ? (static_cast<double>(discoveries + 1) * false_discovery_rate) / static_cast<double>(m)
                            : false_discovery_rate;
  for (size_t i = 0; i < effects.size(); ++i) {
    LineEffect& e = effects[i];
    bool discovery = eligible(e) && log_e[i] >= cutoff;
    if (discovery) {
      double half = anytime_half_width(e.impact_se, point.adjusted_level);
      e.adjusted_low = e.impact - half;
      e.adjusted_high = e.impact + half;
    }
    set_label(e, discovery, level_next);
  }
}

bool ranks_before(const LineEffect& a, const LineEffect& b) {
  int ga = rank_group(a), gb = rank_group(b);
  if (ga != gb) return ga < gb;
  double ba = rank_bound(a), bb = rank_bound(b);
  if (std::isnan(ba) != std::isnan(bb)) return !std::isnan(ba);
  if (ba != bb && !std::isnan(ba)) return ba > bb;
  if (a.max_effect != b.max_effect) return a.max_effect > b.max_effect;
  if (a.line != b.line) return a.line < b.line;
  if (a.point != b.point) return a.point < b.point;
  return std::string_view(to_string(a.kind)) < std::string_view(to_string(b.kind));
}

}  // namespace coz::analysis
