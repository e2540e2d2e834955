// Separate debug files: distributions ship a binary's DWARF in another file
// (objcopy --only-keep-debug), found by build ID or by .gnu_debuglink, the
// way GDB looks for it.
#pragma once

#include <string>
#include <string_view>

#include "elf_file.h"

namespace coz {

/// The separate debug file of `binary` (opened from `binary_path`), or empty.
/// Tries, in order:
///   <debug_root>/.build-id/<first 2 hex digits>/<the rest>.debug (its build ID must match),
///   then the .gnu_debuglink name in the binary's directory, in <dir>/.debug/, and in
///   <debug_root>/<dir>/ (its CRC-32 must match the link's).
/// A candidate must have a .debug_line section.
/// `debug_root` is normally "/usr/lib/debug" (line_map.h's default_debug_root).
std::string find_debug_file(const ElfFile& binary, const std::string& binary_path, std::string_view debug_root);

/// The supplementary file of a debug file processed by `dwz -m` (Debian's
/// -dbgsym packages: /usr/lib/debug/.dwz/<triplet>/<package>.debug), which
/// holds the strings and DIEs several files share; empty if `debug` names
/// none or it is not found. The name comes from .gnu_debugaltlink (path,
/// then build ID) or DWARF 5's .debug_sup (path, then checksum: dwz writes
/// the build ID). Tries, in order:
///   an absolute name under /usr/lib/debug moved to `debug_root` (COZ_DEBUG_ROOT);
///   the name as given, a relative one against `debug_path`'s directory;
///   <debug_root>/.build-id/<first 2 hex digits>/<the rest>.debug.
/// A candidate must be a regular file with .debug_info and the same ID.
std::string find_supplementary_file(const ElfFile& debug, const std::string& debug_path,
                                    std::string_view debug_root);

/// CRC-32 of a whole file, as .gnu_debuglink records it; false if unreadable.
bool file_crc32(const std::string& path, uint32_t& crc);

}  // namespace coz
