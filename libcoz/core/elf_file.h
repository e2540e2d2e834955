// An ELF file opened for reading its debug sections.
//
// A thin layer over libelfin that turns its exceptions into error messages
// and hands out section bytes as spans, so the DWARF readers never see
// libelfin types. Compressed sections (SHF_COMPRESSED, -gz: zlib or zstd) are inflated
// on first use and kept for the life of the ElfFile.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <libelfin/elf/elf++.hh>

namespace coz {

class ElfFile {
 public:
  struct Section {
    std::span<const uint8_t> bytes;  // empty if absent or SHT_NOBITS (a stripped copy); inflated if compressed
    uint64_t address = 0;            // sh_addr: where the section is loaded (file address, before the load bias)
    bool present = false;
    bool compressed = false;  // SHF_COMPRESSED in the file
    std::string error;        // non-empty: a compressed section that could not be inflated (bytes empty)
  };

  /// A virtual address range [begin, end) of a loadable, executable segment.
  struct CodeSegment {
    uint64_t begin;
    uint64_t end;
  };

  /// Opens and maps `path`. Never throws: on failure returns nullopt and sets `error`.
  static std::optional<ElfFile> open(const std::string& path, std::string& error);

  /// The section named `name` (".debug_line", ...). Not thread-safe: the
  /// first call for a compressed section inflates it.
  Section section(std::string_view name) const;
  /// Whether the file has a section of that name, without reading (or
  /// decompressing) it.
  bool has_section(std::string_view name) const;

  /// The GNU build ID (.note.gnu.build-id), empty if none.
  std::span<const uint8_t> build_id() const;

  /// Executable PT_LOAD segments (file addresses, before the load bias).
  const std::vector<CodeSegment>& code_segments() const { return code_segments_; }

  const elf::elf& elf() const { return elf_; }

 private:
  explicit ElfFile(elf::elf e) : elf_(std::move(e)) {}
  elf::elf elf_;
  std::vector<CodeSegment> code_segments_;
  struct Inflated {
    std::string name;
    std::vector<uint8_t> bytes;
  };
  mutable std::vector<std::unique_ptr<Inflated>> inflated_;  // stable addresses across moves
};

}  // namespace coz
