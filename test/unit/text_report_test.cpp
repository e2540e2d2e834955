// Tests of the `coz report` table: layout limits, shortening, columns, hints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "analysis.h"
#include "compare.h"
#include "text_report.h"

namespace coz::analysis {
namespace {

std::string render(const Analysis& a, TextReportOptions o = {}) {
  std::ostringstream out;
  write_text_report(out, a, o);
  return out.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

LineEffect effect(const std::string& line, const std::string& point, double impact,
                  std::vector<std::pair<double, double>> curve) {
  LineEffect e;
  e.line = line;
  e.point = point;
  e.impact = impact;
  for (auto [s, y] : curve) {
    SpeedupEstimate p;
    p.line_speedup = s;
    p.program_speedup = y;
    p.experiments = 1;
    e.curve.push_back(p);
    if (s > 0) e.measured = true;
  }
  e.experiments = e.curve.size();
  e.impact_se = 0.01;  // +-2.0% at 95%
  e.label = !e.measured ? Label::Unmeasured : impact > 0.03 ? Label::Positive : Label::NoEffect;
  e.experiments_needed = 0;
  return e;
}

PointSummary point(const std::string& name, PointKind kind = PointKind::Throughput) {
  PointSummary p;
  p.name = name;
  p.kind = kind;
  return p;
}

Analysis sample() {
  Analysis a;
  a.experiments = 12;
  a.total_samples = 200;
  a.points = {point("request"), point("txn", PointKind::Latency)};
  LineEffect deep = effect("/home/someone/work/a/very/deep/source/tree/with/many/levels/server_handler.cpp:1234",
                           "request", 0.123, {{0, 0}, {0.25, 0.05}, {0.5, 0.2}, {0.95, 0.3}});
  deep.samples = 50;
  deep.sample_share = 0.25;
  a.effects.push_back(deep);
  LineEffect txn = effect("src/db.cpp:7", "txn", 0.08, {{0, 0}, {0.30, 0.1}});
  txn.kind = PointKind::Latency;
  a.effects.push_back(txn);
  LineEffect undecided = effect("src/g.cpp:3", "request", 0.01, {{0.75, 0.02}});
  undecided.label = Label::Undecided;
  undecided.impact_se = 0.05;
  undecided.experiments_needed = 1234;
  a.effects.push_back(undecided);
  a.effects.push_back(effect("src/cold.cpp:9", "request", 0.0, {{0, 0}}));
  return a;
}

TEST(TextReport, FitsOneHundredColumns) {
  std::string text = render(sample());
  for (const std::string& l : lines_of(text)) EXPECT_LE(columns(l), 100u) << l;
  for (const std::string& l : lines_of(render(sample(), {20, false, 300}))) EXPECT_LE(columns(l), 100u) << l;
  for (const std::string& l : lines_of(render(sample(), {20, false, 72}))) EXPECT_LE(columns(l), 72u) << l;
}

TEST(TextReport, LongPathsLoseTheirLeftEnd) {
  std::string text = render(sample());
  EXPECT_NE(text.find("…"), std::string::npos);
  EXPECT_NE(text.find("server_handler.cpp:1234"), std::string::npos) << text;
  EXPECT_EQ(text.find("/home/someone"), std::string::npos) << text;
  std::string narrow = render(sample(), {20, false, 70});
  EXPECT_NE(narrow.find("server_handler.cpp:1234"), std::string::npos) << narrow;
}

TEST(TextReport, RowShowsImpactEffectsShareAndExperiments) {
  std::string text = render(sample());
  std::string row;
  for (const std::string& l : lines_of(text)) {
    if (l.find("server_handler.cpp:1234") != std::string::npos) row = l;
  }
  ASSERT_FALSE(row.empty()) << text;
  EXPECT_EQ(row.rfind("  1  ", 0), 0u) << row;
  EXPECT_NE(row.find("+12.3% ±2.0"), std::string::npos) << row;
  // @25% -> 0.25, @50% -> 0.5, @100% -> nearest within 0.05 is 0.95.
  EXPECT_NE(row.find("+12.3% ±2.0   +5.0% +20.0% +30.0%   25.0%     4"), std::string::npos) << row;
  EXPECT_EQ(row.back(), '4') << "a positive line has no note: " << row;
}

TEST(TextReport, UnmeasuredEffectsShowDashes) {
  std::string text = render(sample());
  std::string db, cold;
  for (const std::string& l : lines_of(text)) {
    if (l.find("src/db.cpp:7") != std::string::npos) db = l;
    if (l.find("src/cold.cpp:9") != std::string::npos) cold = l;
  }
  // 0.30 is within one 5% step of 0.25 (shown under @25%), not of 0.5 or 1.
  EXPECT_NE(db.find("+8.0% ±2.0  +10.0%      -      -"), std::string::npos) << db;
  EXPECT_NE(cold.find("   -       -      -      -"), std::string::npos) << cold;
  EXPECT_NE(cold.find("unmeasured"), std::string::npos) << cold;
}

TEST(TextReport, ALineNeverSampledInItsExperimentsRarelyRuns) {
  Analysis a = sample();
  LineEffect rare;
  rare.line = "src/init.cpp:3";
  rare.point = "request";
  rare.experiments = rare.untreated_experiments = 6;  // tried at a speedup, never sampled
  a.effects.push_back(rare);
  std::string row;
  for (const std::string& l : lines_of(render(a))) {
    if (l.find("src/init.cpp:3") != std::string::npos) row = l;
  }
  EXPECT_NE(row.find("rarely runs"), std::string::npos) << row;
  EXPECT_EQ(row.find("unmeasured"), std::string::npos) << row;
}

TEST(TextReport, NoEffectAndUndecidedSaySo) {
  Analysis a = sample();
  a.effects.push_back(effect("src/flat.cpp:2", "request", 0.001, {{0.5, 0.002}}));
  std::string text = render(a);
  std::string flat, undecided;
  for (const std::string& l : lines_of(text)) {
    if (l.find("src/flat.cpp:2") != std::string::npos) flat = l;
    if (l.find("src/g.cpp:3") != std::string::npos) undecided = l;
  }
  EXPECT_NE(flat.find("no effect"), std::string::npos) << flat;
  EXPECT_NE(undecided.find("? +1.2k exps"), std::string::npos) << undecided;
  EXPECT_NE(undecided.find("+1.0% ±9.8"), std::string::npos) << undecided;
  EXPECT_NE(text.find("no measurable effect"), std::string::npos) << "the legend explains the notes";
}

TEST(TextReport, OneSectionPerPoint) {
  std::string text = render(sample());
  size_t request = text.find("Throughput point \"request\"");
  size_t txn = text.find("Latency point \"txn\"");
  ASSERT_NE(request, std::string::npos) << text;
  ASSERT_NE(txn, std::string::npos) << text;
  EXPECT_LT(request, txn) << "sections follow the best-ranked line of each point";
  EXPECT_LT(text.find("src/cold.cpp:9"), txn) << "lines stay in their point's section";
  EXPECT_NE(text.find("12 experiments, 2 progress points, 200 samples"), std::string::npos) << text;
}

TEST(TextReport, TopLimitsEachSection) {
  std::string text = render(sample(), {1, false, 100});
  EXPECT_EQ(text.find("src/g.cpp:3"), std::string::npos) << text;
  EXPECT_NE(text.find("... 2 more lines"), std::string::npos) << text;
  EXPECT_NE(text.find("src/db.cpp:7"), std::string::npos) << "top applies per section";
}

TEST(TextReport, NarrowTerminalsDropColumnsNotTheLine) {
  std::string text = render(sample(), {20, false, 80});
  EXPECT_EQ(text.find("@25%"), std::string::npos) << text;
  EXPECT_NE(text.find("@50%"), std::string::npos) << text;
  for (const std::string& l : lines_of(text)) EXPECT_LE(columns(l), 80u) << l;
  text = render(sample(), {20, false, 40});
  EXPECT_EQ(text.find("@50%"), std::string::npos) << text;
  EXPECT_NE(text.find("samples"), std::string::npos) << text;
  for (const std::string& l : lines_of(text)) EXPECT_LE(columns(l), 70u) << "the table's minimum: " << l;
}

TEST(TextReport, ColourOnlyWhenAsked) {
  EXPECT_EQ(render(sample()).find('\x1b'), std::string::npos);
  TextReportOptions colour;
  colour.colour = true;
  EXPECT_NE(render(sample(), colour).find("\x1b[32m"), std::string::npos) << "positive impact in green";
}

TEST(TextReport, HintWhenThereAreNoExperiments) {
  std::string text = render(Analysis{});
  EXPECT_NE(text.find("no experiments: add a progress point (COZ_PROGRESS) or use --end-to-end, run longer, "
                      "build with -g"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("0 experiments"), std::string::npos);
}

TEST(TextReport, HintWhenNoPointWasRecorded) {
  Analysis a;
  a.experiments = 5;
  std::string text = render(a);
  EXPECT_NE(text.find("no progress point was recorded"), std::string::npos) << text;
}

TEST(TextReport, ControlCharactersInNamesAreNotSentToTheTerminal) {
  Analysis a;
  a.experiments = 1;
  a.points = {point("p")};
  a.effects.push_back(effect("evil\x1b[2J.c:1", "p", 0.1, {{0, 0}, {0.5, 0.1}}));
  std::string text = render(a);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("evil?[2J.c:1"), std::string::npos) << text;

  a.effects[0].line = "bad\xff\x80utf8\xc3.c:1 \xc3\xa9";
  text = render(a);
  EXPECT_NE(text.find("bad??utf8?.c:1 \xc3\xa9"), std::string::npos) << text;
  for (const std::string& l : lines_of(text)) EXPECT_LE(columns(l), 100u) << l;
}

TEST(TextReport, UndefinedIntervalShowsAQuestionMark) {
  Analysis a = sample();
  a.effects[0].impact_se = std::nan("");
  a.effects[0].label = Label::InsufficientData;
  a.effects[0].experiments_needed.reset();
  std::string text = render(a);
  EXPECT_NE(text.find("+12.3%  ±?"), std::string::npos) << text;
  EXPECT_NE(text.find("too few exps"), std::string::npos) << text;
}

Callee callee(const std::string& function, const std::string& library, double share) {
  return Callee{function, library, static_cast<uint64_t>(share * 100), 100, share};
}

// The row holding `needle` and the row after it.
std::pair<std::string, std::string> row_and_next(const std::string& text, const std::string& needle) {
  std::vector<std::string> lines = lines_of(text);
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i].find(needle) != std::string::npos) return {lines[i], lines[i + 1]};
  }
  return {};
}

