#include "symbol_names.h"

#include <cxxabi.h>

#include <cstdlib>

#include "rust_demangle.h"

namespace coz {

std::string demangle(std::string_view name) {
  name = name.substr(0, name.find('@'));  // .symtab's version: pthread_cond_signal@@GLIBC_2.3.2
  if (name.starts_with("_R")) return demangle_rust_v0(name).value_or(std::string(name));
  if (!name.starts_with("_Z")) return std::string(name);
  if (auto rust = demangle_rust_legacy(name)) return *std::move(rust);
  std::string mangled(name);  // NUL-terminated for the demangler
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return mangled;
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace coz
