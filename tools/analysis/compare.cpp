// docs/analysis.md section 10: each side is analysed on its own (its own
// dispersion and baselines); the two sides share no experiment, so their
// variances add.
#include "compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace coz::analysis {

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::More: return "more";
    case Verdict::Less: return "less";
    case Verdict::Same: return "same";
    case Verdict::OnlyBefore: return "only-before";
    case Verdict::OnlyAfter: return "only-after";
    case Verdict::Unknown: break;
  }
  return "unknown";
}

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

using Key = std::tuple<std::string, std::string, std::string>;  // line, point, kind name

EffectSide side(const LineEffect& e) {
  return {e.impact, e.impact_se, e.impact_low, e.impact_high, e.slope, e.label, e.experiments};
}

bool comparable(const EffectSide& s) { return s.label != Label::Unmeasured && std::isfinite(s.impact_se); }

}  // namespace

Comparison compare(const Analysis& before, const Analysis& after) {
  Comparison out;
  for (const PointSummary& b : before.points) {
    for (const PointSummary& a : after.points) {
      if (a.name != b.name || a.kind != b.kind) continue;
      if (!(b.baseline_ns > 0.0) || !(a.baseline_ns > 0.0)) continue;  // NaN too
      ComparedPoint p;
      p.name = b.name;
      p.kind = b.kind;
      p.before_ns = b.baseline_ns;
      p.after_ns = a.baseline_ns;
      double r = a.baseline_ns / b.baseline_ns;
      p.speedup = 1.0 - r;
      p.se = r * std::sqrt(b.dispersion / static_cast<double>(b.baseline_visits) +
                           a.dispersion / static_cast<double>(a.baseline_visits));
      p.low = p.speedup - z95 * p.se;
      p.high = p.speedup + z95 * p.se;
      out.points.push_back(p);
    }
  }

  std::map<Key, ComparedLine> lines;
  auto entry = [&](const LineEffect& e) -> ComparedLine& {
    ComparedLine& l = lines[{e.line, e.point, to_string(e.kind)}];
    l.line = e.line;
    l.point = e.point;
    l.kind = e.kind;
    return l;
  };
  for (const LineEffect& e : before.effects) entry(e).before = side(e);
  for (const LineEffect& e : after.effects) entry(e).after = side(e);
  for (auto& [key, l] : lines) {
    l.change = l.change_se = l.change_low = l.change_high = nan;
    if (!l.after) {
      l.verdict = Verdict::OnlyBefore;
      continue;
    }
    if (!l.before) {
      l.verdict = Verdict::OnlyAfter;
      continue;
    }
    if (!comparable(*l.before) || !comparable(*l.after)) continue;  // Unknown
    l.change = l.after->impact - l.before->impact;
    l.change_se = std::sqrt(l.before->impact_se * l.before->impact_se + l.after->impact_se * l.after->impact_se);
    l.change_low = l.change - z95 * l.change_se;
    l.change_high = l.change + z95 * l.change_se;
    l.verdict = l.change_low > 0.0 ? Verdict::More : l.change_high < 0.0 ? Verdict::Less : Verdict::Same;
  }
  for (auto& [key, l] : lines) out.lines.push_back(std::move(l));
  // std::map order gives the (line, point, kind) tie-break.
  std::stable_sort(out.lines.begin(), out.lines.end(), [](const ComparedLine& a, const ComparedLine& b) {
    bool an = std::isnan(a.change);
    bool bn = std::isnan(b.change);
    if (an != bn) return bn;
    return !an && std::abs(a.change) > std::abs(b.change);
  });
  return out;
}

}  // namespace coz::analysis