TEST(TextReport, LineMostlyInOneCalleeGetsARowUnderIt) {
  Analysis a = sample();
  a.effects[0].callee = callee("__memmove_avx_unaligned_erms", "libc.so.6", 0.97);
  a.effects[2].callee = callee("compress2", "libz.so.1", 0.4);  // src/g.cpp:3: below half, not shown
  a.effects[3].callee = callee("qsort", "libc.so.6", 0.5);      // src/cold.cpp:9: exactly half is "mostly"
  std::string text = render(a);
  auto [row, next] = row_and_next(text, "server_handler.cpp:1234");
  EXPECT_EQ(next, "     ↳ 97% of its samples in __memmove_avx_unaligned_erms [libc.so.6]") << text;
  EXPECT_EQ(text.find("compress2"), std::string::npos) << text;
  EXPECT_EQ(row_and_next(text, "src/cold.cpp:9").second, "     ↳ 50% of its samples in qsort [libc.so.6]") << text;
  EXPECT_NE(text.find("↳ N% of its samples in F [LIB]: in N% of the line's sampled call stacks"), std::string::npos)
      << "the legend explains the rows";
  EXPECT_EQ(render(sample()).find("↳"), std::string::npos) << "no callee, no row and no legend";
  TextReportOptions colour;
  colour.colour = true;
  EXPECT_NE(render(a, colour).find("\x1b[2m     ↳ 97%"), std::string::npos) << "the row is dim";
}

