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

// The two-sided normal p-value of an estimate and its standard error.
double p_value(double estimate, double se) {
  if (se == 0.0) return estimate == 0.0 ? 1.0 : 0.0;
  double z = std::abs(estimate) / se;
  return erfc_approx(z * 0.7071067811865476);
}

bool tested(const LineEffect& e) { return e.measured && !std::isnan(e.impact_se); }

bool eligible(const LineEffect& e) { return tested(e) && e.measured_experiments >= min_settle_experiments; }

/// `z_next`: the |impact| / se an undecided line needs to join the discoveries.
void set_label(LineEffect& e, bool discovery, double z_next) {
  if (!e.measured) {
    e.label = Label::Unmeasured;
    return;
  }
  if (!tested(e)) {
    e.label = Label::InsufficientData;
    return;
  }
  double half = z95 * e.impact_se;
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
  // experiments.
  double magnitude = std::abs(e.impact);
  double qe = magnitude > 0.0 ? z_next * e.impact_se / magnitude : std::numeric_limits<double>::infinity();
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

double erfc_approx(double x) {
  double t = 1.0 / (1.0 + 0.5 * x);
  return t * std::exp(-x * x - 1.26551223 +
                      t * (1.00002368 +
                           t * (0.37409196 +
                                t * (0.09678418 +
                                     t * (-0.18628806 +
                                          t * (0.27886807 +
                                               t * (-1.13520398 +
                                                    t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
}

double upper_quantile_approx(double q) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  double lower;
  if (q < 0.02425) {
    double u = std::sqrt(-2.0 * std::log(q));
    lower = (((((c[0] * u + c[1]) * u + c[2]) * u + c[3]) * u + c[4]) * u + c[5]) /
            ((((d[0] * u + d[1]) * u + d[2]) * u + d[3]) * u + 1.0);
  } else {
    double v = q - 0.5;
    double w = v * v;
    lower = (((((a[0] * w + a[1]) * w + a[2]) * w + a[3]) * w + a[4]) * w + a[5]) * v /
            (((((b[0] * w + b[1]) * w + b[2]) * w + b[3]) * w + b[4]) * w + 1.0);
  }
  return -lower;
}

void decide(std::vector<LineEffect>& effects, PointSummary& point) {
  // An undefined dispersion leaves every impact_se NaN: nothing is tested.
  std::vector<double> eligible_p;
  uint64_t m = 0;
  for (LineEffect& e : effects) {
    e.p_value = nan;
    e.adjusted_low = e.adjusted_high = nan;
    if (!tested(e)) continue;
    ++m;
    e.p_value = p_value(e.impact, e.impact_se);
    if (eligible(e)) eligible_p.push_back(e.p_value);
  }
  std::sort(eligible_p.begin(), eligible_p.end());
  // Benjamini-Hochberg: the largest k with p_(k) <= k * alpha / m.
  size_t discoveries = 0;
  for (size_t k = 1; k <= eligible_p.size(); ++k) {
    double threshold = (static_cast<double>(k) * false_discovery_rate) / static_cast<double>(m);
    if (eligible_p[k - 1] <= threshold) discoveries = k;
  }
  point.tested = m;
  point.discoveries = discoveries;
  point.adjusted_z = nan;
  double cutoff = -1.0;
  if (discoveries > 0) {
    cutoff = eligible_p[discoveries - 1];
    point.adjusted_z = upper_quantile_approx((static_cast<double>(discoveries) * false_discovery_rate) /
                                             (2.0 * static_cast<double>(m)));
  }
  double z_next = m > 0 ? upper_quantile_approx((static_cast<double>(discoveries + 1) * false_discovery_rate) /
                                                (2.0 * static_cast<double>(m)))
                        : z95;
  for (LineEffect& e : effects) {
    bool discovery = eligible(e) && e.p_value <= cutoff;
    if (discovery) {
      e.adjusted_low = e.impact - point.adjusted_z * e.impact_se;
      e.adjusted_high = e.impact + point.adjusted_z * e.impact_se;
    }
    set_label(e, discovery, z_next);
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
