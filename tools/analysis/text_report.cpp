// Layout: one section per progress point (sections in the order of their
// best-ranked line), each a ranked table; then a footer. Columns:
//   #  line  impact  @25%  @50%  @100%  samples  exps
// The line column takes the room left over and loses path components on the
// left first, because the file name and line number are what a reader needs.
// On a narrow terminal the @25%, @100% and exps columns go first, so that the
// line column keeps min_line_width.
#include "text_report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace coz::analysis {
namespace {

constexpr size_t max_width = 100;  // the table is designed for 100 columns
constexpr size_t min_width = 60;   // below this the line column gets useless
constexpr size_t rank_width = 3;
constexpr size_t impact_width = 8;  // "  -99.9%" plus a trailing marker column
constexpr size_t number_width = 8;  // each of @25% @50% @100% samples
constexpr size_t exps_width = 6;
constexpr size_t min_line_width = 30;
constexpr double nearest_speedup_tolerance = 0.05 + 1e-9;  // one runtime speedup step

namespace ansi {
constexpr const char* bold = "\x1b[1m";
constexpr const char* dim = "\x1b[2m";
constexpr const char* green = "\x1b[32m";
constexpr const char* red = "\x1b[31m";
constexpr const char* cyan = "\x1b[36m";
constexpr const char* reset = "\x1b[0m";
}  // namespace ansi

// Terminal columns of UTF-8 text (one per code point: enough for paths).
size_t columns(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// Length of the valid UTF-8 sequence at the start of `s`, or 0.
size_t utf8_sequence(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char b = byte(0);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || n > s.size()) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
  }
  return n;
}

// Names come from a file that may hold anything: keep escape sequences,
// control bytes and broken UTF-8 (which would misalign the table) away from
// the terminal.
std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    size_t n = utf8_sequence(s);
    bool control = n == 1 && (static_cast<unsigned char>(s[0]) < 0x20 || s[0] == 0x7f);
    if (n == 0 || control) {
      out += '?';
      n = 1;
    } else {
      out.append(s.substr(0, n));
    }
    s.remove_prefix(n);
  }
  return out;
}

std::string shorten_left(std::string_view s, size_t width) {
  if (columns(s) <= width) return std::string(s);
  if (width == 0) return {};
  size_t keep = width - 1;  // room for the ellipsis
  size_t pos = s.size();
  while (keep > 0 && pos > 0) {
    --pos;
    while (pos > 0 && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) --pos;
    --keep;
  }
  return "…" + std::string(s.substr(pos));
}

std::string pad_left(std::string_view s, size_t width) {
  size_t w = columns(s);
  return std::string(w < width ? width - w : 0, ' ') + std::string(s);
}

std::string pad_right(std::string_view s, size_t width) {
  size_t w = columns(s);
  return std::string(s) + std::string(w < width ? width - w : 0, ' ');
}

// Greedy word wrap for the footer (its sentences are plain ASCII).
std::string wrap(std::string_view text, size_t width) {
  std::string out;
  size_t col = 0;
  while (!text.empty()) {
    size_t end = text.find(' ');
    std::string_view word = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (col > 0 && col + 1 + columns(word) > width) {
      out += "\n  ";
      col = 2;
    } else if (col > 0) {
      out += ' ';
      ++col;
    }
    out += word;
    col += columns(word);
  }
  return out;
}

std::string percent(double fraction, bool sign) {
  double pct = fraction * 100.0;
  if (pct >= 999.95) return ">999%";
  if (pct <= -999.95) return "<-999%";
  return sign ? fmt::format("{:+.1f}%", pct) : fmt::format("{:.1f}%", pct);
}

const SpeedupEstimate* nearest(const LineEffect& e, double speedup) {
  const SpeedupEstimate* best = nullptr;
  for (const SpeedupEstimate& p : e.curve) {
    double d = std::abs(p.line_speedup - speedup);
    if (d <= nearest_speedup_tolerance &&
        (best == nullptr || d < std::abs(best->line_speedup - speedup))) {
      best = &p;
    }
  }
  return best;
}

class Writer {
 public:
  Writer(std::ostream& out, const Analysis& a, const TextReportOptions& o)
      : out_(out), a_(a), o_(o), width_(std::clamp(o.width, min_width, max_width)) {
    size_t fixed = rank_width + 2 + impact_width + 1 + (effect_columns_.size() + 1) * number_width + exps_width;
    // Drop the least needed columns until the line column is wide enough.
    if (width_ < fixed + min_line_width) {
      effect_columns_ = {0.50, 1.00};
      fixed -= number_width;
    }
    if (width_ < fixed + min_line_width) {
      effect_columns_ = {0.50};
      fixed -= number_width;
    }
    if (width_ < fixed + min_line_width) {
      show_exps_ = false;
      fixed -= exps_width;
    }
    line_width_ = width_ - fixed;
  }

  void write() {
    std::vector<std::pair<std::string, PointKind>> sections;
    for (const LineEffect& e : a_.effects) {
      std::pair<std::string, PointKind> key{e.point, e.kind};
      if (std::find(sections.begin(), sections.end(), key) == sections.end()) sections.push_back(key);
    }
    for (const auto& [point, kind] : sections) section(point, kind);
    footer();
  }

