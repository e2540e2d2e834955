#include "object_frames.h"

#include <elf.h>
#include <link.h>

#include <fmt/format.h>

#include <algorithm>

#include "debug_file.h"
#include "symbol_names.h"

namespace coz {
namespace {

struct Loaded {
  std::string name;
  uint64_t bias;
  uint64_t eh_frame_hdr;  // runtime address, 0 if none
};

/// Everything dl_iterate_phdr reports, copied out: the tables are built
/// after it returns, outside the loader lock it holds.
std::vector<Loaded> loaded_now(const std::string& main_executable) {
  std::vector<Loaded> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& v = *static_cast<std::vector<Loaded>*>(data);
        Loaded o{info->dlpi_name ? info->dlpi_name : "", info->dlpi_addr, 0};
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) o.eh_frame_hdr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
        }
        v.push_back(std::move(o));
        return 0;
      },
      &out);
  if (!out.empty() && out.front().name.empty()) out.front().name = main_executable;
  return out;
}

std::string_view base_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

/// .debug_frame from the file, or from its separate debug file.
std::optional<FrameTable> table_from_debug_frame(const std::string& path, uint64_t bias, std::string_view debug_root) {
  std::string error;
  auto file = ElfFile::open(path, error);
  if (!file) return std::nullopt;
  FrameTableBuilder builder;
  ElfFile::Section section = file->section(".debug_frame");
  std::optional<ElfFile> debug;
  if (section.bytes.empty()) {
    std::string debug_path = find_debug_file(*file, path, debug_root);
    if (debug_path.empty()) return std::nullopt;
    debug = ElfFile::open(debug_path, error);
    if (!debug) return std::nullopt;
    section = debug->section(".debug_frame");
    if (section.bytes.empty()) return std::nullopt;
  }
  builder.add_debug_frame(section.bytes, bias);
  FrameTable table = builder.finish(path);
  if (table.rows.empty()) return std::nullopt;
  return table;
}

/// Adds the .debug_frame the object's own file holds, if any. Go's linker
/// writes the CFI of Go's functions there alone: a Go program linked with
/// the C toolchain has an .eh_frame for its C parts only, and every walk
/// from Go code stopped for want of CFI. GCC and Clang write .eh_frame,
/// and a separate debug file's .debug_frame is read only for an object
/// without one (table_from_debug_frame). `file` must outlive the builder's finish().
void add_own_debug_frame(FrameTableBuilder& builder, const ElfFile& file, uint64_t bias) {
  ElfFile::Section section = file.section(".debug_frame");
  if (!section.bytes.empty()) builder.add_debug_frame(section.bytes, bias);
}

}  // namespace

size_t ObjectFrames::add_loaded(const std::string& main_executable, std::string_view debug_root) {
  debug_root_ = std::string(debug_root);
  size_t added = 0;
  for (const Loaded& o : loaded_now(main_executable)) {
    bool seen = std::any_of(objects_.begin(), objects_.end(),
                            [&](const Object& known) { return known.path == o.name && known.bias == o.bias; });
    if (seen) continue;
    std::optional<FrameTable> table;
    const bool has_file = !o.name.empty() && o.name.front() == '/';
    std::optional<ElfFile> file;  // opened once: for its .debug_frame, then for its symbols
    if (has_file) {
      std::string error;
      file = ElfFile::open(o.name, error);
    }
    if (o.eh_frame_hdr) {
      FrameTableBuilder builder;
      builder.add_eh_frame_hdr(reinterpret_cast<const uint8_t*>(o.eh_frame_hdr));  // first: it wins where both describe a function
      if (file) add_own_debug_frame(builder, *file, o.bias);
      FrameTable t = builder.finish(o.name);
      if (!t.rows.empty()) table = std::move(t);
    }
    if (!table && has_file) table = table_from_debug_frame(o.name, o.bias, debug_root);
    const FrameTable* published = nullptr;
    if (table) {
      tables_.add(std::move(*table));
      published = &tables_.tables().back();
    } else {
      ++without_cfi_;
    }
    objects_.push_back({o.name, o.bias, published, false, {}, {}});
    if (published && file) map_symbol_files(objects_.back(), std::move(*file));
    ++added;
  }
  if (added > 0) tables_.publish();
  return added;
}

void ObjectFrames::map_symbol_files(Object& object, ElfFile file) {
  std::string error;
  auto owned = std::make_unique<ElfFile>(std::move(file));
  bool has_symtab = false;
  for (const auto& sec : owned->elf().sections()) has_symtab = has_symtab || sec.get_hdr().type == elf::sht::symtab;
  std::string debug_path = has_symtab ? std::string() : find_debug_file(*owned, object.path, debug_root_);
  object.files.push_back(std::move(owned));
  if (debug_path.empty()) return;
  // Distributions strip .symtab into the debug file: it names the internal
  // functions (__memmove_avx_unaligned_erms) that .dynsym does not.
  if (auto debug = ElfFile::open(debug_path, error)) object.files.push_back(std::make_unique<ElfFile>(std::move(*debug)));
}

void ObjectFrames::read_symbols(Object& object) {
  object.symbols_read = true;
  if (object.files.empty()) return;
  object.symbols = function_symbols(*object.files.front());
  if (object.files.size() < 2) return;
  std::vector<FunctionSymbol> symbols = function_symbols(*object.files.back());
  if (!symbols.empty()) object.symbols = std::move(symbols);
}

std::string ObjectFrames::function_name(uint64_t function_start) {
  auto memo = names_.find(function_start);
  if (memo != names_.end()) return memo->second;
  std::string name;
  const FrameTable* table = tables_.find(function_start);
  auto it = std::find_if(objects_.begin(), objects_.end(), [&](const Object& o) { return o.table == table; });
  if (!table || it == objects_.end()) {
    name = fmt::format("{:#x}", function_start) + " [?]";
  } else {
    Object& object = *it;
    if (!object.symbols_read) read_symbols(object);
    uint64_t file_address = function_start - object.bias;
    auto sym = std::upper_bound(object.symbols.begin(), object.symbols.end(), file_address,
                                [](uint64_t a, const FunctionSymbol& s) { return a < s.begin; });
    std::string function;
    if (sym != object.symbols.begin() && file_address < std::prev(sym)->end) {
      function = demangle(std::prev(sym)->name);
      // A stack's frames are `;`-separated, and a Rust array type has one
      // (`core::ptr::drop_in_place::<[u8; 4]>`): written `,` as --collapsed does.
      std::replace(function.begin(), function.end(), ';', ',');
    } else {
      function = fmt::format("{:#x}", file_address);
    }
    name = function + " [" + std::string(base_name(object.path)) + "]";
  }
  names_.emplace(function_start, name);
  return name;
}

}  // namespace coz
