// Layout: one section per progress point (sections in the order of their
// best-ranked line), each a ranked table; then a footer. Columns:
//   #  line  impact ±half-width  @25%  @50%  @100%  samples  exps  note
// The line column takes the room left over and loses path components on the
// left first, because the file name and line number are what a reader needs.
// On a narrow terminal the @25%, @100%, exps and @50% columns go, in that
// order, so that the line column keeps min_line_width. A line whose sampled
// call stacks mostly continue in one out-of-scope function gets a second, dim
// row under it: "↳ 97% of its samples in memcpy [libc.so.6]". `--compare` has
// its own table (at the end).
#include "text_report.h"

#include "settling.h"
#include "verdicts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace coz::analysis {
namespace {

constexpr size_t max_width = 100;  // the table is designed for 100 columns
constexpr size_t min_width = 70;   // below this the line column gets useless
constexpr size_t rank_width = 3;
constexpr size_t impact_width = 13;  // " -99.9% ±99.9"
constexpr size_t number_width = 7;   // each of @25% @50% @100%
constexpr size_t samples_width = 8;
constexpr size_t exps_width = 6;
constexpr size_t note_width = 13;    // " ? +999k exps", " too few exps"
constexpr size_t change_width = 16;  // --compare: each of before, after, change
constexpr size_t verdict_width = 13;
constexpr size_t min_line_width = 24;
constexpr double nearest_speedup_tolerance = 0.05 + 1e-9;  // one runtime speedup step
constexpr double mostly_in_callee = 0.5;  // a callee with this share of a line's stack samples is shown
constexpr size_t max_library_width = 30;  // a callee's library: a base name, rarely long
constexpr size_t max_unit_lines = 3;      // lines listed under a function unit
constexpr double high_steal = 0.02;      // above this share of the machine's time taken by a hypervisor, it warns
constexpr double low_coverage = 0.5;      // below this share of CPU time attributed, the report warns

namespace ansi {
constexpr const char* bold = "\x1b[1m";
constexpr const char* dim = "\x1b[2m";
constexpr const char* green = "\x1b[32m";
constexpr const char* red = "\x1b[31m";
constexpr const char* cyan = "\x1b[36m";
constexpr const char* yellow = "\x1b[33m";
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

// "ns::f<int>(char const*, unsigned long) const" -> "ns::f<int>(…) const":
// the parameters are what a reader of a one-line note misses least.
std::string without_parameters(std::string_view name) {
  size_t close = name.rfind(')');
  if (close == std::string_view::npos) return std::string(name);
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (name[i] == ')') {
      ++depth;
    } else if (name[i] == '(' && --depth == 0) {
      if (close == i + 1) break;  // "()": nothing to leave out
      return std::string(name.substr(0, i + 1)) + "…" + std::string(name.substr(close));
    }
  }
  return std::string(name);
}

// "std::vector<std::pair<int, int> >::push_back(…)" -> "std::vector<…>::push_back(…)".
// The '<' and '>' of operator<, operator<<, operator->... are not brackets.
std::string without_template_arguments(std::string_view name) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    bool word_start = i == 0 || !(std::isalnum(static_cast<unsigned char>(name[i - 1])) || name[i - 1] == '_');
    if (word_start && name.compare(i, 8, "operator") == 0) {
      size_t end = name.find_first_not_of("<>=-!", i + 8);
      if (end == std::string_view::npos) end = name.size();
      if (depth == 0) out.append(name.substr(i, end - i));
      i = end - 1;
    } else if (name[i] == '<') {
      if (depth++ == 0) out += "<…";
    } else if (name[i] == '>' && depth > 0) {
      if (--depth == 0) out += '>';
    } else if (depth == 0) {
      out += name[i];
    }
  }
  return depth == 0 ? out : std::string(name);  // unbalanced: leave it as it is
}

