// The compilation directory of each unit, keyed by its line table.
//
// DWARF 2-4 line tables name files relative to the compilation directory,
// which only the unit's DIE in .debug_info carries (DW_AT_comp_dir, with
// DW_AT_stmt_list pointing at the line table). We read just that first DIE
// of each unit ourselves: libelfin's dwarf::dwarf refuses a whole file as
// soon as one unit is DWARF 5, and a binary can mix versions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dwarf_reader.h"

namespace coz {

class CompDirs {
 public:
  /// Reads the unit DIEs of .debug_info. Bad units are skipped; `error` gets
  /// the first problem (the line tables of those units fall back to relative paths).
  static CompDirs read(const DwarfSections& sections, std::string& error);

  /// The compilation directory of the unit whose line table starts at
  /// `line_offset` in .debug_line, or an empty view.
  std::string_view find(uint64_t line_offset) const;

 private:
  struct Entry {
    uint64_t line_offset;
    std::string_view comp_dir;  // points into .debug_str/.debug_info/.debug_line_str
  };
  std::vector<Entry> entries_;  // sorted by line_offset
};

}  // namespace coz
