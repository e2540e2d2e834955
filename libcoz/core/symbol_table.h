// Functions from the ELF symbol table, for binaries without debug info: the
// profile can then still say which function a sample fell in.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "elf_file.h"

namespace coz {

struct FunctionSymbol {
  uint64_t begin;         // file address
  uint64_t end;           // begin + st_size
  std::string_view name;  // as in the file (mangled), valid while the ElfFile lives
};

/// The defined STT_FUNC symbols with a size, from .symtab, or from .dynsym
/// when the file has no .symtab (strip --strip-all). Sorted by address; of
/// several symbols at one address (aliases) only one is kept, preferring
/// global to weak to local. Never throws; a bad table gives what was read.
std::vector<FunctionSymbol> function_symbols(const ElfFile& elf);

}  // namespace coz
