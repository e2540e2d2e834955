// Our own reader for DWARF line tables (.debug_line versions 2 to 5).
//
// Debian's libelfin rejects DWARF 5 units, which GCC 12 emits by default,
// so the line-number programs are decoded here: header per version, the
// state machine, and file names made absolute with the compilation
// directory. Rows are produced in program order, exactly as
// `readelf --debug-dump=decodedline` lists them, so tests can compare.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dwarf_reader.h"

namespace coz {

struct LineRow {
  uint64_t address = 0;       // file address (before any load bias)
  uint32_t file = 0;          // index into LineTable::files, or LineTable::no_file
  uint32_t line = 0;          // 0: code not attributable to a source line
  bool end_sequence = false;  // `address` is one past the end of the sequence; file/line unused
};

/// One unit of .debug_line.
struct LineTable {
  static constexpr uint32_t no_file = UINT32_MAX;

  uint64_t offset = 0;  // of the unit in .debug_line (what DW_AT_stmt_list points at)
  unsigned version = 0;
  /// File names, absolute and normalized when the compilation directory is
  /// known. Index 0 is DWARF 5's file 0 or DWARF 2-4's file 1.
  std::vector<std::string> files;
  /// Whole sequences one after another, each closed by an end_sequence row.
  std::vector<LineRow> rows;
  /// Non-empty: the unit was cut short (rows keeps the sequences read before).
  std::string error;
};

/// Calls `visit` for every unit of .debug_line, in section order. The table
/// passed is reused from one call to the next (its buffers are not freed).
/// Bad data never throws (it ends the unit with LineTable::error); only
/// std::bad_alloc and what `visit` throws propagate. Returns the number of
/// units that had an error.
size_t for_each_line_table(const DwarfSections& sections, const std::function<void(const LineTable&)>& visit);

/// Every unit, collected (convenient for tests and tools; the line map streams).
std::vector<LineTable> read_line_tables(const DwarfSections& sections);

/// `dir` + '/' + `file` (just `file` if it is absolute), normalized: "//",
/// "/./" and "name/../" collapse. Lexical only: symlinks are not resolved.
std::string join_path(std::string_view dir, std::string_view file);

}  // namespace coz
