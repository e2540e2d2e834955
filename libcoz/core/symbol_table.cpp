#include "symbol_table.h"

#include <algorithm>

namespace coz {

namespace {
int binding_rank(elf::stb binding) {
  switch (binding) {
    case elf::stb::global: return 0;
    case elf::stb::weak: return 1;
    default: return 2;
  }
}

bool read_table(const elf::section& sec, std::vector<FunctionSymbol>& out, std::vector<int>& ranks) {
  try {
    for (const elf::sym& sym : sec.as_symtab()) {
      const auto& d = sym.get_data();
      if (d.type() != elf::stt::func || d.size == 0 || d.shnxd == elf::enums::undef) continue;
      size_t len = 0;
      const char* name = sym.get_name(&len);
      if (len == 0) continue;
      out.push_back({d.value, d.value + d.size, std::string_view(name, len)});
      ranks.push_back(binding_rank(d.binding()));
    }
  } catch (...) {
    // A string table index out of range: keep the symbols read so far.
  }
  return !out.empty();
}
}  // namespace

std::vector<FunctionSymbol> function_symbols(const ElfFile& file) {
  std::vector<FunctionSymbol> symbols;
  std::vector<int> ranks;
  try {
    for (elf::sht type : {elf::sht::symtab, elf::sht::dynsym}) {
      for (const elf::section& sec : file.elf().sections()) {
        if (sec.get_hdr().type == type) read_table(sec, symbols, ranks);
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
