// Rust symbol names: the v0 mangling (RFC 2603, `_R...`) and the legacy one
// (`_ZN...17h<hash>E`), read without the compiler's hashes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace coz {

/// Limits on one name, so that a malformed or hostile symbol table costs
/// bounded time and memory inside the profiled program.
struct RustDemangleLimits {
  // Nested paths, types, constants and back-references. The deepest of the
  // 206,000 v0 names in rustc's own librustc_driver needs between 80 and 100;
  // at 128 the reader uses under 24 KiB of stack (it may run on a program's
  // thread with a small stack).
  static constexpr int max_depth = 128;
  static constexpr size_t max_output = 16 * 1024;  // bytes of demangled text
  static constexpr size_t max_steps = 200'000;     // grammar productions read, back-references included
};

/// The demangled form of a Rust v0 symbol (`_RNvCs1234_4main8hot_loop` is
/// `main::hot_loop`), as rustc-demangle's alternate form prints it: no crate
/// disambiguators, no const-value type suffixes. A `.llvm.<hex>` suffix is
/// dropped; another `.`/`$` suffix is kept. nullopt for a name that is not
/// v0 or that breaks the grammar or a limit.
std::optional<std::string> demangle_rust_v0(std::string_view mangled);

/// The demangled form of a legacy Rust symbol (`_ZN4core3num21_$LT$impl$u20$u64$GT$12wrapping_mul17h…E`
/// is `core::num::<impl u64>::wrapping_mul`): the `h<16 hex>` hash dropped,
/// `$..$` escapes and `..` decoded. nullopt unless the name is a nested name of
/// plain identifiers ending in such a hash (C++ names never are: a function's
/// mangling has parameter types after the `E`).
std::optional<std::string> demangle_rust_legacy(std::string_view mangled);

}  // namespace coz
