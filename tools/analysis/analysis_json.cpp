#include "analysis_json.h"

#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace coz::analysis {
namespace {

void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;  // UTF-8 passes through; file names are bytes we do not reinterpret
        }
    }
  }
  out += '"';
}

// Shortest text that reads back as the same double, so scripts comparing
// against the report see exactly what the analysis computed.
void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}", v);
}

void append_curve_point(std::string& out, const SpeedupEstimate& p) {
  out += "        {\"line_speedup\": ";
  append_number(out, p.line_speedup);
  out += ", \"program_speedup\": ";
  append_number(out, p.program_speedup);
  fmt::format_to(std::back_inserter(out), ", \"experiments\": {}, \"visits\": {}, \"duration_ns\": {}",
                 p.experiments, p.visits, p.duration_ns);
  out += ", \"value_ns\": ";
  append_number(out, p.value_ns);
  out += '}';
}

void append_effect(std::string& out, const LineEffect& e) {
  out += "    {\"line\": ";
  append_string(out, e.line);
  out += ", \"point\": ";
  append_string(out, e.point);
  fmt::format_to(std::back_inserter(out), ", \"kind\": \"{}\",\n     \"impact\": ", to_string(e.kind));
  append_number(out, e.impact);
  out += ", \"max_effect\": ";
  append_number(out, e.max_effect);
  fmt::format_to(std::back_inserter(out), ", \"experiments\": {}, \"samples\": {}, \"sample_share\": ",
                 e.experiments, e.samples);
  append_number(out, e.sample_share);
  fmt::format_to(std::back_inserter(out), ",\n     \"measured\": {}, \"global_baseline\": {}, \"baseline_ns\": ",
                 e.measured, e.global_baseline);
  append_number(out, e.baseline_ns);
  out += ",\n     \"curve\": [";
  for (size_t i = 0; i < e.curve.size(); ++i) {
    out += i == 0 ? "\n" : ",\n";
    append_curve_point(out, e.curve[i]);
  }
  out += e.curve.empty() ? "]}" : "\n     ]}";
}

}  // namespace

std::string to_json(const Analysis& analysis) {
  std::string out;
  fmt::format_to(std::back_inserter(out), "{{\n  \"experiments\": {},\n  \"total_samples\": {},\n  \"points\": [",
                 analysis.experiments, analysis.total_samples);
  for (size_t i = 0; i < analysis.points.size(); ++i) {
    if (i > 0) out += ", ";
    append_string(out, analysis.points[i]);
  }
  out += "],\n  \"effects\": [";
  for (size_t i = 0; i < analysis.effects.size(); ++i) {
    out += i == 0 ? "\n" : ",\n";
    append_effect(out, analysis.effects[i]);
  }
  out += analysis.effects.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

}  // namespace coz::analysis
