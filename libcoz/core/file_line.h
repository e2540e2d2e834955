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

}  // namespace coz
