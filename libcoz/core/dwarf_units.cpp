#include "dwarf_units.h"

#include <algorithm>

namespace coz {

namespace {
using dwarf_reader::Cursor;
using dwarf_reader::FormContext;
using dwarf_reader::FormValue;

// DWARF 5 unit types whose header carries extra fields before the first DIE.
constexpr uint8_t dw_ut_type = 0x02, dw_ut_skeleton = 0x04, dw_ut_split_compile = 0x05, dw_ut_split_type = 0x06;

bool read_root_attributes(const DwarfSections& sections, const UnitHeader& unit, const AbbrevTable& abbrevs,
                          UnitRoot& root, bool& has_str_offsets_base, uint64_t& str_offsets_base) {
  Cursor die(sections.info.data(), sections.info.data() + unit.end);
  die.seek(unit.first_die);
  uint64_t code = die.uleb();
  const AbbrevTable::Abbrev* abbrev = die.ok() && code != 0 ? abbrevs.find(code) : nullptr;
  if (!abbrev) return false;
  root.tag = abbrev->tag;
  uint64_t low_pc_form = 0;
  for (const AbbrevTable::Attr& attr : abbrevs.attrs(*abbrev)) {
    FormValue value;
    if (!dwarf_reader::read_form(die, attr.form, unit.form, value, attr.implicit_const)) return false;
    if (value.is_string) {
      if (attr.name == dw::at_comp_dir && value.resolved) root.comp_dir = value.string;
      continue;
    }
    switch (attr.name) {
      case dw::at_stmt_list: root.stmt_list = value.number; root.has_stmt_list = true; break;
      case dw::at_low_pc: root.low_pc = value.number; low_pc_form = attr.form; break;
      case dw::at_addr_base: root.addr_base = value.number; break;
      case dw::at_rnglists_base: root.rnglists_base = value.number; root.has_rnglists_base = true; break;
      case dw::at_str_offsets_base: str_offsets_base = value.number; has_str_offsets_base = true; break;
      default: break;
    }
  }
  if (dw::is_addrx(low_pc_form)) {
    uint64_t index = root.low_pc;
    root.low_pc = 0;
    address_at(sections.addr, root.addr_base, unit.form.address_size, index, root.low_pc);
  }
  return true;
}
}  // namespace

bool read_unit_header(Cursor& info, const DwarfSections& sections, UnitHeader& out) {
  out = UnitHeader{};
  out.offset = info.offset();
  unsigned offset_size = 4;
  uint64_t length = info.initial_length(offset_size);
  size_t contents = info.offset();
  Cursor unit = info.sub(length);
  if (!info.ok()) return false;
  out.end = contents + length;
  FormContext& ctx = out.form;
  ctx.offset_size = offset_size;
  ctx.debug_str = sections.str;
  ctx.debug_line_str = sections.line_str;
  ctx.debug_str_offsets = sections.str_offsets;
  if (sections.supplementary) ctx.debug_str_sup = sections.supplementary->str;
  ctx.version = unit.u16();
  if (ctx.version < 2 || ctx.version > 5) return false;
  if (ctx.version >= 5) {
    out.unit_type = unit.u8();
    ctx.address_size = unit.u8();
    out.abbrev_offset = unit.offset_of_size(offset_size);
    if (out.unit_type == dw_ut_skeleton || out.unit_type == dw_ut_split_compile) {
      unit.skip(8);  // dwo_id
    } else if (out.unit_type == dw_ut_type || out.unit_type == dw_ut_split_type) {
      unit.skip(8);  // type_signature
      unit.offset_of_size(offset_size);
    }
  } else {
    out.abbrev_offset = unit.offset_of_size(offset_size);
    ctx.address_size = unit.u8();
  }
  out.first_die = contents + unit.offset();
  return unit.ok() && ctx.address_size >= 1 && ctx.address_size <= 8;
}

bool read_unit_root(const DwarfSections& sections, UnitHeader& unit, AbbrevTable& abbrevs, UnitRoot& root) {
  root = UnitRoot{};
  if (!abbrevs.load(sections.abbrev, unit.abbrev_offset, unit.form)) return false;
  bool has_base = false;
  uint64_t base = 0;
  if (!read_root_attributes(sections, unit, abbrevs, root, has_base, base)) return false;
  if (has_base && !unit.form.has_str_offsets_base) {
    // A strx comp_dir may come before DW_AT_str_offsets_base: read again with the base.
    unit.form.has_str_offsets_base = true;
    unit.form.str_offsets_base = base;
    root = UnitRoot{};
    return read_root_attributes(sections, unit, abbrevs, root, has_base, base);
  }
  return true;
}

bool address_at(std::span<const uint8_t> debug_addr, uint64_t addr_base, unsigned address_size, uint64_t index,
                uint64_t& out) {
  Cursor cur(debug_addr);
  cur.seek(addr_base + index * address_size);
  out = cur.unsigned_of_size(address_size);
  return cur.ok();
}

bool AbbrevTable::load(std::span<const uint8_t> section, uint64_t offset, const FormContext& form) {
  if (loaded_ && section.data() == section_ && offset == offset_ && form.version == version_ && form.offset_size == offset_size_ &&
      form.address_size == address_size_) {
    return true;
  }
  loaded_ = false;
  by_code_.clear();
  sparse_.clear();
  attrs_.clear();
  Cursor cur(section);
  cur.seek(offset);
  while (cur.ok() && !cur.at_end()) {
    uint64_t code = cur.uleb();
    if (code == 0) break;  // end of this unit's table
    Abbrev a;
    a.tag = static_cast<uint32_t>(cur.uleb());
    a.has_children = cur.u8() != 0;
    a.first_attr = static_cast<uint32_t>(attrs_.size());
    int32_t fixed = 0;
    for (;;) {
      uint64_t name = cur.uleb();
      uint64_t f = cur.uleb();
      int64_t implicit_const = f == dw::form_implicit_const ? cur.sleb() : 0;
      if (!cur.ok()) return false;
      if (name == 0 && f == 0) break;
      attrs_.push_back({static_cast<uint32_t>(name), static_cast<uint32_t>(f), implicit_const});
      a.has_sibling |= name == dw::at_sibling;
      int size = dwarf_reader::fixed_form_size(f, form);
      fixed = (fixed < 0 || size < 0) ? -1 : fixed + size;
    }
    a.attr_count = static_cast<uint32_t>(attrs_.size()) - a.first_attr;
    a.fixed_size = fixed;
    if (a.tag == 0 && a.attr_count == 0) a.tag = UINT32_MAX;  // keep find() from treating it as absent
    if (code < 4096 + 4 * by_code_.size()) {
      if (code >= by_code_.size()) by_code_.resize(code + 1);
      by_code_[code] = a;
    } else {
      sparse_.emplace_back(code, a);
    }
  }
  if (!cur.ok()) return false;
  loaded_ = true;
  section_ = section.data();
  offset_ = offset;
  version_ = form.version;
  offset_size_ = form.offset_size;
  address_size_ = form.address_size;
  return true;
}

CompDirs CompDirs::read(const DwarfSections& sections, std::string& error) {
  CompDirs result;
  AbbrevTable abbrevs;
  Cursor info(sections.info);
  while (!info.at_end()) {
    UnitHeader unit;
    bool ok = read_unit_header(info, sections, unit);
    if (!info.ok()) {
      if (error.empty()) error = "truncated .debug_info unit at offset " + std::to_string(unit.offset);
      break;
    }
    UnitRoot root;
    if (ok && read_unit_root(sections, unit, abbrevs, root) && root.has_stmt_list && !root.comp_dir.empty()) {
      result.entries_.push_back({root.stmt_list, root.comp_dir});
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
