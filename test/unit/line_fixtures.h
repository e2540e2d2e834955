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

/// The value of a symbol from .symtab (independent of the debug info).
inline uint64_t symbol_value(const std::string& path, std::string_view name) {
  std::string error;
  auto elf = ElfFile::open(path, error);
  if (!elf) throw std::runtime_error(error);
  for (const ::elf::section& sec : elf->elf().sections()) {
    if (sec.get_hdr().type != ::elf::sht::symtab) continue;
    for (const ::elf::sym& sym : sec.as_symtab()) {
      if (sym.get_name() == name) return sym.get_data().value;
    }
  }
  throw std::runtime_error("no symbol " + std::string(name) + " in " + path);
}

inline DwarfSections sections_of(const ElfFile& elf) {
  return DwarfSections{elf.section(".debug_line").bytes, elf.section(".debug_line_str").bytes,
                       elf.section(".debug_str").bytes, elf.section(".debug_info").bytes,
                       elf.section(".debug_abbrev").bytes};
}

/// Every fixture that has debug info.
inline const std::vector<std::string>& debug_fixtures() {
  static const std::vector<std::string> names = {
      "lines_dwarf4_nopie", "lines_dwarf4_pie", "lines_dwarf5_pie", "lines_dwarf5_nopie", "lines_dwarf4_64",
      "lines_dwarf3",       "lines_mixed",      "lines_cpp",        "liblines_shared.so"};
  return names;
}

}  // namespace coz::test
