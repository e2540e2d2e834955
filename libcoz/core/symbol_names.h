// Function names for profiles: demangling.
#pragma once

#include <string>
#include <string_view>

namespace coz {

/// The demangled form of a C++ (Itanium ABI) or Rust (v0 `_R...`, legacy
/// `_ZN...17h<hash>E`) symbol, Rust's without hashes (rust_demangle.h);
/// anything else, or a name the demangler rejects, is returned unchanged.
/// A symbol version (`@@GLIBC_2.3.2`, `@GLIBC_2.2.5`) is dropped first.
std::string demangle(std::string_view name);

}  // namespace coz
