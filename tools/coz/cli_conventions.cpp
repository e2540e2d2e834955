#include "cli_conventions.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace po = boost::program_options;

namespace coz::cli {
namespace {

constexpr size_t max_name_column = 32;  // a longer name puts its description on the next line

/// "N (=20)" -> {"N", "20"}: program_options' name() carries the default.
std::pair<std::string, std::string> split_default(const std::string& name) {
  size_t at = name.find(" (=");
  if (at == std::string::npos || name.back() != ')') return {name, ""};
  return {name.substr(0, at), name.substr(at + 3, name.size() - at - 4)};
}

/// `-o, --output FILE`, `    --top N`, `    --system[=NAME]`.
std::pair<std::string, std::string> name_column(const po::option_description& option) {
  const std::string short_name = option.canonical_display_name(po::command_line_style::allow_dash_for_short);
  const std::string long_name = option.canonical_display_name(po::command_line_style::allow_long);
  std::string left = "  ";
  left += short_name.size() == 2 && short_name != long_name ? short_name + ", " : "    ";
  left += long_name;
  auto [value, default_value] = split_default(option.semantic()->name());
  if (option.semantic()->max_tokens() > 0) {
    if (value.empty() || value == "arg") value = "VALUE";
    left += option.semantic()->min_tokens() == 0 ? "[=" + value + "]" : " " + value;
  } else {
    default_value.clear();  // a switch's "(=0)" says nothing
  }
  return {left, default_value};
}

/// Words of `text` in lines of at most `width` columns, each after `indent`.
std::string wrap(const std::string& text, size_t indent, size_t width) {
  const size_t room = width > indent + 20 ? width - indent : 20;
  std::string out;
  size_t column = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(at, end - at);
    at = end + 1;
    if (word.empty()) continue;
    if (column > 0 && column + 1 + word.size() > room) {
      out += '\n' + std::string(indent, ' ');
      column = 0;
    } else if (column > 0) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out;
}

}  // namespace

std::string version_text() {
  return fmt::format("coz {}\nLicense: BSD-2-Clause <https://opensource.org/license/bsd-2-clause>\n", COZ_VERSION);
}

int parse_style() { return po::command_line_style::default_style & ~po::command_line_style::allow_guessing; }

std::string format_options(const po::options_description& options, size_t width) {
  std::vector<std::pair<std::string, std::string>> rows;  // name column, description
  size_t name_width = 0;
  for (const auto& option : options.options()) {
    auto [left, default_value] = name_column(*option);
    std::string description = option->description();
    if (!default_value.empty()) description += fmt::format(" (default: {})", default_value);
    if (left.size() <= max_name_column) name_width = std::max(name_width, left.size());
    rows.emplace_back(std::move(left), std::move(description));
  }
  const size_t indent = name_width + 3;
  std::string out = "options:\n";
  for (const auto& [left, description] : rows) {
    out += left;
    if (left.size() > name_width) out += '\n' + std::string(indent, ' ');
    else out += std::string(indent - left.size(), ' ');
    out += wrap(description, indent, width) + '\n';
  }
  return out;
}

}  // namespace coz::cli
