// One line of a profile split into its record type and key/value fields,
// whichever of the two forms it was written in (see docs/profile-format.md):
//   tab form:         experiment<TAB>selected=a.cpp:3<TAB>speedup=0.20 ...
//   JSON Lines:       {"type":"experiment","selected":"a.cpp:3","speedup":0.2, ...}
// (keys and types of JSON lines with '_' for '-', as Coz writes them, are
// given back their '-': `selected_samples` is `selected-samples`).
// Values stay text here; the profile reader converts and validates them, so
// both forms go through exactly the same checks.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace coz::analysis {

struct RecordLine {
  std::string type;
  std::vector<std::pair<std::string, std::string>> fields;  // in line order
  /// The line is the first part of a record that a failed write cut short
  /// (it ends with the writer's `\tcut=write-failed`): not a record, and
  /// type and fields are not set.
  bool cut = false;

  /// The value of `key` (the last one if repeated), or nullptr.
  const std::string* find(std::string_view key) const;
};

/// Splits `line` (no trailing newline). Returns false with `error` set when
/// the line is not a record at all (bad JSON, a type that is not a word).
/// A JSON value null, or an array or object, is left out as if absent.
/// Never throws; linear in the line length.
bool split_record_line(std::string_view line, RecordLine& out, std::string& error);

}  // namespace coz::analysis
