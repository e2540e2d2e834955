// AddressSanitizer's runtime, when a program links it as a shared library,
// must come first in the process's library list or the program exits at
// start ("ASan runtime does not come first in initial library list"). A
// preloaded libcoz.so comes before the program's own libraries, so `coz run`
// preloads the sanitizer's runtime ahead of it.
#pragma once

#include <string>

namespace coz::cli {

/// The soname of the AddressSanitizer runtime `program` needs (DT_NEEDED,
/// e.g. "libasan.so.8"), for LD_PRELOAD ahead of libcoz.so; empty if none
/// or unreadable.
std::string sanitizer_runtime_to_preload(const std::string& program);

}  // namespace coz::cli
