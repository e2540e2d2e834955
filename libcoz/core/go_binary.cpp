#include "go_binary.h"

#include <cstring>

#include "symbol_table.h"

namespace coz {
namespace {

/// Whether the dynamic symbol table names `wanted` (defined or imported).
bool has_dynamic_symbol(const ElfFile& file, const char* wanted) {
  try {
    for (const elf::section& sec : file.elf().sections()) {
      if (sec.get_hdr().type != elf::sht::dynsym) continue;
      for (const elf::sym& symbol : sec.as_symtab()) {
        if (std::strcmp(symbol.get_name().c_str(), wanted) == 0) return true;
      }
    }
  } catch (...) {
  }
  return false;
}

}  // namespace

int64_t go_g_tls_offset(const ElfFile& file) {
  try {
    uint64_t tls_size = 0, tls_align = 1;
    bool has_tls = false;
    for (const elf::segment& segment : file.elf().segments()) {
      const auto& hdr = segment.get_hdr();
      if (hdr.type != static_cast<elf::pt>(7)) continue;  // PT_TLS, which libelfin does not name
      has_tls = true;
      tls_size = hdr.memsz;
      tls_align = hdr.align > 0 ? hdr.align : 1;
    }
    if (!has_tls) return 0;
    const uint64_t block = (tls_size + tls_align - 1) / tls_align * tls_align;
    for (const elf::section& sec : file.elf().sections()) {
      if (sec.get_hdr().type != elf::sht::symtab) continue;
      for (const elf::sym& symbol : sec.as_symtab()) {
        const auto& data = symbol.get_data();
        constexpr auto stt_tls = static_cast<elf::stt>(6);  // STT_TLS, which libelfin does not name
        if (data.type() != stt_tls || symbol.get_name() != "runtime.tlsg") continue;
        return static_cast<int64_t>(data.value) - static_cast<int64_t>(block);
      }
    }
  } catch (...) {
  }
  return 0;
}

uint64_t go_assembly_function(const ElfFile& file, const std::string& name) {
  const std::string abi0 = name + ".abi0";
  for (const FunctionSymbol& symbol : function_symbols(file)) {
    if (symbol.name == abi0 || symbol.name == name) return symbol.begin;
  }
  return 0;
}

bool is_go_program(const ElfFile& file) { return file.has_section(".note.go.buildid"); }

bool is_go_program_without_cgo(const ElfFile& file) {
  return is_go_program(file) && !has_dynamic_symbol(file, "pthread_create");
}

}  // namespace coz
