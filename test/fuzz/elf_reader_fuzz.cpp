// libFuzzer target: the runtime's readers of binaries. The runtime reads
// every object the program loads, inside the program's process, so a
// malformed or hostile ELF file must never crash it, hang it or trip the
// sanitizers. The first input byte picks what the rest is:
//   0: a whole ELF file, read as the line map reads one (libelfin, the DWARF
//      2-5 line tables, the scopes of .debug_info, the symbol tables) and as
//      the unwinder does (its .eh_frame and .debug_frame);
//   1: raw DWARF sections (.debug_line, .debug_info, .debug_abbrev, the
//      string sections, and a dwz supplementary file's .debug_str,
//      .debug_abbrev and .debug_info), fed to the line-table and scope readers directly,
//      below libelfin's own checks;
//   2: raw call-frame information, as .eh_frame and as .debug_frame, then
//      looked up at addresses inside and around what it covers.
// Built and run by tools/scripts/run-tests.sh with clang
// (-fsanitize=fuzzer,address,undefined); seeds in corpus-elf/ (README.md).
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dwarf_lines.h"
#include "dwarf_scopes.h"
#include "elf_file.h"
#include "frame_table.h"
#include "line_map.h"
#include "symbol_table.h"

namespace {

using Bytes = std::span<const uint8_t>;

/// Looks every row's start up, and addresses around the table: what the
/// sampling path does with whatever the builder kept.
void probe(const coz::FrameTable& table) {
  for (const coz::FrameRow& row : table.rows) {
    (void)table.find(table.base + row.start);
    (void)table.function_start(table.base + row.start);
  }
  for (uint64_t pc : {table.base - 1, table.base, table.end - 1, table.end, uint64_t{0}, UINT64_MAX}) {
    (void)table.find(pc);
    (void)table.function_start(pc);
  }
}

void frames(Bytes eh_frame, uint64_t eh_address, Bytes debug_frame) {
  coz::FrameTableBuilder builder;
  builder.add_eh_frame(eh_frame, eh_address, 0x400000);
  builder.add_debug_frame(debug_frame, 0x400000);
  probe(builder.finish("fuzz"));
}

/// The file as the runtime reads a loaded object. It lives in a memfd: the
/// readers take a path, and /proc/self/fd/N is one.
void whole_file(Bytes data) {
  static const int fd = memfd_create("elf_reader_fuzz", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0) return;
  if (!data.empty() && pwrite(fd, data.data(), data.size(), 0) != static_cast<ssize_t>(data.size())) return;

  coz::LineMap map;
  const coz::ObjectLines lines =
      map.add_object(path, 0x400000, [](std::string_view) { return true; }, "/nonexistent-debug-root");
  (void)lines;
  map.finalize();
  for (const coz::SourceLine& line : map.lines()) (void)map.first_address(&line);

  std::string error;
  std::optional<coz::ElfFile> elf = coz::ElfFile::open(path, error);
  if (!elf) return;
  (void)coz::function_symbols(*elf);
  const coz::ElfFile::Section eh = elf->section(".eh_frame");
  frames(eh.bytes, eh.address, elf->section(".debug_frame").bytes);
}

void dwarf_sections(FuzzedDataProvider& in) {
  // Each section a slice of the input; the byte vectors outlive the spans.
  std::vector<std::vector<uint8_t>> parts;
  for (int i = 0; i < 5; ++i) parts.push_back(in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(0, 4096)));
  // A supplementary (dwz) file's sections, reached through strp_alt/ref_alt forms and imported units.
  std::vector<std::vector<uint8_t>> shared_parts;
  for (int i = 0; i < 3; ++i) shared_parts.push_back(in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(0, 4096)));
  parts.push_back(in.ConsumeRemainingBytes<uint8_t>());
  coz::DwarfSections shared;
  shared.str = shared_parts[0];
  shared.abbrev = shared_parts[1];
  shared.info = shared_parts[2];
  coz::DwarfSections sections;
  sections.line = parts[0];
  sections.line_str = parts[1];
  sections.str = parts[2];
  sections.abbrev = parts[3];
  sections.str_offsets = parts[4];
  sections.info = parts[5];
  sections.supplementary = &shared;

  std::vector<uint64_t> offsets;
  coz::for_each_line_table(sections, [&](const coz::LineTable& table) { offsets.push_back(table.offset); });
  coz::DwarfScopes scopes(sections);
  for (uint64_t offset : offsets) {
    if (!scopes.load_unit(offset)) continue;
    for (const coz::DwarfScopes::Segment& s : scopes.segments()) (void)scopes.innermost(s.begin);
    for (uint32_t i = 0; i < scopes.scopes().size(); ++i) (void)scopes.raw_name(i);
  }
}

void raw_frames(FuzzedDataProvider& in) {
  const uint64_t eh_address = in.ConsumeIntegral<uint32_t>();
  std::vector<uint8_t> eh = in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(0, 8192));
  std::vector<uint8_t> debug = in.ConsumeRemainingBytes<uint8_t>();
  frames(eh, eh_address, debug);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Bytes rest(data + 1, size - 1);
  FuzzedDataProvider in(rest.data(), rest.size());
  switch (data[0] % 3) {
    case 0: whole_file(rest); break;
    case 1: dwarf_sections(in); break;
    default: raw_frames(in); break;
  }
  return 0;
}
