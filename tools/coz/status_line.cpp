#include "status_line.h"

#include <cmath>

#include <fmt/core.h>

namespace coz::cli {
namespace {

std::string clock(uint64_t ns) {
  uint64_t s = ns / 1'000'000'000u;
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60) : fmt::format("{}:{:02}", s / 60, s % 60);
}

/// "pipeline.cpp:46" for "/src/app/pipeline.cpp:46": the line must fit.
std::string short_location(const std::string& location) {
  size_t slash = location.rfind('/');
  return slash == std::string::npos ? location : location.substr(slash + 1);
}

std::string leader(const analysis::PointSettling& p) {
  if (p.leader.empty()) return "no line measured yet";
  std::string verdict = analysis::settled_label(p.leader_label) ? "" : " (open)";
  std::string text = fmt::format("{} {:+.1f}%", short_location(p.leader), p.leader_impact * 100.0);
  if (std::isfinite(p.leader_half_width)) text += fmt::format(" ±{:.1f}", p.leader_half_width * 100.0);
  return text + verdict;
}

}  // namespace

std::string format_status(const StatusInput& in, size_t width) {
  std::string text = fmt::format("coz {} | {} exps", clock(in.elapsed_ns), in.run_experiments);
  if (in.state) {
    size_t settled = 0, open = 0;
    for (const auto& p : in.state->points) {
      settled += p.settled;
      open += p.open;
    }
    if (!in.state->points.empty()) text += " | " + leader(in.state->points.front());
    text += fmt::format(" | {} settled, {} open", settled, open);
    if (!in.stopped.empty()) {
      text += in.stopped == "settled" ? " | settled: experiments stopped"
                                      : fmt::format(" | experiments stopped ({})", in.stopped);
    } else if (in.state->settled) {
      text += fmt::format(" | top {} settled", in.top);
    } else if (in.state->contended) {
      text += " | cores contended: no verdicts";
    } else if (in.seconds_left) {
      text += fmt::format(" | ~{} left", analysis::format_settle_time(*in.seconds_left));
    }
  }
  if (text.size() > width && width > 3) {
    // Cut at a character boundary: "±" is two bytes.
    size_t cut = width - 1;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "…";
  }
  return text;
}

}  // namespace coz::cli
