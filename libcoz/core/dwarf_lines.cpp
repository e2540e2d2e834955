#include "dwarf_lines.h"

#include <optional>
#include <string>

#include <fmt/format.h>

#include "dwarf_units.h"

namespace coz {

namespace {
using dwarf_reader::Cursor;
using dwarf_reader::FormContext;
using dwarf_reader::FormValue;

// DWARF 5 section 7.22.
enum StandardOpcode : uint8_t {
  lns_copy = 1, lns_advance_pc = 2, lns_advance_line = 3, lns_set_file = 4, lns_set_column = 5,
  lns_negate_stmt = 6, lns_set_basic_block = 7, lns_const_add_pc = 8, lns_fixed_advance_pc = 9,
  lns_set_prologue_end = 10, lns_set_epilogue_begin = 11, lns_set_isa = 12,
};
enum ExtendedOpcode : uint8_t { lne_end_sequence = 1, lne_set_address = 2, lne_define_file = 3, lne_set_discriminator = 4 };
enum LineContent : uint64_t { lnct_path = 1, lnct_directory_index = 2 };

struct Header {
  unsigned offset_size = 4;
  unsigned address_size = 8;
  uint8_t min_inst_length = 1;
  uint8_t max_ops = 1;
  int8_t line_base = 0;
  uint8_t line_range = 0;
  uint8_t opcode_base = 0;
  const uint8_t* standard_opcode_lengths = nullptr;  // opcode_base - 1 entries
  unsigned file_base = 1;                            // DWARF 2-4 number files from 1
  std::string_view comp_dir;
  std::vector<std::string> dirs;  // resolved directories, index = directory index
};

void append_component(std::string& out, std::string_view part, bool absolute) {
  if (part.empty() || part == ".") return;
  if (part == "..") {
    size_t slash = out.rfind('/');
    std::string_view last = slash == std::string::npos ? std::string_view(out) : std::string_view(out).substr(slash + 1);
    if (!out.empty() && last != ".." && !(absolute && out == "/")) {
      // Drop the last component (keep the root slash of an absolute path).
      out.resize(slash == std::string::npos ? 0 : (slash == 0 ? 1 : slash));
      return;
    }
    if (absolute) return;  // "/.." is "/"
  }
  if (!out.empty() && out.back() != '/') out += '/';
  out += part;
}

void append_path(std::string& out, std::string_view path, bool absolute) {
  while (!path.empty()) {
    size_t slash = path.find('/');
    append_component(out, path.substr(0, slash), absolute);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
}

/// A directory entry resolved against the compilation directory.
std::string resolve_dir(std::string_view comp_dir, std::string_view dir) {
  return (dir.empty() || dir.front() == '/' || comp_dir.empty()) ? join_path("", dir) : join_path(comp_dir, dir);
}

std::string file_path(const Header& h, std::string_view name, uint64_t dir_index) {
  if (!name.empty() && name.front() == '/') return join_path("", name);
  if (dir_index < h.dirs.size()) return join_path(h.dirs[dir_index], name);
  return join_path(h.comp_dir, name);  // a bad directory index: best guess
}

/// DWARF 5: the directory or file name table, described by its entry format.
bool read_entry_table(Cursor& cur, const FormContext& ctx, bool directories, Header& h, LineTable& table) {
  struct Format {
    uint64_t content;
    uint64_t form;
  };
  Format formats[16];
  uint8_t format_count = cur.u8();
  if (format_count > std::size(formats)) return false;
  for (unsigned i = 0; i < format_count; ++i) formats[i] = {cur.uleb(), cur.uleb()};
  uint64_t count = cur.uleb();
  for (uint64_t n = 0; n < count && cur.ok(); ++n) {
    const size_t entry_start = cur.offset();
    std::string_view path;
    uint64_t dir_index = 0;
    for (unsigned i = 0; i < format_count; ++i) {
      FormValue v;
      if (!dwarf_reader::read_form(cur, formats[i].form, ctx, v)) return false;
      if (formats[i].content == lnct_path && v.is_string) path = v.string;
      if (formats[i].content == lnct_directory_index && !v.is_string) dir_index = v.number;
    }
    // An entry that takes no bytes (no formats, or only DW_FORM_flag_present)
    // says nothing, and a count of 2^62 of them was a hang with a vector
    // growing to gigabytes (found by test/fuzz/elf_reader_fuzz.cpp). Every
    // real entry holds a path, so each reads at least a byte, and the loop
    // ends with the unit's bytes whatever the count says.
    if (cur.offset() == entry_start) return false;
    if (directories) {
      // Entry 0 is the compilation directory; the others are relative to it.
      if (n == 0) h.comp_dir = path;
      h.dirs.push_back(n == 0 ? join_path("", path) : resolve_dir(h.dirs[0], path));
    } else {
      table.files.push_back(file_path(h, path, dir_index));
    }
  }
  return cur.ok();
}

/// DWARF 2-4: include_directories and file_names, each ended by an empty entry.
bool read_v4_tables(Cursor& cur, Header& h, LineTable& table) {
  h.dirs.push_back(join_path("", h.comp_dir));  // directory 0 is the compilation directory
  for (std::string_view dir = cur.cstr(); !dir.empty() && cur.ok(); dir = cur.cstr()) {
    h.dirs.push_back(resolve_dir(h.comp_dir, dir));
  }
  for (std::string_view name = cur.cstr(); !name.empty() && cur.ok(); name = cur.cstr()) {
    uint64_t dir_index = cur.uleb();
    cur.uleb();  // modification time
    cur.uleb();  // length
    table.files.push_back(file_path(h, name, dir_index));
  }
  return cur.ok();
}

/// Reads the header up to the line-number program. `unit` starts after unit_length.
bool read_header(Cursor& unit, const DwarfSections& sections, const CompDirs* comp_dirs, Header& h,
                 LineTable& table) {
  table.version = unit.u16();
  if (table.version < 2 || table.version > 5) {
    table.error = "unsupported .debug_line version " + std::to_string(table.version);
    return false;
  }
  if (table.version >= 5) {
    h.address_size = unit.u8();
    unit.u8();  // segment_selector_size
  }
  uint64_t header_length = unit.offset_of_size(h.offset_size);
  size_t program_offset = unit.offset() + header_length;
  h.min_inst_length = unit.u8();
  if (table.version >= 4) h.max_ops = unit.u8();
  if (h.max_ops == 0) h.max_ops = 1;
  unit.u8();  // default_is_stmt
  h.line_base = static_cast<int8_t>(unit.u8());
  h.line_range = unit.u8();
  h.opcode_base = unit.u8();
  if (!unit.ok() || h.line_range == 0 || h.opcode_base == 0) {
    table.error = "bad header (line_range or opcode_base is 0)";
    return false;
  }
  h.standard_opcode_lengths = unit.pos();
  unit.skip(h.opcode_base - 1);

  bool tables_ok;
  if (table.version >= 5) {
    h.file_base = 0;
    FormContext ctx;
    ctx.version = table.version;
    ctx.offset_size = h.offset_size;
    ctx.address_size = h.address_size;
    ctx.debug_str = sections.str;
    ctx.debug_line_str = sections.line_str;
    if (sections.supplementary) ctx.debug_str_sup = sections.supplementary->str;
    tables_ok = read_entry_table(unit, ctx, true, h, table) && read_entry_table(unit, ctx, false, h, table);
  } else {
    if (comp_dirs) h.comp_dir = comp_dirs->find(table.offset);
    tables_ok = read_v4_tables(unit, h, table);
  }
  if (!tables_ok) {
    table.error = "bad directory or file name table";
    return false;
  }
  unit.seek(program_offset);  // header_length wins over what we parsed (vendor extensions)
  if (!unit.ok()) table.error = "header_length past the end of the unit";
  return unit.ok();
}

/// Runs the line-number program; appends whole sequences to table.rows.
void run_program(Cursor& cur, const Header& h, LineTable& table) {
  uint64_t address = 0;
  uint64_t op_index = 0;
  uint64_t file = 1;
  uint32_t line = 1;
  size_t sequence_start = table.rows.size();

  auto advance = [&](uint64_t operation_advance) {
    if (h.max_ops == 1) {
      address += h.min_inst_length * operation_advance;
    } else {  // VLIW: op_index counts operations within an instruction
      address += h.min_inst_length * ((op_index + operation_advance) / h.max_ops);
      op_index = (op_index + operation_advance) % h.max_ops;
    }
  };
  auto emit = [&](bool end_sequence) {
    uint64_t index = file - h.file_base;  // wraps for file 0 in DWARF 2-4: caught below
    uint32_t f = index < table.files.size() ? static_cast<uint32_t>(index) : LineTable::no_file;
    table.rows.push_back({address, f, line, end_sequence});
  };
  auto reset = [&] {
    address = 0;
    op_index = 0;
    file = 1;
    line = 1;
    sequence_start = table.rows.size();
  };

  while (!cur.at_end()) {
    uint8_t op = cur.u8();
    if (op >= h.opcode_base) {  // special opcode: advance address and line, emit a row
      unsigned adjusted = op - h.opcode_base;
      advance(adjusted / h.line_range);
      line += static_cast<uint32_t>(h.line_base + static_cast<int>(adjusted % h.line_range));
      emit(false);
      continue;
    }
    switch (op) {
      case 0: {  // extended opcode
        uint64_t len = cur.uleb();
        Cursor ext = cur.sub(len);
        if (len == 0) break;
        switch (ext.u8()) {
          case lne_end_sequence:
            emit(true);
            reset();
            break;
          case lne_set_address:
            address = ext.unsigned_of_size(static_cast<unsigned>(len - 1));
            op_index = 0;
            break;
          case lne_define_file: {
            std::string_view name = ext.cstr();
            uint64_t dir_index = ext.uleb();
            if (ext.ok()) table.files.push_back(file_path(h, name, dir_index));
            break;
          }
          default:  // set_discriminator and vendor opcodes: nothing we use
            break;
        }
        if (!ext.ok()) cur.fail();
        break;
      }
      case lns_copy: emit(false); break;
      case lns_advance_pc: advance(cur.uleb()); break;
      case lns_advance_line: line += static_cast<uint32_t>(cur.sleb()); break;
      case lns_set_file: file = cur.uleb(); break;
      case lns_const_add_pc: advance((255 - h.opcode_base) / h.line_range); break;
      case lns_fixed_advance_pc:
        address += cur.u16();
        op_index = 0;
        break;
      case lns_negate_stmt: case lns_set_basic_block: case lns_set_prologue_end: case lns_set_epilogue_begin:
        break;
      default:  // set_column, set_isa, and opcodes newer than us: skip their ULEB operands
        for (uint8_t i = 0; i < h.standard_opcode_lengths[op - 1]; ++i) cur.uleb();
        break;
    }
  }
  if (!cur.ok()) {
    table.error = "truncated or bad line-number program";
  } else if (table.rows.size() != sequence_start) {
    table.error = "sequence without DW_LNE_end_sequence";
  }
  table.rows.resize(sequence_start);  // keep whole sequences only
}

void read_unit(Cursor& section, const DwarfSections& sections, const CompDirs* comp_dirs, LineTable& table) {
  Header h;
  uint64_t length = section.initial_length(h.offset_size);
  Cursor unit = section.sub(length);
  if (!section.ok()) {
    table.error = "unit length past the end of .debug_line";
    return;
  }
  if (read_header(unit, sections, comp_dirs, h, table)) run_program(unit, h, table);
}
}  // namespace

std::string join_path(std::string_view dir, std::string_view file) {
  std::string out;
  out.reserve(dir.size() + file.size() + 1);
  bool absolute = (!file.empty() && file.front() == '/') || (!dir.empty() && dir.front() == '/');
  if (absolute) out = "/";
  if (file.empty() || file.front() != '/') append_path(out, dir, absolute);
  append_path(out, file, absolute);
  if (out.empty()) out = ".";
  return out;
}

size_t for_each_line_table(const DwarfSections& sections, const std::function<void(const LineTable&)>& visit) {
  size_t failed_units = 0;
  {
    // Only DWARF 2-4 units need .debug_info, so it is read on the first one.
    std::optional<CompDirs> comp_dirs;
    std::string comp_dir_error;
    Cursor section(sections.line);
    LineTable table;
    while (!section.at_end()) {
      table.offset = section.offset();
      table.version = 0;
      table.files.clear();
      table.rows.clear();
      table.error.clear();
      // Peek at the version to know whether the comp dirs are needed.
      Cursor peek = section;
      unsigned offset_size = 4;
      peek.initial_length(offset_size);
      uint16_t version = peek.u16();
      if (version >= 2 && version <= 4 && !comp_dirs) comp_dirs = CompDirs::read(sections, comp_dir_error);
      read_unit(section, sections, comp_dirs ? &*comp_dirs : nullptr, table);
      if (!table.error.empty()) {
        ++failed_units;
        table.error = fmt::format("unit at .debug_line+{:#x}: {}", table.offset, table.error);
      }
      visit(table);
    }
  }
  return failed_units;
}

std::vector<LineTable> read_line_tables(const DwarfSections& sections) {
  std::vector<LineTable> tables;
  for_each_line_table(sections, [&](const LineTable& t) { tables.push_back(t); });
  return tables;
}

}  // namespace coz
