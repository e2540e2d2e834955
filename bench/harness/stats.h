// Medians, tables (Markdown pipe tables, readable in a terminal as well) and
// facts about the machine the figures were measured on.
#pragma once

#include <string>
#include <vector>

namespace coz_bench {

double median(std::vector<double> values);  // NaN for no values

/// "a b c" from /proc/loadavg (1, 5 and 15 minute load averages).
std::string load_average();

/// nproc, CPU model, kernel, date, git commit: one Markdown bullet list.
std::string machine_description(const std::string& source_dir);

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  std::string render() const;  // a Markdown pipe table, columns padded
};

/// One section of the results: a heading, the load it was measured under,
/// the table, and notes that say how to read it.
struct Section {
  std::string title;
  std::string load_before;  // load average when the section started
  std::string load_after;   // and when it ended
  Table table;
  std::string text;  // Markdown rendered after the table (a section with tables of its own)
  std::vector<std::string> notes;
  // Rows of the summary of targets: {target, what was measured, PASS/MISS}.
  std::vector<std::vector<std::string>> targets;

  std::string render() const;
};

std::string percent(double fraction, int decimals = 1);  // 0.123 -> "+12.3%"
std::string fixed(double value, int decimals);
std::string pass_miss(bool pass);

}  // namespace coz_bench
