// Shared by line_map_test and dwarf_lines_test: where the fixtures are
// (test/fixtures), the @line markers in their sources, and independent
// sources of truth (binutils' readelf, the ELF symbol table).
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <libelfin/elf/elf++.hh>

#include "dwarf_reader.h"
#include "elf_file.h"

namespace coz::test {

inline std::string fixture(std::string_view name) { return std::string(FIXTURE_DIR) + "/" + std::string(name); }
inline std::string fixture_source(std::string_view rel) { return std::string(FIXTURE_SRC_DIR) + "/" + std::string(rel); }

/// The line of `source` (relative to the fixture sources) that carries `// @line:<name>`.
inline uint32_t marker_line(std::string_view source, std::string_view name) {
  std::ifstream in(fixture_source(source));
  std::string text;
  std::string tag = "@line:" + std::string(name);
  for (uint32_t n = 1; std::getline(in, text); ++n) {
    size_t at = text.find(tag);
    if (at != std::string::npos && (at + tag.size() == text.size() || text[at + tag.size()] == ' ')) return n;
  }
  throw std::runtime_error("no marker " + tag + " in " + std::string(source));
}

inline std::string run_command(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return output;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  pclose(pipe);
  return output;
}

/// One row of `readelf --debug-dump=decodedline`.
struct ReadelfRow {
  std::string file;  // as readelf prints it (a base name)
  uint32_t line = 0;
  uint64_t address = 0;
  bool end_sequence = false;
};

inline std::vector<ReadelfRow> readelf_rows(const std::string& path) {
  std::vector<ReadelfRow> rows;
  std::istringstream out(run_command(std::string(READELF) + " -W --debug-dump=decodedline '" + path + "' 2>/dev/null"));
  std::string text;
  while (std::getline(out, text)) {
    std::istringstream fields(text);
    std::string file, line, address;
    // readelf prints address 0 (code the linker discarded) as "0", not "0x0".
    if (!(fields >> file >> line >> address) || (address.rfind("0x", 0) != 0 && address != "0")) continue;
    ReadelfRow row;
    row.file = file;
    row.end_sequence = line == "-";
    row.line = row.end_sequence ? 0 : static_cast<uint32_t>(std::stoul(line));
    row.address = std::stoull(address, nullptr, 16);
    rows.push_back(row);
  }
  return rows;
}

struct SymbolRange {
  uint64_t begin;
  uint64_t end;
};

/// A symbol's [value, value + size) from .symtab (independent of the debug info).
inline SymbolRange symbol_range(const std::string& path, std::string_view name) {
  std::string error;
  auto elf = ElfFile::open(path, error);
  if (!elf) throw std::runtime_error(error);
  for (const ::elf::section& sec : elf->elf().sections()) {
    if (sec.get_hdr().type != ::elf::sht::symtab) continue;
    for (const ::elf::sym& sym : sec.as_symtab()) {
      if (sym.get_name() == name) return {sym.get_data().value, sym.get_data().value + sym.get_data().size};
    }
  }
  throw std::runtime_error("no symbol " + std::string(name) + " in " + path);
}

/// The value of a symbol from .symtab.
inline uint64_t symbol_value(const std::string& path, std::string_view name) { return symbol_range(path, name).begin; }

/// readelf's rows inside [range.begin, range.end) that cover bytes, with the
/// end of what each covers (the next row's address).
inline std::vector<std::pair<ReadelfRow, uint64_t>> rows_in(const std::string& path, SymbolRange range) {
  std::vector<ReadelfRow> rows = readelf_rows(path);
  std::vector<std::pair<ReadelfRow, uint64_t>> out;
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    if (rows[i].end_sequence || rows[i + 1].address <= rows[i].address) continue;
    if (rows[i].address >= range.begin && rows[i].address < range.end) out.emplace_back(rows[i], rows[i + 1].address);
  }
  return out;
}

inline DwarfSections sections_of(const ElfFile& elf) {
  return DwarfSections{elf.section(".debug_line").bytes,   elf.section(".debug_line_str").bytes,
                       elf.section(".debug_str").bytes,    elf.section(".debug_info").bytes,
                       elf.section(".debug_abbrev").bytes, elf.section(".debug_addr").bytes,
                       elf.section(".debug_str_offsets").bytes, elf.section(".debug_ranges").bytes,
                       elf.section(".debug_rnglists").bytes};
}

/// Every fixture that has debug info.
inline const std::vector<std::string>& debug_fixtures() {
  static const std::vector<std::string> names = {
      "lines_dwarf4_nopie", "lines_dwarf4_pie", "lines_dwarf5_pie", "lines_dwarf5_nopie", "lines_dwarf4_64",
      "lines_dwarf3",       "lines_mixed",      "lines_cpp",        "liblines_shared.so",
      "inline_dwarf5",      "inline_dwarf4",    "lines_gz",         "inline_gz"};
  return names;
}

}  // namespace coz::test
