#include "symbol_table.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <span>

namespace coz {

namespace {
int binding_rank(elf::stb binding) {
  switch (binding) {
    case elf::stb::global: return 0;
    case elf::stb::weak: return 1;
    default: return 2;
  }
}

/// Bytes of a section, empty for SHT_NOBITS or a section libelfin cannot load.
std::span<const uint8_t> bytes_of(const elf::section& sec) {
  if (sec.get_hdr().type == elf::sht::nobits) return {};
  return {static_cast<const uint8_t*>(sec.data()), sec.size()};
}

/// Reads the symbols of one table over its raw bytes, not through libelfin's
/// symtab, which follows sh_link to any section number: one out of range is
/// a null dereference (found by test/fuzz/elf_reader_fuzz.cpp). The runtime
/// reads every object the program loads, inside the program; every offset
/// here is checked against the bytes it indexes.
bool read_table(const elf::elf& file, const elf::section& sec, std::vector<FunctionSymbol>& out,
                std::vector<int>& ranks) {
  const uint32_t link = sec.get_hdr().link;
  if (link == 0 || link >= file.sections().size()) return false;
  const elf::section& strings = file.sections()[link];
  if (strings.get_hdr().type != elf::sht::strtab) return false;
  const std::span<const uint8_t> table = bytes_of(sec);
  const std::span<const uint8_t> names = bytes_of(strings);
  for (size_t at = 0; at + sizeof(Elf64_Sym) <= table.size(); at += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    std::memcpy(&sym, table.data() + at, sizeof sym);
    if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0 || sym.st_shndx == SHN_UNDEF) continue;
    if (sym.st_name >= names.size()) continue;
    const char* name = reinterpret_cast<const char*>(names.data()) + sym.st_name;
    const size_t len = strnlen(name, names.size() - sym.st_name);
    if (len == 0 || len == names.size() - sym.st_name) continue;  // empty, or not terminated inside the table
    if (sym.st_value > UINT64_MAX - sym.st_size) continue;
    out.push_back({sym.st_value, sym.st_value + sym.st_size, std::string_view(name, len)});
    ranks.push_back(binding_rank(static_cast<elf::stb>(ELF64_ST_BIND(sym.st_info))));
  }
  return !out.empty();
}
}  // namespace

std::vector<FunctionSymbol> function_symbols(const ElfFile& file) {
  std::vector<FunctionSymbol> symbols;
  std::vector<int> ranks;
  try {
    if (file.elf().get_hdr().ei_class != elf::elfclass::_64) return symbols;  // read as Elf64_Sym below
    for (elf::sht type : {elf::sht::symtab, elf::sht::dynsym}) {
      for (const elf::section& sec : file.elf().sections()) {
        if (sec.get_hdr().type == type) read_table(file.elf(), sec, symbols, ranks);
      }
      if (!symbols.empty()) break;  // .dynsym only when .symtab has nothing
    }
  } catch (...) {
  }
  std::vector<size_t> order(symbols.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (symbols[a].begin != symbols[b].begin) return symbols[a].begin < symbols[b].begin;
    if (ranks[a] != ranks[b]) return ranks[a] < ranks[b];
    return symbols[a].name < symbols[b].name;  // deterministic among equals
  });
  std::vector<FunctionSymbol> result;
  result.reserve(symbols.size());
  for (size_t i : order) {
    if (!result.empty() && result.back().begin == symbols[i].begin) continue;
    result.push_back(symbols[i]);
  }
  return result;
}

}  // namespace coz