TEST(TextReport, LongCalleeNamesLoseTheirParametersThenTheirLeftEnd) {
  Analysis a = sample();
  const std::string name =
      "std::vector<std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, int>, "
      "std::allocator<std::pair<std::__cxx11::basic_string<char>, int> > >::_M_realloc_insert<int const&>("
      "__gnu_cxx::__normal_iterator<int*, std::vector<int> >, int const&)";
  a.effects[0].callee = callee(name, "libstdc++.so.6", 0.8);
  std::string next = row_and_next(render(a), "server_handler.cpp:1234").second;
  EXPECT_EQ(next, "     ↳ 80% of its samples in std::vector<…>::_M_realloc_insert<…>(…) [libstdc++.so.6]");
  next = row_and_next(render(a, {20, false, 70}), "server_handler.cpp:1234").second;
  EXPECT_EQ(next, "     ↳ 80% of its samples in …_M_realloc_insert<…>(…) [libstdc++.so.6]");
  EXPECT_LE(columns(next), 70u);

  a.effects[0].callee = callee("ns::Parser::parse(std::string_view, Options const&)", "libp.so", 0.9);
  next = row_and_next(render(a), "server_handler.cpp:1234").second;
  EXPECT_EQ(next, "     ↳ 90% of its samples in ns::Parser::parse(std::string_view, Options const&) [libp.so]")
      << "a name that fits stays whole";
  next = row_and_next(render(a, {20, false, 80}), "server_handler.cpp:1234").second;
  EXPECT_EQ(next, "     ↳ 90% of its samples in ns::Parser::parse(…) [libp.so]");

  // Operators are not template brackets.
  a.effects[0].callee = callee("std::operator<< <char, std::char_traits<char> >(std::basic_ostream<char, "
                               "std::char_traits<char> >&, char const*)",
                               "libstdc++.so.6", 0.9);
  next = row_and_next(render(a, {20, false, 80}), "server_handler.cpp:1234").second;
  EXPECT_EQ(next, "     ↳ 90% of its samples in std::operator<< <…>(…) [libstdc++.so.6]");
  a.effects[0].callee = callee("ns::cooperator<std::pair<int, int> >::run(std::vector<int, std::allocator<int> >&&)",
                               "libc.so", 0.9);
  next = row_and_next(render(a, {20, false, 80}), "server_handler.cpp:1234").second;
  EXPECT_EQ(next, "     ↳ 90% of its samples in ns::cooperator<…>::run(…) [libc.so]") << "not an operator";
  a.effects[0].callee = callee("Iter<Node<int> >::operator->() const [with a very long tail to force shortening]",
                               "libi.so", 0.9);
  next = row_and_next(render(a, {20, false, 80}), "server_handler.cpp:1234").second;
  EXPECT_LE(columns(next), 80u) << next;
}

