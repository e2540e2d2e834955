// The function scopes of a unit: concrete subprograms and the inlined
// subroutines inside them, with their address ranges, read from .debug_info.
//
// The line table attributes inlined code to the inlined function's own file
// (a library header, /rustc/...), which the source scope usually excludes;
// these scopes let the line map charge such code to the in-scope line that
// called it (DW_AT_call_file:DW_AT_call_line), and name the function of each
// line. One unit is loaded at a time, into reused buffers: no allocation per
// DIE, and units whose line table has nothing in scope are never read.
//
// dwz-compressed debug info (distributions' debug packages) moves DIEs shared
// by several units into partial units, of this file or of a supplementary
// one (DwarfSections::supplementary), and leaves references to them
// (DW_FORM_ref_addr, DW_FORM_GNU_ref_alt, DW_FORM_ref_sup*) and
// DW_TAG_imported_unit where a unit uses them. Names are followed into
// either file, and the partial units a unit imports are walked with it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dwarf_reader.h"
#include "dwarf_units.h"

namespace coz {

class DwarfScopes {
 public:
  static constexpr uint32_t none = UINT32_MAX;

  struct Scope {
    uint64_t die = 0;           // .debug_info offset of the DIE (for its name)
    uint32_t parent = none;     // enclosing scope
    uint32_t depth = 0;         // 0 for a subprogram outside any other
    uint32_t call_file = 0;     // inlined only: DW_AT_call_file, numbered as in the unit's line table
    uint32_t call_line = 0;     // inlined only: 0 if unknown
    bool inlined = false;       // DW_TAG_inlined_subroutine (else DW_TAG_subprogram)
    bool supplementary = false; // `die` is in the supplementary file's .debug_info
  };
  /// [begin, end) where `scope` is the innermost scope (file addresses).
  struct Segment {
    uint64_t begin;
    uint64_t end;
    uint32_t scope;
  };

  /// Indexes the units of .debug_info (their root DIEs only), and those of
  /// the supplementary file's, if `sections` has one.
  explicit DwarfScopes(const DwarfSections& sections);

  /// Reads the scopes of the compilation unit whose DW_AT_stmt_list is
  /// `line_offset`, and of the partial units it imports. false if there is no
  /// such unit or it is unreadable (error() says why; the scopes read before
  /// the problem are kept).
  bool load_unit(uint64_t line_offset);

  const std::vector<Scope>& scopes() const { return scopes_; }
  /// Sorted, disjoint.
  const std::vector<Segment>& segments() const { return segments_; }

  /// The innermost scope containing `address`, or none.
  uint32_t innermost(uint64_t address) const;

  /// The first segment that ends after `address` (segments().size() if none).
  size_t first_segment_after(uint64_t address) const;

  /// The function's name as the debug info spells it: its linkage (mangled)
  /// name if it has one, else DW_AT_name, following DW_AT_abstract_origin and
  /// DW_AT_specification. Empty if none. Valid while the sections are mapped.
  std::string_view raw_name(uint32_t scope);

  /// The first problem met (empty if none).
  const std::string& error() const { return error_; }

 private:
  struct Unit {
    UnitHeader header;
    UnitRoot root;
    bool codeless = false;  // a partial unit walked once and found to hold no scope and no import
  };
  /// The units of one file's .debug_info: the file's own (space 0) or its
  /// supplementary file's (space 1).
  struct Space {
    DwarfSections sections;
    std::vector<Unit> units;  // compile and partial units, in section order
    AbbrevTable name_abbrevs; // of the unit a name reference lands in
  };
  /// A DIE in one of the spaces (offset 0: none).
  struct DieRef {
    uint8_t space = 0;
    uint64_t offset = 0;
  };
  struct Import {
    DieRef unit;      // the root DIE of the partial unit
    uint32_t parent;  // the scope around the DW_TAG_imported_unit
  };
  struct Interval {
    uint64_t begin;
    uint64_t end;
    uint32_t scope;
  };

  void index_units(uint8_t space);
  bool walk(uint8_t space, const Unit& unit, uint32_t outer, bool own_line_table);
  void add_ranges(const DwarfSections& sections, const Unit& unit, uint64_t form, uint64_t value, uint32_t scope);
  void build_segments();
  /// The reference an attribute of `unit` (in `space`) makes, or offset 0.
  DieRef reference(uint8_t space, const UnitHeader& unit, uint64_t form, uint64_t value) const;
  Unit* unit_containing(uint8_t space, uint64_t die);
  void note_error(std::string message);

  Space spaces_[2];
  bool has_supplementary_ = false;
  std::vector<std::pair<uint64_t, uint32_t>> by_line_;  // (stmt_list, index into spaces_[0].units), compile units, sorted
  AbbrevTable abbrevs_;                                 // of the unit being walked
  std::vector<Scope> scopes_;
  std::vector<Interval> intervals_;
  std::vector<Segment> segments_;
  std::vector<uint32_t> levels_;  // per open DIE with children: the scope its children are in
  std::vector<uint32_t> active_;  // build_segments(): intervals covering the sweep position
  std::vector<Import> imports_;   // met while walking, walked after the unit
  std::vector<DieRef> walked_;    // the partial units walked for the current load_unit
  std::string error_;
};

}  // namespace coz
