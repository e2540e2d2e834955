// Which binaries and source files are in scope (glob patterns).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace coz {

/// Glob match (fnmatch, '*' also crosses '/'), against the full path or the base name.
bool glob_matches(std::string_view pattern, std::string_view path);

class BinaryScope {
 public:
  /// `patterns` empty: only the main executable. The pattern "MAIN" names the main executable.
  BinaryScope(std::vector<std::string> patterns, std::string main_executable);
  bool contains(std::string_view path) const;

 private:
  std::vector<std::string> patterns_;
  std::string main_;
};

class SourceScope {
 public:
  /// `patterns` empty: every source except system ones (see is_system_source).
  explicit SourceScope(std::vector<std::string> patterns);
  bool contains(std::string_view file) const;

 private:
  std::vector<std::string> patterns_;
};

/// Headers and sources of the system and toolchains: /usr/include, /usr/lib,
/// /usr/local/include, the Rust standard library (/rustc/...), Go's
/// (/usr/local/go/src/...), compiler built-ins, and the dependencies in
/// Cargo's registry and Go's module cache.
bool is_system_source(std::string_view file);

}  // namespace coz
