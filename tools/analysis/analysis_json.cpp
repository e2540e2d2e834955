#include "analysis_json.h"

#include "json_string.h"
#include "verdicts.h"

#include <cmath>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

namespace coz::analysis {
namespace {

// Appends `"key": value` pairs with commas; objects and arrays nest by hand so
// the output keeps one effect / curve point per line, readable in a diff.
class Json {
 public:
  Json() = default;
  /// Writes to `sink` as it goes, a piece at a time: the JSON of a profile
  /// with millions of lines is hundreds of MB, which need not sit in memory.
  explicit Json(std::ostream* sink) : sink_(sink) {}

  std::string out;

  /// Hands what is written so far to the sink (nothing without one).
  void flush() {
    if (sink_ && !out.empty()) {
      sink_->write(out.data(), static_cast<std::streamsize>(out.size()));
      out.clear();
    }
  }

  Json& key(std::string_view k) {
    string(k);
    out += ": ";
    need_comma_ = false;
    return *this;
  }
  Json& open(char c) {
    if (need_comma_) out += ", ";
    out += c;
    need_comma_ = false;
    return *this;
  }
  Json& close(char c) {
    out += c;
    need_comma_ = true;
    return *this;
  }
  /// A line break between two members (the pending comma goes before it).
  Json& newline(int indent) {
    if (need_comma_) out += ',';
    need_comma_ = false;
    return closing_newline(indent);
  }
  /// A line break before a closing bracket.
  Json& closing_newline(int indent) {
    out += '\n';
    out.append(static_cast<size_t>(indent), ' ');
    return *this;
  }

  // Names and paths are bytes: json_string.h says how invalid UTF-8 is written.
  Json& string(std::string_view s) {
    comma();
    append_json_string(out, s);
    need_comma_ = true;
    return *this;
  }
  // Shortest text that reads back as the same double, so scripts comparing
  // against the report see exactly what the analysis computed.
  Json& number(double v) {
    comma();
    if (std::isfinite(v)) {
      fmt::format_to(std::back_inserter(out), "{}", v);
    } else {
      out += "null";
    }
    need_comma_ = true;
    return *this;
  }
  Json& integer(uint64_t v) {
    comma();
    fmt::format_to(std::back_inserter(out), "{}", v);
    need_comma_ = true;
    return *this;
  }
  Json& signed_integer(int64_t v) {
    comma();
    fmt::format_to(std::back_inserter(out), "{}", v);
    need_comma_ = true;
    return *this;
  }
  Json& boolean(bool v) {
    comma();
    out += v ? "true" : "false";
    need_comma_ = true;
    return *this;
  }
  Json& null() {
    comma();
    out += "null";
    need_comma_ = true;
    return *this;
  }

  Json& field(std::string_view k, std::string_view v) { return key(k).string(v); }
  Json& field(std::string_view k, const char* v) { return key(k).string(v); }
  Json& field(std::string_view k, double v) { return key(k).number(v); }
  Json& field(std::string_view k, uint64_t v) { return key(k).integer(v); }
  Json& field(std::string_view k, bool v) { return key(k).boolean(v); }

  /// Elements of an array, each on its own line at `indent`.
  template <typename T, typename F>
  Json& array(std::string_view k, const std::vector<T>& items, int indent, F&& each) {
    key(k).open('[');
    for (const T& item : items) {
      newline(indent);
      each(item);
      if (out.size() >= flush_bytes) flush();
    }
    if (!items.empty()) closing_newline(indent - 2);
    return close(']');
  }

