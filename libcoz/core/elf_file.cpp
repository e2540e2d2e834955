#include "elf_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>

namespace coz {

namespace {
// Not in libelfin's shf enum (it predates gABI's compressed sections).
constexpr uint64_t shf_compressed = 0x800;
}  // namespace

std::optional<ElfFile> ElfFile::open(const std::string& path, std::string& error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  try {
    // The loader owns (and closes) fd, and maps the whole file.
    ElfFile file{elf::elf(elf::create_mmap_loader(fd))};
    for (const elf::segment& seg : file.elf_.segments()) {
      const auto& hdr = seg.get_hdr();
      if (hdr.type == elf::pt::load && (hdr.flags & elf::pf::x) == elf::pf::x && hdr.memsz > 0) {
        file.code_segments_.push_back({hdr.vaddr, hdr.vaddr + hdr.memsz});
      }
    }
    return file;
  } catch (const std::exception& e) {
    error = path + ": not a readable ELF file (" + e.what() + ")";
  } catch (...) {
    error = path + ": not a readable ELF file";
  }
  return std::nullopt;
}

ElfFile::Section ElfFile::section(std::string_view name) const {
  Section result;
  try {
    for (const elf::section& sec : elf_.sections()) {
      size_t len = 0;
      const char* sec_name = sec.get_name(&len);
      if (std::string_view(sec_name, len) != name) continue;
      const auto& hdr = sec.get_hdr();
      result.present = true;
      result.compressed = (static_cast<uint64_t>(hdr.flags) & shf_compressed) != 0;
      if (hdr.type != elf::sht::nobits && sec.size() > 0) {
        result.bytes = {static_cast<const uint8_t*>(sec.data()), sec.size()};
      }
      return result;
    }
  } catch (...) {
    // A section header pointing outside the file: treat the section as absent.
  }
  return Section{};
}

}  // namespace coz
