#include "sanitizer_preload.h"

#include <elf.h>

#include <cstring>
#include <string_view>

#include "elf_file.h"

namespace coz::cli {

std::string sanitizer_runtime_to_preload(const std::string& program) {
  std::string error;
  std::optional<ElfFile> file = ElfFile::open(program, error);
  if (!file) return "";
  const ElfFile::Section dynamic = file->section(".dynamic");
  const ElfFile::Section strings = file->section(".dynstr");
  for (size_t at = 0; at + sizeof(Elf64_Dyn) <= dynamic.bytes.size(); at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn entry;
    std::memcpy(&entry, dynamic.bytes.data() + at, sizeof entry);
    if (entry.d_tag == DT_NULL) break;
    if (entry.d_tag != DT_NEEDED || entry.d_un.d_val >= strings.bytes.size()) continue;
    const char* name = reinterpret_cast<const char*>(strings.bytes.data()) + entry.d_un.d_val;
    const std::string_view needed(name, strnlen(name, strings.bytes.size() - entry.d_un.d_val));
    if (needed.starts_with("libasan.so") || needed.starts_with("libhwasan.so")) return std::string(needed);
  }
  return "";
}

}  // namespace coz::cli