 private:
  static constexpr size_t flush_bytes = 1 << 20;
  void comma() {
    if (need_comma_) out += ", ";
  }
  std::ostream* sink_ = nullptr;
  bool need_comma_ = false;
};

void settings(Json& j, const AnalysisOptions& o) {
  j.key("settings").open('{');
  j.field("confidence", 0.95).field("z", z95).field("settle_half_width", settle_half_width);
  j.field("speedup_step", 1.0 / speedup_steps_per_unit);
  j.field("baseline", to_string(o.baseline));
  j.field("point", o.point).field("min_experiments", o.min_experiments);
  j.field("false_discovery_rate", false_discovery_rate).field("min_settle_experiments", min_settle_experiments);
  j.field("mixture_scale", mixture_scale).field("equivalence_mixture_scale", equivalence_mixture_scale);
  j.close('}');
}

// `"callee": {...}` or `"callee": null`.
void callee(Json& j, const Callee* c) {
  j.key("callee");
  if (!c) {
    j.null();
    return;
  }
  j.open('{').field("function", c->function).field("library", c->library);
  j.field("samples", c->samples).field("stack_samples", c->stack_samples).field("share", c->share);
  j.close('}');
}

void curve_point(Json& j, const SpeedupEstimate& p) {
  j.open('{');
  j.field("line_speedup", p.line_speedup).field("program_speedup", p.program_speedup);
  j.field("se", p.se).field("low", p.low).field("high", p.high);
  j.field("experiments", p.experiments).field("visits", p.visits).field("duration_ns", p.duration_ns);
  j.field("value_ns", p.value_ns).field("bound", p.bound).field("bounded", p.bounded);
  j.close('}');
}

void effect(Json& j, const LineEffect& e) {
  j.open('{');
  j.field("line", e.line).field("point", e.point).field("kind", to_string(e.kind));
  j.field("label", to_string(e.label));
  j.key("withheld");
  if (e.withheld == Withheld::No) j.null();
  else j.string(to_string(e.withheld));
  j.newline(5);
  j.field("impact", e.impact).field("impact_se", e.impact_se);
  j.field("impact_low", e.impact_low).field("impact_high", e.impact_high);
  j.newline(5);
  j.field("slope", e.slope).field("slope_se", e.slope_se);
  j.field("slope_low", e.slope_low).field("slope_high", e.slope_high);
  j.newline(5);
  j.field("max_effect", e.max_effect).field("experiments", e.experiments);
  j.key("experiments_needed");
  if (e.experiments_needed) {
    j.integer(*e.experiments_needed);
  } else {
    j.null();
  }
  j.newline(5);
  j.field("measured_experiments", e.measured_experiments).field("untreated_experiments", e.untreated_experiments);
  j.field("p_value", e.p_value);
  j.field("adjusted_low", e.adjusted_low).field("adjusted_high", e.adjusted_high);
  j.newline(5);
  j.field("samples", e.samples).field("sample_share", e.sample_share).field("function", e.function);
  j.field("function_unit", e.function_unit);
  j.newline(5);
  callee(j, e.callee ? &*e.callee : nullptr);
  j.newline(5);
  j.field("measured", e.measured).field("baseline", to_string(e.baseline)).field("baseline_ns", e.baseline_ns);
  j.field("cpu_share", e.cpu_share);
  j.field("dispersion", e.dispersion);
  j.newline(5);
  j.array("curve", e.curve, 7, [&](const SpeedupEstimate& p) { curve_point(j, p); });
  j.close('}');
}

void point_summary(Json& j, const PointSummary& p) {
  j.open('{');
  j.field("name", p.name).field("kind", to_string(p.kind)).field("experiments", p.experiments);
  j.field("dispersion", p.dispersion);
  j.key("dispersion_dof").signed_integer(p.dispersion_dof);
  j.field("baseline_ns", p.baseline_ns).field("baseline_experiments", p.baseline_experiments);
  j.field("baseline_visits", p.baseline_visits);
  j.field("tested", p.tested).field("discoveries", p.discoveries).field("adjusted_level", p.adjusted_level);
  j.key("cores");
  if (p.cores > 0) j.integer(p.cores);
  else j.null();
  j.field("cores_busy", p.cores_busy).field("waiting_for_core", p.waiting_for_core).field("contended", p.contended);
  j.field("hand_offs_per_second", p.hand_offs_per_second).field("fast_hand_offs", p.fast_hand_offs);
  j.close('}');
}

void percentile_change(Json& j, const PercentileChange& c) {
  j.open('{').field("latency_ns", c.latency_ns).field("change", c.change);
  j.field("low", c.low).field("high", c.high).close('}');
}

template <typename T, typename F>
void per_level(Json& j, std::string_view k, const T& values, F&& each) {
  j.key(k).open('[');
  for (const auto& v : values) each(v);
  j.close(']');
}

/// docs/analysis.md section 13: a latency point's percentiles; written only for points with request histograms.
void point_percentiles(Json& j, const PointPercentiles& p) {
  j.open('{');
  j.field("name", p.point).field("requests", p.requests).field("baseline_experiments", p.baseline_experiments);
  j.field("baseline_requests", p.baseline_requests);
  per_level(j, "levels", percentile_levels, [&](double level) { j.number(level); });
  per_level(j, "baseline_ns", p.baseline_ns, [&](double v) { j.number(v); });
  per_level(j, "design_effect", p.design_effect, [&](double v) { j.number(v); });
  j.newline(5);
  j.array("lines", p.lines, 7, [&](const LinePercentiles& l) {
    j.open('{').field("line", l.line);
    per_level(j, "at_half", l.at_half, [&](const PercentileChange& c) { percentile_change(j, c); });
    j.key("curve").open('[');
    for (const PercentileCell& c : l.curve) {
      j.open('{').field("line_speedup", c.line_speedup).field("experiments", c.experiments);
      j.field("requests", c.requests);
      per_level(j, "levels", c.levels, [&](const PercentileChange& pc) { percentile_change(j, pc); });
      j.close('}');
    }
    j.close(']').close('}');
  });
  j.close('}');
}

void split_frames(Json& j, std::string_view frames) {
  j.open('[');
  while (true) {
    size_t end = frames.find(';');
    j.string(frames.substr(0, end));
    if (end == std::string_view::npos) break;
    frames.remove_prefix(end + 1);
  }
  j.close(']');
}

void conventional(Json& j, const ConventionalProfile& p) {
  j.key("profile").open('{');
  j.newline(4);
  j.array("lines", p.lines, 6, [&](const LineSamples& l) {
    j.open('{').field("location", l.location).field("function", l.function);
    j.field("samples", l.samples).field("share", l.share);
    callee(j, l.callee.get());
    j.close('}');
  });
  j.newline(4);
  j.array("functions", p.functions, 6, [&](const FunctionSamples& f) {
    j.open('{').field("function", f.function).field("samples", f.samples);
    j.field("share", f.share).field("lines", f.lines).close('}');
  });
  j.newline(4);
  j.array("stacks", p.stacks, 6, [&](const StackSamples& s) {
    j.open('{').key("frames");
    split_frames(j, s.frames);
    j.field("count", s.count).field("share", s.share).close('}');
  });
  j.newline(4);
  j.array("blocked", p.blocked, 6, [&](const BlockedSite& b) {
    j.open('{').field("site", b.site).field("kind", b.kind);
    j.field("time_ns", b.time_ns).field("count", b.count).close('}');
  });
  j.closing_newline(2);
  j.close('}');
}

void effect_side(Json& j, std::string_view k, const std::optional<EffectSide>& s) {
  j.key(k);
  if (!s) {
    j.null();
    return;
  }
  j.open('{');
  j.field("impact", s->impact).field("impact_se", s->impact_se);
  j.field("impact_low", s->impact_low).field("impact_high", s->impact_high);
  j.field("slope", s->slope).field("label", to_string(s->label)).field("experiments", s->experiments);
  j.close('}');
}

void files(Json& j, std::string_view k, const std::vector<std::string>& names, const Analysis& a) {
  j.key(k).open('{').key("files").open('[');
  for (const std::string& n : names) j.string(n);
  j.close(']').field("experiments", a.experiments).close('}');
}

void analysis_json(Json& j, const Analysis& a) {
  j.open('{');
  j.newline(2).field("format", "coz-analysis").field("version", static_cast<uint64_t>(json_schema_version));
  j.newline(2);
  settings(j, a.options);
  j.newline(2).field("experiments", a.experiments).field("runtime_ns", a.runtime_ns);
  j.newline(2).array("experiments_stopped", a.experiments_stopped, 4, [&](const std::string& r) { j.string(r); });
  j.field("total_samples", a.total_samples);
  j.newline(2).key("sampling");
  if (a.sampling) {
    j.open('{').field("processes", a.sampling->processes).field("samples", a.sampling->samples);
    j.field("in_scope", a.sampling->in_scope).field("lost", a.sampling->lost);
    if (a.sampling->timed > 0) {
      j.field("attributed_ns", a.sampling->attributed_ns).field("cpu_time_ns", a.sampling->cpu_time_ns);
    } else {
      j.key("attributed_ns").null();
      j.key("cpu_time_ns").null();
    }
    j.field("steal_ns", a.sampling->steal_ns).field("machine_ns", a.sampling->machine_ns);
    j.close('}');
  } else {
    j.null();
  }
  j.newline(2).array("points", a.points, 4, [&](const PointSummary& p) { point_summary(j, p); });
  j.newline(2).array("effects", a.effects, 4, [&](const LineEffect& e) { effect(j, e); });
  // Only where requests were measured: profiles without them keep their JSON as it was.
  if (!a.percentiles.empty()) {
    j.newline(2).array("percentiles", a.percentiles, 4, [&](const PointPercentiles& p) { point_percentiles(j, p); });
  }
  j.newline(2);
  conventional(j, a.profile);
  j.newline(2).array("stability", a.stability, 4, [&](const Stability& s) {
    j.open('{').field("name", s.name).field("kind", to_string(s.kind));
    j.field("top", s.top).field("agree", s.agree).close('}');
  });
  j.newline(2).array("warnings", a.warnings, 4, [&](const WarningPlace& w) {
    j.open('{').field("file", w.file).field("line", w.line).field("message", w.message).close('}');
  });
  j.closing_newline(0).close('}');
  j.out += '\n';
}

}  // namespace

std::string to_json(const Analysis& a) {
  Json j;
  analysis_json(j, a);
  return j.out;
}

void write_json(std::ostream& out, const Analysis& a) {
  Json j(&out);
  analysis_json(j, a);
  j.flush();
}

std::string to_json(const Comparison& c, const Analysis& before, const Analysis& after,
                    const std::vector<std::string>& before_files, const std::vector<std::string>& after_files) {
  Json j;
  j.open('{');
  j.newline(2).field("format", "coz-compare").field("version", static_cast<uint64_t>(json_schema_version));
  j.newline(2);
  settings(j, before.options);
  j.newline(2);
  files(j, "before", before_files, before);
  j.newline(2);
  files(j, "after", after_files, after);
  j.newline(2).array("points", c.points, 4, [&](const ComparedPoint& p) {
    j.open('{').field("name", p.name).field("kind", to_string(p.kind));
    j.field("before_ns", p.before_ns).field("after_ns", p.after_ns).field("speedup", p.speedup);
    j.field("se", p.se).field("low", p.low).field("high", p.high).close('}');
  });
  j.newline(2).array("lines", c.lines, 4, [&](const ComparedLine& l) {
    j.open('{').field("line", l.line).field("point", l.point).field("kind", to_string(l.kind));
    j.newline(5);
    effect_side(j, "before", l.before);
    j.newline(5);
    effect_side(j, "after", l.after);
    j.newline(5);
    j.field("change", l.change).field("change_se", l.change_se);
    j.field("change_low", l.change_low).field("change_high", l.change_high);
    j.field("verdict", to_string(l.verdict)).close('}');
  });
  j.closing_newline(0).close('}');
  j.out += '\n';
  return j.out;
}

}  // namespace coz::analysis