// A callee function name in at most `width` columns: whole, else without its
// parameters, else without template arguments too, else its right end (where
// a C++ name says which function it is).
std::string fit_function(std::string_view name, size_t width) {
  std::string text = printable(name);
  if (columns(text) <= width) return text;
  text = without_parameters(text);
  if (columns(text) <= width) return text;
  text = without_template_arguments(text);
  return columns(text) <= width ? text : shorten_left(text, width);
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

// "+12.3% ±4.1": an estimate and the half-width of an interval around it.
std::string with_half_width(double estimate, double half) {
  std::string text = percent(estimate, true);
  if (!std::isfinite(half)) return text + "  ±?";
  half *= 100.0;
  return text + (half >= 99.95 ? " ±>99" : fmt::format(" ±{:.1f}", half));
}

// The same with the half-width of the 95% interval.
std::string with_interval(double estimate, double se) { return with_half_width(estimate, z95 * se); }

// A positive or negative line shows the interval it is ranked by: widened
// for the false discovery rate (docs/analysis.md section 7).
std::string impact_text(const LineEffect& e) {
  if (!e.measured) return "-";
  if (std::isfinite(e.adjusted_high)) return with_half_width(e.impact, e.adjusted_high - e.impact);
  return with_interval(e.impact, e.impact_se);
}

// 1234 -> "1.2k", at most 4 columns: the order of magnitude is what matters
// for "how many more".
std::string compact_count(uint64_t n) {
  auto scaled = [](uint64_t v, double unit, const char* suffix) {
    double x = static_cast<double>(v) / unit;
    return x < 9.95 ? fmt::format("{:.1f}{}", x, suffix) : fmt::format("{:.0f}{}", std::min(x, 999.0), suffix);
  };
  if (n < 1000) return fmt::format("{}", n);
  if (n < 999'500) return scaled(n, 1e3, "k");
  if (n < 999'500'000) return scaled(n, 1e6, "M");
  return ">1G";
}

// 12.43e9 ns -> "12.4 s CPU".
// A latency: "850 ns", "12.3 us", "4.56 ms", "1.23 s"; "-" when unknown.
std::string latency_text(double ns) {
  if (!std::isfinite(ns)) return "-";
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.3g} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.3g} ms", ns / 1e6);
  return fmt::format("{:.3g} s", ns / 1e9);
}

std::string cpu_seconds(uint64_t ns) { return fmt::format("{:.1f} s CPU", static_cast<double>(ns) / 1e9); }