TEST(TextReport, CalleeNamesAreNotSentRawToTheTerminal) {
  Analysis a = sample();
  a.effects[0].callee = callee("evil\x1b[2J", "lib\x07.so", 1.0);
  std::string text = render(a);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("↳ 100% of its samples in evil?[2J [lib?.so]"), std::string::npos) << text;
}

TEST(TextReport, SamplingNote) {
  Analysis a = sample();
  EXPECT_EQ(render(a).find("in-scope samples"), std::string::npos) << "no sampling record, no note";
  a.sampling = SamplingTotals{2, 8337, 8087, 0};
  EXPECT_NE(render(a).find("\nin-scope samples: 97.0% of 8,337 taken\n"), std::string::npos) << render(a);
  a.sampling->lost = 1234;
  EXPECT_NE(render(a).find("in-scope samples: 97.0% of 8,337 taken (1,234 lost by the kernel)"), std::string::npos);
  a.sampling = SamplingTotals{1, 0, 0, 0};
  EXPECT_NE(render(a).find("in-scope samples: none taken"), std::string::npos);
}

TEST(TextReport, DroppedStacksAndWaitsAreSaid) {
  Analysis a = sample();
  a.sampling = SamplingTotals{1, 8337, 8087, 0};
  std::string quiet = render(a);
  EXPECT_EQ(quiet.find("no call stack"), std::string::npos) << quiet;
  a.sampling->stacks_dropped = 1500;
  a.sampling->waits_dropped = 7;
  std::string text = render(a);
  std::replace(text.begin(), text.end(), '\n', ' ');
  EXPECT_NE(text.find("1,500 of the in-scope samples have no call stack"), std::string::npos) << text;
  EXPECT_NE(text.find("7 waits have no blocked-time record"), std::string::npos) << text;
}

