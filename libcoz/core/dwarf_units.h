// The units of .debug_info: their headers, abbreviation tables, and the
// compilation directory of each, keyed by its line table.
//
// DWARF 2-4 line tables name files relative to the compilation directory,
// which only the unit's DIE in .debug_info carries (DW_AT_comp_dir, with
// DW_AT_stmt_list pointing at the line table). We read .debug_info ourselves:
// libelfin's dwarf::dwarf refuses a whole file as soon as one unit is DWARF 5,
// and a binary can mix versions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwarf_reader.h"

namespace coz {

/// DWARF attribute and tag codes we read (DWARF 5 sections 7.5.3, 7.5.4).
namespace dw {
enum Tag : uint32_t {
  tag_class_type = 0x02, tag_enumeration_type = 0x04, tag_lexical_block = 0x0b, tag_compile_unit = 0x11,
  tag_structure_type = 0x13, tag_union_type = 0x17, tag_inlined_subroutine = 0x1d, tag_subprogram = 0x2e,
  tag_partial_unit = 0x3c, tag_imported_unit = 0x3d,  // dwz: DIEs shared between units, and their use
};
enum Attribute : uint32_t {
  at_sibling = 0x01, at_name = 0x03, at_stmt_list = 0x10, at_import = 0x18, at_low_pc = 0x11, at_high_pc = 0x12,
  at_comp_dir = 0x1b, at_abstract_origin = 0x31, at_specification = 0x47, at_ranges = 0x55,
  at_call_file = 0x58, at_call_line = 0x59, at_linkage_name = 0x6e, at_str_offsets_base = 0x72,
  at_addr_base = 0x73, at_rnglists_base = 0x74, at_mips_linkage_name = 0x2007,
};
enum FormCode : uint32_t {
  form_addr = 0x01, form_ref_addr = 0x10, form_ref1 = 0x11, form_ref2 = 0x12, form_ref4 = 0x13,
  form_ref8 = 0x14, form_ref_udata = 0x15, form_sec_offset = 0x17, form_addrx = 0x1b, form_implicit_const = 0x21,
  form_rnglistx = 0x23, form_addrx1 = 0x29, form_addrx2 = 0x2a, form_addrx3 = 0x2b, form_addrx4 = 0x2c,
  form_ref_sup4 = 0x1c, form_ref_sup8 = 0x24, form_gnu_ref_alt = 0x1f20,
};
inline bool is_addrx(uint64_t form) { return form == form_addrx || (form >= form_addrx1 && form <= form_addrx4); }
/// A reference relative to the unit (as opposed to ref_addr, relative to the section).
inline bool is_unit_ref(uint64_t form) { return (form >= form_ref1 && form <= form_ref_udata); }
/// A reference into the supplementary file's .debug_info (dwz -m).
inline bool is_supplementary_ref(uint64_t form) {
  return form == form_ref_sup4 || form == form_ref_sup8 || form == form_gnu_ref_alt;
}
}  // namespace dw

/// One unit header of .debug_info.
struct UnitHeader {
  uint64_t offset = 0;     // of the header in .debug_info
  uint64_t end = 0;        // one past the unit
  uint64_t first_die = 0;  // section offset of the root DIE
  uint64_t abbrev_offset = 0;
  uint8_t unit_type = 1;  // DW_UT_compile for DWARF 2-4
  dwarf_reader::FormContext form;
};

/// Reads the unit header at `info`'s position and moves `info` past the unit.
/// The form context gets the string sections of `sections`. false: an
/// unsupported version (the unit is skipped) or bad data (`info` is failed).
bool read_unit_header(dwarf_reader::Cursor& info, const DwarfSections& sections, UnitHeader& out);

class AbbrevTable;

/// What the root DIE of a unit says about the whole unit.
struct UnitRoot {
  uint32_t tag = 0;  // DW_TAG_compile_unit, DW_TAG_partial_unit (dwz), ...
  uint64_t stmt_list = 0;
  bool has_stmt_list = false;
  std::string_view comp_dir;  // points into a string section or .debug_info
  uint64_t low_pc = 0;        // the base address of the unit's range lists
  uint64_t addr_base = 0;     // DWARF 5: .debug_addr contribution (after its header)
  uint64_t rnglists_base = 0; // DWARF 5: .debug_rnglists offsets table
  bool has_rnglists_base = false;
};

/// Reads the root DIE of `unit` and sets the unit's string-offsets base in
/// `unit.form`. The root's own strx and addrx values are resolved with the
/// bases it declares, whatever the attribute order.
bool read_unit_root(const DwarfSections& sections, UnitHeader& unit, AbbrevTable& abbrevs, UnitRoot& root);

/// The address at `index` of the unit's .debug_addr contribution.
bool address_at(std::span<const uint8_t> debug_addr, uint64_t addr_base, unsigned address_size, uint64_t index,
                uint64_t& out);

/// One unit's abbreviation table, decoded once for fast lookups by code.
class AbbrevTable {
 public:
  struct Attr {
    uint32_t name;
    uint32_t form;
    int64_t implicit_const;
  };
  struct Abbrev {
    uint32_t tag = 0;
    bool has_children = false;
    bool has_sibling = false;
    uint32_t first_attr = 0;
    uint32_t attr_count = 0;
    int32_t fixed_size = -1;  // total size of the attribute values when every form has a fixed size
  };

  /// Decodes the table at `offset` for units with `form`'s encoding; a no-op
  /// when that table is already loaded. Reuses its buffers.
  bool load(std::span<const uint8_t> section, uint64_t offset, const dwarf_reader::FormContext& form);

  const Abbrev* find(uint64_t code) const {
    if (code < by_code_.size()) return by_code_[code].attr_count || by_code_[code].tag ? &by_code_[code] : nullptr;
    for (const auto& [c, a] : sparse_) {
      if (c == code) return &a;
    }
    return nullptr;
  }
  std::span<const Attr> attrs(const Abbrev& a) const { return {attrs_.data() + a.first_attr, a.attr_count}; }

 private:
  bool loaded_ = false;
  const uint8_t* section_ = nullptr;  // a main file's table and its supplementary file's can share an offset
  uint64_t offset_ = 0;
  unsigned version_ = 0, offset_size_ = 0, address_size_ = 0;
  std::vector<Abbrev> by_code_;                     // dense codes (GCC and Clang number from 1)
  std::vector<std::pair<uint64_t, Abbrev>> sparse_;  // codes far beyond the table size
  std::vector<Attr> attrs_;
};

class CompDirs {
 public:
  /// Reads the unit DIEs of .debug_info. Bad units are skipped; `error` gets
  /// the first problem (the line tables of those units fall back to relative paths).
  static CompDirs read(const DwarfSections& sections, std::string& error);

  /// The compilation directory of the unit whose line table starts at
  /// `line_offset` in .debug_line, or an empty view.
  std::string_view find(uint64_t line_offset) const;

 private:
  struct Entry {
    uint64_t line_offset;
    std::string_view comp_dir;  // points into .debug_str/.debug_info/.debug_line_str
  };
  std::vector<Entry> entries_;  // sorted by line_offset
};

}  // namespace coz