// 8337 -> "8,337".
std::string grouped(uint64_t n) {
  std::string digits = fmt::format("{}", n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string note(const LineEffect& e) {
  switch (e.label) {
    case Label::Positive: return "";
    case Label::Negative: return "slower";
    case Label::NoEffect: return "no effect";
    case Label::Undecided:
      if (undecidable(e)) return e.withheld == Withheld::FastHandOffs ? "hand-offs" : "contended";
      return fmt::format("? +{} exps", compact_count(*e.experiments_needed));
    case Label::InsufficientData: return "too few exps";
    case Label::Unmeasured: break;
  }
  return rarely_runs(e) ? "rarely runs" : "unmeasured";
}

std::string plural(uint64_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

std::string section_title(const std::string& point, PointKind kind, size_t width) {
  return fmt::format("{} point \"{}\"", kind == PointKind::Throughput ? "Throughput" : "Latency",
                     shorten_left(printable(point), width - 40));
}

template <typename T>
std::vector<std::pair<std::string, PointKind>> sections_of(const std::vector<T>& rows) {
  std::vector<std::pair<std::string, PointKind>> sections;
  for (const T& r : rows) {
    std::pair<std::string, PointKind> key{r.point, r.kind};
    if (std::find(sections.begin(), sections.end(), key) == sections.end()) sections.push_back(key);
  }
  return sections;
}

class Writer {
 public:
  Writer(std::ostream& out, const Analysis& a, const TextReportOptions& o)
      : out_(out), a_(a), o_(o), width_(std::clamp(o.width, min_width, max_width)) {
    size_t fixed = rank_width + 2 + impact_width + 1 + effect_columns_.size() * number_width + samples_width + exps_width +
                   note_width;
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
    if (width_ < fixed + min_line_width) {
      effect_columns_ = {};
      fixed -= number_width;
    }
    line_width_ = width_ > fixed ? width_ - fixed : min_line_width;
  }

  void write() {
    for (const auto& [point, kind] : sections_of(a_.effects)) section(point, kind);
    footer();
  }

 private:
  std::string paint(std::string text, const char* colour) const {
    return o_.colour ? colour + text + ansi::reset : text;
  }

  void section(const std::string& point, PointKind kind) {
    size_t total = 0;
    for (const LineEffect& e : a_.effects) total += e.point == point && e.kind == kind;
    out_ << paint(section_title(point, kind, width_), ansi::bold) << "  "
         << paint(fmt::format("({})", plural(total, "line")), ansi::dim) << '\n';
    std::string header = pad_left("#", rank_width) + "  " + pad_right("line", line_width_) +
                         pad_left("impact ±95%", impact_width) + " ";
    for (double s : effect_columns_) header += pad_left(fmt::format("@{:.0f}%", s * 100), number_width);
    header += pad_left("samples", samples_width);
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
    auto summary = std::find_if(a_.points.begin(), a_.points.end(),
                                [&](const PointSummary& p) { return p.name == point && p.kind == kind; });
    if (summary != a_.points.end()) {
      contention(*summary);
      hand_offs(*summary);
      verdict_summary(*summary);
    }
    if (kind == PointKind::Latency) {
      auto p = std::find_if(a_.percentiles.begin(), a_.percentiles.end(),
                            [&](const PointPercentiles& pp) { return pp.point == point; });
      if (p != a_.percentiles.end()) percentiles(*p);
    }
    out_ << '\n';
  }

  // docs/analysis.md section 13: the requests' own latencies, and what each line at 50%
  // faster does to their median, p95 and p99; ranked by p99.
  void percentiles(const PointPercentiles& p) {
    std::string untreated;
    for (size_t k = 0; k < percentile_count; ++k) {
      untreated += fmt::format("{}{} {}", k ? ", " : "", percentile_name(k), latency_text(p.baseline_ns[k]));
    }
    out_ << paint(wrap(fmt::format("percentiles of {} requests measured (untreated: {}); each line 50% faster:",
                                   grouped(p.requests), untreated),
                       width_),
                  ansi::bold)
         << '\n';
    std::string header = pad_left("#", rank_width) + "  " + pad_right("line", line_width_);
    for (size_t k = 0; k < percentile_count; ++k) header += pad_left(percentile_name(k), impact_width);
    out_ << paint(header, ansi::bold) << '\n';
    size_t rank = 0;
    for (const LinePercentiles& l : p.lines) {
      ++rank;
      if (o_.top != 0 && rank > o_.top) break;
      std::string row = pad_left(fmt::format("{}", rank), rank_width) + "  " +
                        pad_right(shorten_left(printable(l.line), line_width_), line_width_);
      for (const PercentileChange& c : l.at_half) {
        const bool known = std::isfinite(c.change);
        row += pad_left(!known ? "-" : with_half_width(c.change, (c.high - c.low) / 2), impact_width);
      }
      out_ << row << '\n';
    }
  }

  // docs/analysis.md section 5.1: a point whose threads waited for a core.
  void contention(const PointSummary& summary) {
    if (!summary.contended) return;
    warning(fmt::format("cores contended: {:.1f} threads on average waited for a core ({} cores, {:.1f} busy). A line "
                        "that frees CPU may speed this program up more than its experiments show, up to what the "
                        "cores allow (the JSON's \"bound\"), so no line gets a verdict.",
                        summary.waiting_for_core, summary.cores, summary.cores_busy));
  }

  // docs/analysis.md section 5.2: a point whose threads hand off fast.
  void hand_offs(const PointSummary& summary) {
    if (summary.contended || !summary.fast_hand_offs) return;
    warning(fmt::format("fast hand-offs: the program's threads stop to wait (for each other, or for I/O) ~{} times "
                        "a second. A wake costs more after a long wait than after a short one, and the experiments "
                        "keep the waits as long as they are, so speed-ups here read low (5-12 points at 50% on such "
                        "programs) and no line is called \"no effect\" (\"hand-offs\" instead).",
                        grouped(static_cast<uint64_t>(summary.hand_offs_per_second + 0.5))));
  }

  // "the 2 undecided lines: ~40 more experiments, ~25 s at this run's pace"
  // (docs/settling.md), and why the experiments stopped early, if they did.
  void open_lines_time(const std::string& point, PointKind kind, size_t undecided) {
    if (undecided > 0) {
      uint64_t needed = 0;
      for (const LineEffect& e : a_.effects) {
        if (e.point == point && e.kind == kind && e.label == Label::Undecided) {
          needed += experiments_to_settle(e);
        }
      }
      const double pace = seconds_per_experiment(a_);
      std::string time = std::isfinite(pace) ? fmt::format(", ~{} at this run's pace", format_settle_time(needed * pace)) : "";
      out_ << paint(wrap(fmt::format("to settle the {}: ~{} more experiments{} (coz run --until-settled "
                                     "stops when the top lines are settled)",
                                     undecided == 1 ? std::string("undecided line") : fmt::format("{} undecided lines", undecided),
                                     compact_count(needed), time),
                         width_),
                    ansi::dim)
           << '\n';
    }
    if (!a_.experiments_stopped.empty()) {
      const std::string& why = a_.experiments_stopped.front();
      out_ << paint(wrap(why == "settled" ? "experiments stopped once the top lines were settled (coz run --until-settled)"
                                          : fmt::format("experiments stopped early ({})", why == "max-time" ? "coz run --max-time" : why),
                         width_),
                    ansi::dim)
           << '\n';
    }
  }

  // "settled: 2 speed up, ... of 212 lines tested" and the split-half agreement.
  void verdict_summary(const PointSummary& summary) {
    if (summary.tested == 0) return;
    const std::string& point = summary.name;
    const PointKind kind = summary.kind;
    size_t counts[5] = {};  // positive, negative, no effect, undecided, withheld for hand-offs: of the lines listed
    for (const LineEffect& e : a_.effects) {
      if (e.point != point || e.kind != kind) continue;
      switch (e.label) {
        case Label::Positive: ++counts[0]; break;
        case Label::Negative: ++counts[1]; break;
        case Label::NoEffect: ++counts[2]; break;
        case Label::Undecided:
          counts[3] += !undecidable(e);
          counts[4] += e.withheld == Withheld::FastHandOffs;
          break;
        default: break;
      }
    }
    // A contended point has no verdicts: contention() said why.
    if (!summary.contended) {
      const std::string hand_offs = counts[4] == 0 ? "" : fmt::format(", {} hand-offs", counts[4]);
      out_ << paint(wrap(fmt::format("settled: {} speed{} up, {} slow{} down, {} no effect, {} undecided{}, of {} "
                                     "tested (false discovery rate {:.0f}%)",
                                     counts[0], counts[0] == 1 ? "s" : "", counts[1], counts[1] == 1 ? "s" : "",
                                     counts[2], counts[3], hand_offs, plural(summary.tested, "line"),
                                     false_discovery_rate * 100.0),
                         width_),
                    ansi::dim)
           << '\n';
    }
    open_lines_time(point, kind, counts[3]);
    for (const Stability& s : a_.stability) {
      if (s.name != point || s.kind != kind) continue;
      std::string text = fmt::format("top {} agree between the two halves of the run: {} of {}", s.top, s.agree,
                                     s.top);
      if (s.agree < s.top) {
        warning(text + ": run longer for a firmer ranking");
      } else {
        out_ << paint(wrap(text, width_), ansi::dim) << '\n';
      }
    }
  }

  void row(size_t rank, const LineEffect& e) {
    std::string line = pad_left(fmt::format("{}", rank), rank_width) + "  " +
                       pad_right(shorten_left(printable(e.line), line_width_), line_width_);
    std::string impact = pad_left(impact_text(e), impact_width) + " ";
    std::string effects;
    for (double s : effect_columns_) {
      const SpeedupEstimate* p = nearest(e, s);
      effects += pad_left(p != nullptr ? percent(p->program_speedup, true) : "-", number_width);
    }
    std::string samples = pad_left(a_.total_samples > 0 ? percent(e.sample_share, false) : "-", samples_width);
    std::string exps = show_exps_ ? pad_left(fmt::format("{}", e.experiments), exps_width) : "";
    std::string text = note(e);
    std::string tail = text.empty() ? "" : pad_left(text, note_width);  // no trailing blanks
    switch (e.label) {
      case Label::Positive: impact = paint(impact, ansi::green); break;
      case Label::Negative: impact = paint(impact, ansi::red); break;
      case Label::Unmeasured:
        out_ << paint(line + impact + effects + samples + exps + tail, ansi::dim) << '\n';
        callee_row(e);
        return;
      default: tail = paint(tail, ansi::dim); break;
    }
    out_ << line << impact << effects << samples << exps << tail << '\n';
    callee_row(e);
    unit_lines_row(e);
  }

  // "     ↳ lines: a.c:12 61%, a.c:14 20%" under a function unit (coz run --granularity function).
  void unit_lines_row(const LineEffect& e) {
    if (!e.function_unit || e.samples == 0) return;
    std::string text = std::string(rank_width + 2, ' ') + "↳ lines:";
    size_t shown = 0;
    for (const LineSamples& l : a_.profile.lines) {  // sorted by samples, most first
      if (l.function != e.function || shown == max_unit_lines) continue;
      std::string_view where = l.location;  // the file's base name is enough under its function
      where.remove_prefix(where.rfind('/') == std::string_view::npos ? 0 : where.rfind('/') + 1);
      text += fmt::format("{} {} {:.0f}%", shown ? "," : "", shorten_left(printable(std::string(where)), 40),
                          100.0 * static_cast<double>(l.samples) / static_cast<double>(e.samples));
      ++shown;
    }
    if (shown > 0) out_ << paint(text, ansi::dim) << '\n';
  }

  // "     ↳ 97% of its samples in memcpy [libc.so.6]" under a line that is mostly inside one callee.
  void callee_row(const LineEffect& e) {
    if (!e.callee || !(e.callee->share >= mostly_in_callee)) return;
    std::string head =
        std::string(rank_width + 2, ' ') + fmt::format("↳ {:.0f}% of its samples in ", e.callee->share * 100.0);
    std::string library = " [" + shorten_left(printable(e.callee->library), max_library_width) + "]";
    size_t used = columns(head) + columns(library);
    std::string function = fit_function(e.callee->function, width_ > used ? width_ - used : 1);
    out_ << paint(head + function + library, ansi::dim) << '\n';
    any_callee_row_ = true;
  }

  void footer() {
    if (!a_.effects.empty()) {
      out_ << paint(wrap("impact: mean program speedup over the measured line speedups, ± the half-width of its "
                         "95% confidence sequence (valid however often the run is looked at), widened for the lines "
                         "that speed up or slow the program so that at most 5% of such verdicts are expected to be "
                         "wrong however many lines were tested and whenever the run was stopped (lines "
                         "are ranked by its conservative end); @N%: program speedup with the line N% faster; "
                         "samples: share of the conventional profile. \"no effect\" and \"? +N exps\": no "
                         "measurable effect; \"no effect\" is within ±2.5% at a 50% line speedup, and known that closely, \"? +N exps\" is "
                         "undecided (fewer than 10 measured experiments, or an interval too wide) and would "
                         "take about N more experiments to settle.",
                         width_),
                    ansi::dim)
           << '\n';
    }
    if (any_callee_row_) {
      out_ << paint(wrap("↳ N% of its samples in F [LIB]: in N% of the line's sampled call stacks the time was "
                         "spent inside F, a function of LIB outside the profiled scope that the line calls.",
                         width_),
                    ansi::dim)
           << '\n';
    }
    if (a_.options.baseline == Baseline::Line) {
      out_ << paint(wrap("baselines: each line's own 0% experiments where usable, else all 0% experiments", width_),
                    ansi::dim)
           << '\n';
    } else if (a_.options.baseline == Baseline::Pooled) {
      out_ << paint(wrap("baselines: all 0% experiments, pooled", width_), ansi::dim) << '\n';
    }
    out_ << fmt::format("{}, {}, {}\n", plural(a_.experiments, "experiment"),
                        plural(a_.points.size(), "progress point"), plural(a_.total_samples, "sample"));
    if (a_.sampling) {
      const SamplingTotals& s = *a_.sampling;
      std::string lost = s.lost > 0 ? fmt::format(" ({} lost by the kernel)", grouped(s.lost)) : "";
      out_ << (s.samples > 0 ? fmt::format("in-scope samples: {} of {} taken{}\n",
                                           percent(static_cast<double>(s.in_scope) / static_cast<double>(s.samples),
                                                   false),
                                           grouped(s.samples), lost)
                             : fmt::format("in-scope samples: none taken{}\n", lost));
      coverage(s);
      dropped(s);
      steal(s);
    }
    if (a_.experiments == 0) {
      hint("no experiments: add a progress point (COZ_PROGRESS) or use --end-to-end, run longer, build with -g");
    } else if (a_.points.empty()) {
      hint("no progress point was recorded during the experiments: add a progress point (COZ_PROGRESS) "
           "or use --end-to-end");
    } else if (a_.effects.empty()) {
      hint("no line passed the filters (--point, --min-experiments)");
    } else if (std::none_of(a_.effects.begin(), a_.effects.end(), [](const LineEffect& e) { return e.measured; })) {
      hint("no line has a measurement above 0% speedup yet: run longer");
    } else if (std::any_of(a_.effects.begin(), a_.effects.end(),
                           [](const LineEffect& e) { return e.label == Label::InsufficientData; })) {
      hint("too few exps: no line/speedup pool of that progress point has two experiments yet, so its noise "
           "is unknown; run longer");
    }
  }

  // How much of the program's CPU time became samples attributed to a line.
  void coverage(const SamplingTotals& s) {
    if (s.timed == 0 || s.cpu_time_ns == 0) return;
    double share = static_cast<double>(s.attributed_ns) / static_cast<double>(s.cpu_time_ns);
    out_ << fmt::format("CPU time attributed to lines: {} of {}\n", percent(share, false),
                        cpu_seconds(s.cpu_time_ns));
    if (share < low_coverage) {
      warning("warning: most of the program's CPU time is not attributed to any line (time in the kernel that "
              "could not be sampled, code out of the profiled scope, or threads not sampled: see coz run -v); "
              "the verdicts speak only for the attributed part");
    }
  }

  // A hypervisor that keeps the machine's vCPUs off their cores (steal
  // time) does so in bursts of seconds, and more after a vCPU sleeps, as
  // threads paying delays do: experiments measured at different moments
  // then differ by more than their intervals say. Seen in a Firecracker VM:
  // steal of 0.2-8% of the CPUs' time from one run to the next, and a line
  // without effect read -2% to -10% at 95% with it.
  void steal(const SamplingTotals& s) {
    if (s.steal_share() < high_steal) return;
    warning(fmt::format("warning: a hypervisor took {} of this machine's CPU time during the run (steal time); it "
                        "comes and goes, so the effects measured at different moments differ by more than their "
                        "intervals say: trust effects of a few % only from a quieter machine",
                        percent(s.steal_share(), false)));
  }

  // What the runtime's fixed tables had no room for: the conventional
  // profile's stacks and waits are then partial (the counts per line are not).
  void dropped(const SamplingTotals& s) {
    if (s.stacks_dropped > 0) {
      warning(fmt::format("warning: {} of the in-scope samples have no call stack: the runtime's stack table was "
                          "full, so the stacks shown are partial",
                          grouped(s.stacks_dropped)));
    }
    if (s.waits_dropped > 0) {
      warning(fmt::format("warning: {} waits have no blocked-time record: the runtime's table of wait sites was "
                          "full, so the blocked times shown are partial",
                          grouped(s.waits_dropped)));
    }
  }

  void warning(const std::string& text) { out_ << paint(wrap(text, width_), ansi::yellow) << '\n'; }
  void hint(const std::string& text) { out_ << paint(wrap(text, width_), ansi::cyan) << '\n'; }

  std::ostream& out_;
  const Analysis& a_;
  const TextReportOptions& o_;
  size_t width_;
  size_t line_width_ = 0;
  std::vector<double> effect_columns_{0.25, 0.50, 1.00};  // line speedups shown as @N%
  bool show_exps_ = true;
  bool any_callee_row_ = false;  // the footer explains the "↳" rows when there are some
};

std::string side_text(const std::optional<EffectSide>& s) {
  if (!s) return "-";
  if (s->label == Label::Unmeasured) return "unmeasured";
  return with_interval(s->impact, s->impact_se);
}

class CompareWriter {
 public:
  CompareWriter(std::ostream& out, const Comparison& c, const CompareTextInfo& info, const TextReportOptions& o)
      : out_(out), c_(c), info_(info), o_(o), width_(std::clamp(o.width, min_width, max_width)) {
    size_t fixed = rank_width + 2 + 3 * change_width + verdict_width;
    line_width_ = width_ > fixed + min_line_width ? width_ - fixed : min_line_width;
  }

  void write() {
    out_ << paint(fmt::format("Before: {} ({})", printable(info_.before_name),
                              plural(info_.before_experiments, "experiment")),
                  ansi::bold)
         << '\n'
         << paint(fmt::format("After:  {} ({})", printable(info_.after_name),
                              plural(info_.after_experiments, "experiment")),
                  ansi::bold)
         << "\n\n";
    for (const auto& [point, kind] : sections_of(c_.lines)) section(point, kind);
    for (const ComparedPoint& p : c_.points) {
      bool listed = std::any_of(c_.lines.begin(), c_.lines.end(),
                                [&](const ComparedLine& l) { return l.point == p.name && l.kind == p.kind; });
      if (!listed) program_line(p);
    }
    out_ << paint(wrap("before/after: impact ± its 95% half-width, as in coz report; change: after minus "
                       "before, ± its 95% half-width; more/less: the line matters more/less after (the "
                       "interval excludes 0); same: no measurable change.",
                       width_),
                  ansi::dim)
         << '\n';
    if (c_.lines.empty()) out_ << paint(wrap("no line in either profile", width_), ansi::cyan) << '\n';
  }

 private:
  std::string paint(std::string text, const char* colour) const {
    return o_.colour ? colour + text + ansi::reset : text;
  }

  void program_line(const ComparedPoint& p) {
    const char* unit = p.kind == PointKind::Throughput ? "period" : "latency";
    std::string change = with_interval(p.speedup, p.se);
    std::string verdict = !std::isfinite(p.se) ? "after changed by " + change
                          : p.low > 0.0       ? "after is faster by " + change
                          : p.high < 0.0      ? "after is slower by " + change
                                              : "no measurable change (" + change + ")";
    out_ << paint(wrap(fmt::format("{}: {}; {} {} -> {}", section_title(p.name, p.kind, width_), verdict, unit,
                                   duration(p.before_ns), duration(p.after_ns)),
                       width_),
                  ansi::bold)
         << '\n';
  }

  static std::string duration(double ns) {
    if (ns >= 1e9) return fmt::format("{:.3g} s", ns / 1e9);
    if (ns >= 1e6) return fmt::format("{:.3g} ms", ns / 1e6);
    if (ns >= 1e3) return fmt::format("{:.3g} us", ns / 1e3);
    return fmt::format("{:.3g} ns", ns);
  }

  void section(const std::string& point, PointKind kind) {
    auto p = std::find_if(c_.points.begin(), c_.points.end(),
                          [&](const ComparedPoint& q) { return q.name == point && q.kind == kind; });
    if (p != c_.points.end()) {
      program_line(*p);
    } else {
      out_ << paint(section_title(point, kind, width_) + ": no baseline on both sides", ansi::bold) << '\n';
    }
    std::string header = pad_left("#", rank_width) + "  " + pad_right("line", line_width_) +
                         pad_left("before", change_width) + pad_left("after", change_width) +
                         pad_left("change", change_width);
    out_ << paint(header, ansi::bold) << '\n';
    size_t total = 0;
    for (const ComparedLine& l : c_.lines) {
      if (l.point != point || l.kind != kind) continue;
      ++total;
      if (o_.top != 0 && total > o_.top) continue;
      std::string change = std::isfinite(l.change) ? with_interval(l.change, l.change_se) : "-";
      std::string verdict = pad_left(to_string(l.verdict), verdict_width);
      if (l.verdict == Verdict::More) verdict = paint(verdict, ansi::green);
      if (l.verdict == Verdict::Less) verdict = paint(verdict, ansi::red);
      out_ << pad_left(fmt::format("{}", total), rank_width) << "  "
           << pad_right(shorten_left(printable(l.line), line_width_), line_width_)
           << pad_left(side_text(l.before), change_width) << pad_left(side_text(l.after), change_width)
           << pad_left(change, change_width) << verdict << '\n';
    }
    if (o_.top != 0 && total > o_.top) {
      out_ << paint(fmt::format("     ... {} more (--top {} shows them)", plural(total - o_.top, "line"), total),
                    ansi::dim)
           << '\n';
    }
    out_ << '\n';
  }

  std::ostream& out_;
  const Comparison& c_;
  const CompareTextInfo& info_;
  const TextReportOptions& o_;
  size_t width_;
  size_t line_width_ = 0;
};

}  // namespace

void write_text_report(std::ostream& out, const Analysis& analysis, const TextReportOptions& options) {
  Writer(out, analysis, options).write();
}

void write_compare_report(std::ostream& out, const Comparison& comparison, const CompareTextInfo& info,
                          const TextReportOptions& options) {
  CompareWriter(out, comparison, info, options).write();
}

}  // namespace coz::analysis
