#include "dwarf_units.h"

#include <algorithm>

namespace coz {

namespace {
using dwarf_reader::Cursor;
using dwarf_reader::FormContext;
using dwarf_reader::FormValue;

constexpr uint64_t dw_at_stmt_list = 0x10;
constexpr uint64_t dw_at_comp_dir = 0x1b;
constexpr uint64_t dw_form_implicit_const = 0x21;

// DWARF 5 unit types whose header carries extra fields before the first DIE.
constexpr uint8_t dw_ut_type = 0x02, dw_ut_skeleton = 0x04, dw_ut_split_compile = 0x05, dw_ut_split_type = 0x06;

/// Positions `abbrev` at the attribute specifications of abbreviation `code`
/// in the table starting at `table_offset`.
bool find_abbrev(std::span<const uint8_t> section, uint64_t table_offset, uint64_t code, Cursor& abbrev) {
  abbrev = Cursor(section);
  abbrev.seek(table_offset);
  while (abbrev.ok() && !abbrev.at_end()) {
    uint64_t this_code = abbrev.uleb();
    if (this_code == 0) return false;  // end of this unit's table
    abbrev.uleb();                     // tag
    abbrev.u8();                       // has children
    if (this_code == code) return abbrev.ok();
    for (;;) {
      uint64_t name = abbrev.uleb();
      uint64_t form = abbrev.uleb();
      if (form == dw_form_implicit_const) abbrev.sleb();
      if ((name == 0 && form == 0) || !abbrev.ok()) break;
    }
  }
  return false;
}

/// Reads one unit (the cursor is its contents after the length) and its
/// root DIE's stmt_list and comp_dir.
bool read_unit(Cursor unit, unsigned offset_size, const DwarfSections& sections, uint64_t& stmt_list,
               std::string_view& comp_dir) {
  FormContext ctx;
  ctx.offset_size = offset_size;
  ctx.debug_str = sections.str;
  ctx.debug_line_str = sections.line_str;
  ctx.version = unit.u16();
  if (ctx.version < 2 || ctx.version > 5) return false;
  uint64_t abbrev_offset = 0;
  if (ctx.version >= 5) {
    uint8_t unit_type = unit.u8();
    ctx.address_size = unit.u8();
    abbrev_offset = unit.offset_of_size(offset_size);
    if (unit_type == dw_ut_skeleton || unit_type == dw_ut_split_compile) {
      unit.skip(8);  // dwo_id
    } else if (unit_type == dw_ut_type || unit_type == dw_ut_split_type) {
      unit.skip(8);  // type_signature
      unit.offset_of_size(offset_size);
    }
  } else {
    abbrev_offset = unit.offset_of_size(offset_size);
    ctx.address_size = unit.u8();
  }
  uint64_t code = unit.uleb();
  Cursor abbrev;
  if (!unit.ok() || code == 0 || !find_abbrev(sections.abbrev, abbrev_offset, code, abbrev)) return false;

  bool have_stmt_list = false;
  for (;;) {
    uint64_t name = abbrev.uleb();
    uint64_t form = abbrev.uleb();
    int64_t implicit_const = form == dw_form_implicit_const ? abbrev.sleb() : 0;
    if (!abbrev.ok() || (name == 0 && form == 0)) break;
    FormValue value;
    if (!dwarf_reader::read_form(unit, form, ctx, value, implicit_const)) return false;
    if (name == dw_at_stmt_list && !value.is_string) {
      stmt_list = value.number;
      have_stmt_list = true;
    } else if (name == dw_at_comp_dir && value.is_string && value.resolved) {
      comp_dir = value.string;
    }
  }
  return have_stmt_list;
}
}  // namespace

CompDirs CompDirs::read(const DwarfSections& sections, std::string& error) {
  CompDirs result;
  Cursor info(sections.info);
  while (!info.at_end()) {
    size_t unit_offset = info.offset();
    unsigned offset_size = 4;
    uint64_t length = info.initial_length(offset_size);
    Cursor unit = info.sub(length);
    if (!info.ok()) {
      if (error.empty()) error = "truncated .debug_info unit at offset " + std::to_string(unit_offset);
      break;
    }
    uint64_t stmt_list = 0;
    std::string_view comp_dir;
    if (read_unit(unit, offset_size, sections, stmt_list, comp_dir)) {
      if (!comp_dir.empty()) result.entries_.push_back({stmt_list, comp_dir});
    }
  }
  std::sort(result.entries_.begin(), result.entries_.end(),
            [](const Entry& a, const Entry& b) { return a.line_offset < b.line_offset; });
  return result;
}

std::string_view CompDirs::find(uint64_t line_offset) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), line_offset,
                             [](const Entry& e, uint64_t off) { return e.line_offset < off; });
  if (it == entries_.end() || it->line_offset != line_offset) return {};
  return it->comp_dir;
}

}  // namespace coz
