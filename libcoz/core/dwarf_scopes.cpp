#include "dwarf_scopes.h"

#include <algorithm>

#include <fmt/format.h>

namespace coz {

namespace {
using dwarf_reader::Cursor;
using dwarf_reader::FormContext;
using dwarf_reader::FormValue;

// DWARF 5 section 7.25: range list entries.
enum RangeListEntry : uint8_t {
  rle_end_of_list = 0, rle_base_addressx = 1, rle_startx_endx = 2, rle_startx_length = 3,
  rle_offset_pair = 4, rle_base_address = 5, rle_start_end = 6, rle_start_length = 7,
};

constexpr uint8_t dw_ut_compile = 0x01, dw_ut_partial = 0x03;
// A bound on the partial units walked for one unit: dwz imports a few dozen;
// bad data could chain many more.
constexpr size_t max_imports_per_unit = 4096;

bool is_type_container(uint32_t tag) {
  return tag == dw::tag_structure_type || tag == dw::tag_class_type || tag == dw::tag_union_type ||
         tag == dw::tag_enumeration_type;
}
}  // namespace

DwarfScopes::DwarfScopes(const DwarfSections& sections) {
  spaces_[0].sections = sections;
  if (sections.supplementary && !sections.supplementary->info.empty() && !sections.supplementary->abbrev.empty()) {
    has_supplementary_ = true;
    spaces_[1].sections = *sections.supplementary;
    spaces_[1].sections.supplementary = nullptr;  // its own references to a supplementary file are not followed
  }
  index_units(0);
  if (has_supplementary_) index_units(1);
  // The unit headers took what they need from it (its .debug_str); the caller's copy may not outlive us.
  spaces_[0].sections.supplementary = nullptr;
  std::sort(by_line_.begin(), by_line_.end());
}

void DwarfScopes::index_units(uint8_t space) {
  const DwarfSections& sections = spaces_[space].sections;
  std::vector<Unit>& units = spaces_[space].units;
  const char* where = space == 0 ? ".debug_info" : "supplementary .debug_info";
  Cursor info(sections.info);
  while (!info.at_end()) {
    Unit unit;
    bool ok = read_unit_header(info, sections, unit.header);
    if (!info.ok()) {
      note_error(fmt::format("truncated {} unit at offset {:#x}", where, unit.header.offset));
      break;
    }
    uint8_t type = unit.header.unit_type;
    if (!ok || (unit.header.form.version >= 5 && type != dw_ut_compile && type != dw_ut_partial)) continue;
    if (!read_unit_root(sections, unit.header, abbrevs_, unit.root)) {
      note_error(fmt::format("unreadable root DIE in the unit at {}+{:#x}", where, unit.header.offset));
      continue;
    }
    // Partial units carry a DW_AT_stmt_list too (the table their file numbers refer to): only
    // compilation units stand for a line table.
    if (space == 0 && unit.root.tag == dw::tag_compile_unit && unit.root.has_stmt_list) {
      by_line_.emplace_back(unit.root.stmt_list, static_cast<uint32_t>(units.size()));
    }
    units.push_back(unit);
  }
}

DwarfScopes::DieRef DwarfScopes::reference(uint8_t space, const UnitHeader& unit, uint64_t form,
                                           uint64_t value) const {
  if (dw::is_unit_ref(form)) return {space, unit.offset + value};
  if (form == dw::form_ref_addr) return {space, value};
  // The supplementary file's references do not lead to a third file.
  if (dw::is_supplementary_ref(form) && space == 0 && has_supplementary_) return {1, value};
  return {};  // ref_sig8 (type units): not followed
}

void DwarfScopes::note_error(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

bool DwarfScopes::load_unit(uint64_t line_offset) {
  scopes_.clear();
  intervals_.clear();
  segments_.clear();
  imports_.clear();
  walked_.clear();
  auto it = std::lower_bound(by_line_.begin(), by_line_.end(), std::make_pair(line_offset, uint32_t{0}));
  if (it == by_line_.end() || it->first != line_offset) return false;
  bool ok = walk(0, spaces_[0].units[it->second], none, true);
  // The partial units it imports, and those they import, each once.
  while (ok && !imports_.empty()) {
    Import import = imports_.back();
    imports_.pop_back();
    bool seen = std::any_of(walked_.begin(), walked_.end(), [&](const DieRef& d) {
      return d.space == import.unit.space && d.offset == import.unit.offset;
    });
    if (seen) continue;
    if (walked_.size() >= max_imports_per_unit) {
      note_error(fmt::format("more than {} imported units in the unit at .debug_line+{:#x}", max_imports_per_unit,
                             line_offset));
      break;
    }
    walked_.push_back(import.unit);
    Unit* partial = unit_containing(import.unit.space, import.unit.offset);
    if (!partial || partial->header.first_die != import.unit.offset) {
      note_error(fmt::format("an imported unit at {}.debug_info+{:#x} is no unit",
                             import.unit.space ? "supplementary " : "", import.unit.offset));
      continue;
    }
    if (partial->codeless) continue;
    size_t scopes_before = scopes_.size(), imports_before = imports_.size();
    // Its call_file numbers refer to its own line table: the same as the unit's, or unusable.
    bool own_table = import.unit.space == 0 && partial->root.has_stmt_list &&
                     partial->root.stmt_list == line_offset;
    if (!walk(import.unit.space, *partial, import.parent, own_table)) continue;
    partial->codeless = scopes_.size() == scopes_before && imports_.size() == imports_before;
  }
  build_segments();
  return ok;
}

bool DwarfScopes::walk(uint8_t space, const Unit& unit, uint32_t outer, bool own_line_table) {
  const DwarfSections& sections = spaces_[space].sections;
  const FormContext& ctx = unit.header.form;
  if (!abbrevs_.load(sections.abbrev, unit.header.abbrev_offset, ctx)) {
    note_error(fmt::format("bad abbreviation table at .debug_abbrev+{:#x}", unit.header.abbrev_offset));
    return false;
  }
  Cursor cur(sections.info.data(), sections.info.data() + unit.header.end);
  cur.seek(unit.header.first_die);
  levels_.clear();
  do {
    uint64_t die = cur.offset();
    uint64_t code = cur.uleb();
    if (code == 0) {  // end of a sibling chain
      if (!levels_.empty()) levels_.pop_back();
      continue;
    }
    const AbbrevTable::Abbrev* abbrev = abbrevs_.find(code);
    if (!abbrev) {
      cur.fail();
      break;
    }
    uint32_t parent = levels_.empty() ? outer : levels_.back();
    bool scope_tag = abbrev->tag == dw::tag_subprogram || abbrev->tag == dw::tag_inlined_subroutine;
    bool import_tag = abbrev->tag == dw::tag_imported_unit;
    bool skippable = abbrev->has_children && abbrev->has_sibling && is_type_container(abbrev->tag);
    if (!scope_tag && !skippable && !import_tag) {
      // Most DIEs (parameters, variables, types): skip their attributes, fast when all have a fixed size.
      if (abbrev->fixed_size >= 0) {
        cur.skip(static_cast<uint64_t>(abbrev->fixed_size));
      } else {
        for (const AbbrevTable::Attr& attr : abbrevs_.attrs(*abbrev)) {
          FormValue skipped;
          if (!dwarf_reader::read_form(cur, attr.form, ctx, skipped, attr.implicit_const)) break;
        }
      }
      if (abbrev->has_children) levels_.push_back(parent);
      continue;
    }

    uint64_t low = 0, high = 0, ranges = 0, sibling = 0;
    uint64_t low_form = 0, high_form = 0, ranges_form = 0;
    uint32_t call_file = 0, call_line = 0;
    DieRef imported;
    for (const AbbrevTable::Attr& attr : abbrevs_.attrs(*abbrev)) {
      FormValue v;
      if (!dwarf_reader::read_form(cur, attr.form, ctx, v, attr.implicit_const)) break;
      switch (attr.name) {
        case dw::at_low_pc: low = v.number; low_form = attr.form; break;
        case dw::at_high_pc: high = v.number; high_form = attr.form; break;
        case dw::at_ranges: ranges = v.number; ranges_form = attr.form; break;
        case dw::at_call_file: call_file = static_cast<uint32_t>(v.number); break;
        case dw::at_call_line: call_line = static_cast<uint32_t>(v.number); break;
        case dw::at_import: imported = reference(space, unit.header, attr.form, v.number); break;
        case dw::at_sibling: {
          DieRef r = reference(space, unit.header, attr.form, v.number);
          if (r.space == space) sibling = r.offset;
          break;
        }
        default: break;
      }
    }
    if (!cur.ok()) break;

    if (import_tag) {
      if (imported.offset != 0) imports_.push_back({imported, parent});
      if (abbrev->has_children) levels_.push_back(parent);
      continue;
    }
    if (scope_tag && (high_form != 0 || ranges_form != 0)) {
      auto index = static_cast<uint32_t>(scopes_.size());
      Scope& s = scopes_.emplace_back();
      s.die = die;
      s.supplementary = space == 1;
      s.parent = parent;
      s.depth = parent == none ? 0 : scopes_[parent].depth + 1;
      s.inlined = abbrev->tag == dw::tag_inlined_subroutine;
      // call_line 0 (unknown) makes the line map look further out for the call site.
      s.call_file = own_line_table ? call_file : 0;
      s.call_line = own_line_table ? call_line : 0;
      if (ranges_form != 0) {
        add_ranges(sections, unit, ranges_form, ranges, index);
      } else if (low_form != 0) {
        if (dw::is_addrx(low_form) && !address_at(sections.addr, unit.root.addr_base, ctx.address_size, low, low)) {
          low = 0;
        }
        if (dw::is_addrx(high_form)) {
          if (!address_at(sections.addr, unit.root.addr_base, ctx.address_size, high, high)) high = 0;
        } else if (high_form != dw::form_addr) {
          high += low;  // DWARF 4+: a constant form is the size
        }
        if (low != 0 && high > low) intervals_.push_back({low, high, index});
      }
      if (abbrev->has_children) levels_.push_back(index);
      continue;
    }
    // A type, a declaration or an abstract instance: no code below it.
    if (abbrev->has_children) {
      if (sibling > die && sibling <= unit.header.end) {
        cur.seek(sibling);
      } else {
        levels_.push_back(parent);
      }
    }
  } while (!levels_.empty() && !cur.at_end());
  if (!cur.ok()) {
    note_error(fmt::format("bad DIE in the unit at {}.debug_info+{:#x}", space ? "supplementary " : "",
                           unit.header.offset));
    return false;
  }
  return true;
}

void DwarfScopes::add_ranges(const DwarfSections& sections, const Unit& unit, uint64_t form, uint64_t value,
                             uint32_t scope) {
  const FormContext& ctx = unit.header.form;
  unsigned asize = ctx.address_size;
  uint64_t base = unit.root.low_pc;
  auto add = [&](uint64_t begin, uint64_t end) {
    // Address 0 is where the linker leaves discarded functions.
    if (begin != 0 && end > begin) intervals_.push_back({begin, end, scope});
  };
  if (ctx.version < 5) {
    Cursor cur(sections.ranges);
    cur.seek(value);
    uint64_t max_address = asize >= 8 ? UINT64_MAX : (uint64_t{1} << (8 * asize)) - 1;
    while (cur.ok() && !cur.at_end()) {
      uint64_t begin = cur.unsigned_of_size(asize);
      uint64_t end = cur.unsigned_of_size(asize);
      if (!cur.ok() || (begin == 0 && end == 0)) break;
      if (begin == max_address) {
        base = end;
      } else {
        add(base + begin, base + end);
      }
    }
    return;
  }

  uint64_t offset = value;
  if (form == dw::form_rnglistx) {
    Cursor table(sections.rnglists);
    table.seek(unit.root.rnglists_base + value * ctx.offset_size);
    offset = unit.root.rnglists_base + table.offset_of_size(ctx.offset_size);
    if (!table.ok() || !unit.root.has_rnglists_base) return;
  }
  auto addrx = [&](uint64_t index) {
    uint64_t a = 0;
    address_at(sections.addr, unit.root.addr_base, asize, index, a);
    return a;
  };
  Cursor cur(sections.rnglists);
  cur.seek(offset);
  while (cur.ok() && !cur.at_end()) {
    uint8_t kind = cur.u8();
    if (kind == rle_end_of_list) break;
    switch (kind) {
      case rle_base_addressx: base = addrx(cur.uleb()); break;
      case rle_startx_endx: {
        uint64_t b = addrx(cur.uleb());
        add(b, addrx(cur.uleb()));
        break;
      }
      case rle_startx_length: {
        uint64_t b = addrx(cur.uleb());
        add(b, b + cur.uleb());
        break;
      }
      case rle_offset_pair: {
        uint64_t b = cur.uleb();
        add(base + b, base + cur.uleb());
        break;
      }
      case rle_base_address: base = cur.unsigned_of_size(asize); break;
      case rle_start_end: {
        uint64_t b = cur.unsigned_of_size(asize);
        add(b, cur.unsigned_of_size(asize));
        break;
      }
      case rle_start_length: {
        uint64_t b = cur.unsigned_of_size(asize);
        add(b, b + cur.uleb());
        break;
      }
      default: return;  // unknown entry: the rest of the list is unreadable
    }
  }
}

void DwarfScopes::build_segments() {
  // Ranges of well-formed DWARF nest (an inlined call lies inside its
  // caller), but that is not checked anywhere, so sweep the boundaries and
  // take, at each point, the deepest scope covering it.
  std::sort(intervals_.begin(), intervals_.end(), [](const Interval& a, const Interval& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.scope < b.scope;
  });
  active_.clear();
  size_t next_interval = 0;
  uint64_t pos = 0;
  while (next_interval < intervals_.size() || !active_.empty()) {
    if (active_.empty()) pos = intervals_[next_interval].begin;
    while (next_interval < intervals_.size() && intervals_[next_interval].begin <= pos) {
      if (intervals_[next_interval].end > pos) active_.push_back(static_cast<uint32_t>(next_interval));
      ++next_interval;
    }
    std::erase_if(active_, [&](uint32_t i) { return intervals_[i].end <= pos; });
    if (active_.empty()) continue;
    uint64_t end = next_interval < intervals_.size() ? intervals_[next_interval].begin : UINT64_MAX;
    uint32_t best = none;
    for (uint32_t i : active_) {
      const Interval& iv = intervals_[i];
      end = std::min(end, iv.end);
      if (best == none || scopes_[iv.scope].depth > scopes_[best].depth ||
          (scopes_[iv.scope].depth == scopes_[best].depth && iv.scope > best)) {
        best = iv.scope;
      }
    }
    if (!segments_.empty() && segments_.back().end == pos && segments_.back().scope == best) {
      segments_.back().end = end;
    } else {
      segments_.push_back({pos, end, best});
    }
    pos = end;
  }
}

uint32_t DwarfScopes::innermost(uint64_t address) const {
  size_t i = first_segment_after(address);
  return i < segments_.size() && segments_[i].begin <= address ? segments_[i].scope : none;
}

size_t DwarfScopes::first_segment_after(uint64_t address) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), address,
                             [](uint64_t a, const Segment& s) { return a < s.end; });
  return static_cast<size_t>(it - segments_.begin());
}