 private:
  std::string paint(std::string text, const char* colour) const {
    return o_.colour ? colour + text + ansi::reset : text;
  }

  void section(const std::string& point, PointKind kind) {
    size_t total = 0;
    for (const LineEffect& e : a_.effects) total += e.point == point && e.kind == kind;
    std::string title = fmt::format("{} point \"{}\"", kind == PointKind::Throughput ? "Throughput" : "Latency",
                                    shorten_left(printable(point), width_ - 40));
    out_ << paint(title, ansi::bold) << "  " << paint(fmt::format("({} line{})", total, total == 1 ? "" : "s"), ansi::dim)
         << '\n';
    std::string header = pad_left("#", rank_width) + "  " + pad_right("line", line_width_) +
                         pad_left("impact", impact_width) + " ";
    for (double s : effect_columns_) header += pad_left(fmt::format("@{:.0f}%", s * 100), number_width);
    header += pad_left("samples", number_width);
    if (show_exps_) header += pad_left("exps", exps_width);
    out_ << paint(header, ansi::bold) << '\n';
    size_t rank = 0;
    for (const LineEffect& e : a_.effects) {
      if (e.point != point || e.kind != kind) continue;
      ++rank;
      if (o_.top != 0 && rank > o_.top) break;
      row(rank, e);
    }
    if (o_.top != 0 && total > o_.top) {
      out_ << paint(fmt::format("     ... {} more line{} (--top {} shows them)", total - o_.top,
                                total - o_.top == 1 ? "" : "s", total),
                    ansi::dim)
           << '\n';
    }
    out_ << '\n';
  }

  void row(size_t rank, const LineEffect& e) {
    std::string line = pad_left(fmt::format("{}", rank), rank_width) + "  " +
                       pad_right(shorten_left(printable(e.line), line_width_), line_width_);
    std::string impact = pad_left(e.measured ? percent(e.impact, true) : "-", impact_width);
    if (e.measured && o_.colour) {
      // 0.5% is below what a handful of experiments can resolve: leave it uncoloured.
      if (e.impact > 0.005) impact = paint(impact, ansi::green);
      if (e.impact < -0.005) impact = paint(impact, ansi::red);
    }
    std::string marker = e.global_baseline ? "*" : " ";
    std::string effects;
    for (double s : effect_columns_) {
      const SpeedupEstimate* p = nearest(e, s);
      effects += pad_left(p != nullptr ? percent(p->program_speedup, true) : "-", number_width);
    }
    std::string samples = pad_left(a_.total_samples > 0 ? percent(e.sample_share, false) : "-", number_width);
    std::string exps = show_exps_ ? pad_left(fmt::format("{}", e.experiments), exps_width) : "";
    if (!e.measured) {
      out_ << paint(line + impact + marker + effects + samples + exps, ansi::dim) << '\n';
    } else {
      out_ << line << impact << marker << effects << samples << exps << '\n';
    }
  }

  void footer() {
    bool any_global = std::any_of(a_.effects.begin(), a_.effects.end(),
                                  [](const LineEffect& e) { return e.global_baseline; });
    if (!a_.effects.empty()) {
      out_ << paint(wrap("impact: mean program speedup over the measured line speedups; @N%: the line N% faster",
                         width_),
                    ansi::dim)
           << '\n';
    }
    if (any_global) {
      out_ << wrap("* baseline from all lines' 0% experiments: this line has no usable baseline of its own",
                   width_)
           << '\n';
    }
    out_ << fmt::format("{} experiment{}, {} progress point{}, {} sample{}\n", a_.experiments,
                        a_.experiments == 1 ? "" : "s", a_.points.size(), a_.points.size() == 1 ? "" : "s",
                        a_.total_samples, a_.total_samples == 1 ? "" : "s");
    if (a_.experiments == 0) {
      hint("no experiments: add a progress point (COZ_PROGRESS) or use --end-to-end, run longer, build with -g");
    } else if (a_.points.empty()) {
      hint("no progress point was recorded during the experiments: add a progress point (COZ_PROGRESS) "
           "or use --end-to-end");
    } else if (a_.effects.empty()) {
      hint("no line passed the filters (--point, --min-experiments)");
    } else if (std::none_of(a_.effects.begin(), a_.effects.end(), [](const LineEffect& e) { return e.measured; })) {
      hint("no line has a measurement above 0% speedup yet: run longer");
    }
  }

  void hint(const std::string& text) { out_ << paint(wrap(text, width_), ansi::cyan) << '\n'; }

  std::ostream& out_;
  const Analysis& a_;
  const TextReportOptions& o_;
  size_t width_;
  size_t line_width_ = 0;
  std::vector<double> effect_columns_{0.25, 0.50, 1.00};  // line speedups shown as @N%
  bool show_exps_ = true;
};

}  // namespace

void write_text_report(std::ostream& out, const Analysis& analysis, const TextReportOptions& options) {
  Writer(out, analysis, options).write();
}

}  // namespace coz::analysis
