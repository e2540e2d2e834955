// Function names for profiles: demangling.
#pragma once

#include <string>
#include <string_view>

namespace coz {

/// The demangled form of a C++ (Itanium ABI) or legacy Rust (_ZN...E) symbol;
/// anything else, or a name the demangler rejects, is returned unchanged.
/// A symbol version (`@@GLIBC_2.3.2`, `@GLIBC_2.2.5`) is dropped first.
std::string demangle(std::string_view name);

}  // namespace coz
