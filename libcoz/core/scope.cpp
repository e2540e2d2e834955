#include "scope.h"

#include <fnmatch.h>

#include <string>

namespace coz {

bool glob_matches(std::string_view pattern, std::string_view path) {
  std::string p{pattern}, s{path};
  if (fnmatch(p.c_str(), s.c_str(), 0) == 0) return true;
  size_t slash = s.rfind('/');
  return slash != std::string::npos && fnmatch(p.c_str(), s.c_str() + slash + 1, 0) == 0;
}

BinaryScope::BinaryScope(std::vector<std::string> patterns, std::string main_executable)
    : patterns_(std::move(patterns)), main_(std::move(main_executable)) {}

bool BinaryScope::contains(std::string_view path) const {
  if (patterns_.empty()) return path == main_;
  for (const auto& p : patterns_) {
    if (p == "MAIN" ? path == main_ : glob_matches(p, path)) return true;
  }
  return false;
}

SourceScope::SourceScope(std::vector<std::string> patterns) : patterns_(std::move(patterns)) {}

bool SourceScope::contains(std::string_view file) const {
  if (patterns_.empty()) return !is_system_source(file);
  for (const auto& p : patterns_) {
    if (glob_matches(p, file)) return true;
  }
  return false;
}

bool is_system_source(std::string_view file) {
  // /usr/local/go/src/: Go's standard library and runtime as go.dev's
  // archive installs them (Debian's are under /usr/lib/go-1.xx/src/).
  // /_/runtime/cgo/: the C part of Go's runtime/cgo, as older Go releases
  // name it; /_/GOROOT/src/: as Go 1.26 names it (gcc_amd64.S's crosscall
  // frames ranked third in a net/http program's report).
  static constexpr std::string_view prefixes[] = {"/usr/include/",   "/usr/lib/",         "/usr/local/include/",
                                                  "/usr/src/",       "/rustc/",           "/usr/local/go/src/",
                                                  "/_/runtime/cgo/", "/_/GOROOT/src/",    "<"};
  for (auto prefix : prefixes) {
    if (file.substr(0, prefix.size()) == prefix) return true;
  }
  // Dependencies: Rust's crates, Go's module cache (toolchains fetched by
  // GOTOOLCHAIN live there too).
  return file.find("/.cargo/registry/") != std::string_view::npos || file.find("/pkg/mod/") != std::string_view::npos;
}

}  // namespace coz
