// The function scopes of a unit: concrete subprograms and the inlined
// subroutines inside them, with their address ranges, read from .debug_info.
//
// The line table attributes inlined code to the inlined function's own file
// (a library header, /rustc/...), which the source scope usually excludes;
// these scopes let the line map charge such code to the in-scope line that
// called it (DW_AT_call_file:DW_AT_call_line), and name the function of each
// line. One unit is loaded at a time, into reused buffers: no allocation per
// DIE, and units whose line table has nothing in scope are never read.
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
  };
  /// [begin, end) where `scope` is the innermost scope (file addresses).
  struct Segment {
    uint64_t begin;
    uint64_t end;
    uint32_t scope;
  };

  /// Indexes the units of .debug_info (their root DIEs only).
  explicit DwarfScopes(const DwarfSections& sections);

  /// Reads the scopes of the unit whose DW_AT_stmt_list is `line_offset`.
  /// false if there is no such unit or it is unreadable (error() says why;
  /// the scopes read before the problem are kept).
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
  };
  struct Interval {
    uint64_t begin;
    uint64_t end;
    uint32_t scope;
  };

  bool walk(const Unit& unit);
  void add_ranges(const Unit& unit, uint64_t form, uint64_t value, uint32_t scope);
  void build_segments();
  const Unit* unit_containing(uint64_t die) const;
  void note_error(std::string message);

  DwarfSections sections_;
  std::vector<Unit> units_;                             // in section order
  std::vector<std::pair<uint64_t, uint32_t>> by_line_;  // (stmt_list, index into units_), sorted
  AbbrevTable abbrevs_;                                 // of the unit being walked
  AbbrevTable name_abbrevs_;                            // of the unit a name reference lands in
  std::vector<Scope> scopes_;
  std::vector<Interval> intervals_;
  std::vector<Segment> segments_;
  std::vector<uint32_t> levels_;  // per open DIE with children: the scope its children are in
  std::vector<uint32_t> active_;  // build_segments(): intervals covering the sweep position
  std::string error_;
};

}  // namespace coz
