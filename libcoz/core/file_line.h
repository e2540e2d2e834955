// "FILE:LINE" as users write it (--fixed-line, --progress, --latency).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace coz {

struct FileLine {
  std::string_view file;  // a full path or a path suffix
  uint32_t line;
};

/// FILE non-empty, LINE a decimal number that fits 32 bits; nullopt otherwise.
/// Never throws (the runtime calls it before the program's main).
inline std::optional<FileLine> parse_file_line(std::string_view spec) {
  size_t colon = spec.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == spec.size()) return std::nullopt;
  uint32_t line = 0;
  const char* first = spec.data() + colon + 1;
  const char* last = spec.data() + spec.size();
  auto [end, ec] = std::from_chars(first, last, line);
  if (ec != std::errc{} || end != last) return std::nullopt;
  return FileLine{spec.substr(0, colon), line};
}

/// A FILE:LINE that may name its program, as `coz report` writes the lines
/// of a `coz run --system` run: "FILE:LINE [PROGRAM]".
struct ProgramLine {
  std::string_view spec;     // without the program
  std::string_view program;  // empty when none is named
};

inline ProgramLine split_program(std::string_view spec) {
  size_t open = spec.rfind(" [");
  if (spec.empty() || spec.back() != ']' || open == std::string_view::npos) return {spec, {}};
  return {spec.substr(0, open), spec.substr(open + 2, spec.size() - open - 3)};
}

}  // namespace coz
