// A minimal JSON reader for `coz report --json` (docs/analysis.md, schema
// version 1). The harness reads the analysis through the command rather than
// linking the analysis library, so it measures exactly what a user gets.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coz_bench::json {

struct Value {
  enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
  bool boolean = false;
  double number = 0.0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;

  /// Member `key` of an object; a null value when absent or not an object.
  const Value& operator[](const std::string& key) const;
  /// The number, or NaN when null or not a number.
  double num() const;
  const std::string& str() const { return string; }
};

/// Parses one JSON document; nullopt (with `error` set) when malformed.
std::optional<Value> parse(const std::string& text, std::string& error);

}  // namespace coz_bench::json