DwarfScopes::Unit* DwarfScopes::unit_containing(uint8_t space, uint64_t die) {
  std::vector<Unit>& units = spaces_[space].units;
  auto it = std::upper_bound(units.begin(), units.end(), die,
                             [](uint64_t d, const Unit& u) { return d < u.header.offset; });
  if (it == units.begin()) return nullptr;
  --it;
  return die >= it->header.first_die && die < it->header.end ? &*it : nullptr;
}

std::string_view DwarfScopes::raw_name(uint32_t scope) {
  if (scope >= scopes_.size()) return {};
  DieRef die{static_cast<uint8_t>(scopes_[scope].supplementary ? 1 : 0), scopes_[scope].die};
  std::string_view name;
  // Concrete instance -> abstract origin -> declaration (specification),
  // each perhaps in the supplementary file: a few hops at most; the bound
  // stops a reference cycle in bad data.
  for (int hop = 0; hop < 8 && die.offset != 0; ++hop) {
    Space& space = spaces_[die.space];
    const Unit* unit = unit_containing(die.space, die.offset);
    if (!unit || !space.name_abbrevs.load(space.sections.abbrev, unit->header.abbrev_offset, unit->header.form)) break;
    Cursor cur(space.sections.info.data(), space.sections.info.data() + unit->header.end);
    cur.seek(die.offset);
    const AbbrevTable::Abbrev* abbrev = space.name_abbrevs.find(cur.uleb());
    if (!abbrev) break;
    DieRef next;
    for (const AbbrevTable::Attr& attr : space.name_abbrevs.attrs(*abbrev)) {
      FormValue v;
      if (!dwarf_reader::read_form(cur, attr.form, unit->header.form, v, attr.implicit_const)) break;
      switch (attr.name) {
        case dw::at_linkage_name: case dw::at_mips_linkage_name:
          if (v.is_string && v.resolved && !v.string.empty()) return v.string;
          break;
        case dw::at_name:
          if (v.is_string && v.resolved && name.empty()) name = v.string;
          break;
        case dw::at_abstract_origin: case dw::at_specification:
          next = reference(die.space, unit->header, attr.form, v.number);
          break;
        default: break;
      }
    }
    die = next;
  }
  return name;
}

}  // namespace coz