// A hypervisor that took more than 2% of the machine's CPU time during the
// run: the report says the effects drift with it.
TEST(TextReport, StealTimeIsWarnedAbove2Percent) {
  Analysis a = sample();
  a.sampling = SamplingTotals{1, 8337, 8087, 0};
  a.sampling->steal_ns = 190'000'000;
  a.sampling->machine_ns = 10'000'000'000;
  EXPECT_EQ(render(a).find("steal time"), std::string::npos) << "1.9%: no warning";
  a.sampling->steal_ns = 720'000'000;
  std::string text = render(a);
  std::replace(text.begin(), text.end(), '\n', ' ');
  EXPECT_NE(text.find("a hypervisor took 7.2% of this machine's CPU time during the run (steal time)"), std::string::npos)
      << text;
}

// docs/analysis.md section 5.2: a point whose threads hand off fast says
// so, its withheld lines say "hand-offs", and the verdict line counts them
// apart; a point below the rate says nothing of it.
TEST(TextReport, FastHandOffsAreWarnedAndTheirWithheldLinesSaySo) {
  Analysis a = sample();
  LineEffect flat = effect("src/flat.cpp:2", "request", 0.001, {{0.5, 0.002}});
  flat.label = Label::Undecided;
  flat.withheld = Withheld::FastHandOffs;
  flat.experiments_needed = std::nullopt;
  a.effects.push_back(flat);
  a.points[0].tested = 3;
  a.points[0].hand_offs_per_second = 19'999;
  EXPECT_EQ(render(a).find("fast hand-offs"), std::string::npos) << "below the rate: nothing said";
  a.points[0].hand_offs_per_second = 48'213.4;
  a.points[0].fast_hand_offs = true;
  const std::string text = render(a);
  std::string row;
  for (const std::string& l : lines_of(text)) {
    if (l.find("src/flat.cpp:2") != std::string::npos) row = l;
  }
  EXPECT_NE(row.find("hand-offs"), std::string::npos) << row;
  EXPECT_EQ(row.find("no effect"), std::string::npos) << row;
  std::string flowing;  // the text without its wrapping: each line break and the indent after it, one space
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      flowing += text[i];
      continue;
    }
    flowing += ' ';
    while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
  }
  EXPECT_NE(flowing.find("fast hand-offs: the program's threads stop to wait (for each other, or for I/O) ~48,213 times a second"),
            std::string::npos)
      << text;
  EXPECT_NE(flowing.find("0 no effect, 1 undecided, 1 hand-offs, of 3 lines tested"), std::string::npos) << text;
}

TEST(CompareReport, ProgramLineAndTable) {
  Comparison c;
  ComparedPoint p;
  p.name = "ops";
  p.before_ns = 10e6;
  p.after_ns = 8e6;
  p.speedup = 0.2;
  p.se = 0.01;
  p.low = 0.2 - z95 * 0.01;
  p.high = 0.2 + z95 * 0.01;
  c.points.push_back(p);
  ComparedLine l;
  l.line = "src/a.cpp:10";
  l.point = "ops";
  l.before = EffectSide{0.3, 0.02, 0.26, 0.34, 0.6, Label::Positive, 40};
  l.after = EffectSide{0.1, 0.02, 0.06, 0.14, 0.2, Label::Positive, 40};
  l.change = -0.2;
  l.change_se = 0.0283;
  l.verdict = Verdict::Less;
  c.lines.push_back(l);
  std::ostringstream out;
  write_compare_report(out, c, {"before.coz", "after.coz", 100, 120}, {});
  std::string text = out.str();
  EXPECT_NE(text.find("Before: before.coz (100 experiments)"), std::string::npos) << text;
  EXPECT_NE(text.find("Throughput point \"ops\": after is faster by +20.0% ±2.0; period 10 ms -> 8 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("+30.0% ±3.9     +10.0% ±3.9     -20.0% ±5.5         less"), std::string::npos) << text;
  for (const std::string& line : lines_of(text)) EXPECT_LE(columns(line), 100u) << line;
}

}  // namespace
}  // namespace coz::analysis
