#include "stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "process.h"

namespace coz_bench {

double median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string machine_description(const std::string& source_dir) {
  std::string model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  const std::string commit = shell_output("git -C '" + source_dir + "' rev-parse --short HEAD 2>/dev/null");
  const std::string dirty = shell_output("git -C '" + source_dir + "' status --porcelain --untracked-files=no 2>/dev/null");
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
  std::string out;
  out += fmt::format("- date: {}\n", date);
  out += fmt::format("- git commit: {}{}\n", commit.empty() ? "unknown" : commit,
                     dirty.empty() ? "" : " (with uncommitted changes)");
  out += fmt::format("- machine: {} CPUs (nproc), {}\n", std::thread::hardware_concurrency(), model);
  out += fmt::format("- kernel: {}\n", shell_output("uname -srm"));
  out += fmt::format("- load average (1/5/15 min) at start: {}\n", load_average());
  return out;
}

namespace {

// Terminal columns of a UTF-8 string (every code point one column: enough for "±").
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string Table::render() const {
  std::vector<size_t> width(header.size(), 3);
  for (size_t i = 0; i < header.size(); ++i) width[i] = std::max(width[i], columns(header[i]));
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], columns(row[i]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      out += " " + cell + std::string(width[i] - columns(cell), ' ') + " |";
    }
    return out + "\n";
  };
  std::string out = line(header);
  out += "|";
  for (size_t w : width) out += std::string(w + 2, '-') + "|";
  out += "\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string Section::render() const {
  std::string out = fmt::format("## {} (load average 1/5/15 min: {} at start, {} at end)\n\n", title, load_before,
                                load_after);
  if (!table.header.empty()) out += table.render();
  out += text;
  if (!notes.empty()) out += "\n";
  for (const std::string& n : notes) out += "- " + n + "\n";
  return out + "\n";
}

std::string percent(double fraction, int decimals) {
  if (std::isnan(fraction)) return "n/a";
  return fmt::format("{:+.{}f}%", 100.0 * fraction, decimals);
}

std::string fixed(double value, int decimals) {
  if (std::isnan(value)) return "n/a";
  return fmt::format("{:.{}f}", value, decimals);
}

std::string pass_miss(bool pass) { return pass ? "PASS" : "MISS"; }

}  // namespace coz_bench
