// Call-frame information (CFI) of one loaded object, compiled into a compact
// table that the sampling path can walk: for any code address, how to find
// the caller's frame (its CFA, return address and saved rbp).
//
// Built off the sampling path (start-up, dlopen) from `.eh_frame` (through
// the `.eh_frame_hdr` search table of an object in memory, or the section of
// a file) or `.debug_frame` (files built without unwind tables). Only what
// x86-64 unwinding for profiling needs is kept: the rule for the CFA, where
// rbp was saved, whether the return address exists. On x86-64 the return
// address is always at CFA - 8; an FDE whose return-address rule says
// otherwise is not representable and gets CfaRule::None.
//
// Lookups (find) are async-signal-safe: a binary search over an immutable
// sorted array, no allocation, no locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace coz {

enum class CfaRule : uint8_t {
  None,     // no CFI covers this address (gap between FDEs) or a rule we cannot follow
  Sp,       // CFA = rsp + cfa_offset
  Bp,       // CFA = rbp + cfa_offset
  BpDeref,  // CFA = *(rbp + cfa_offset): GCC's stack realignment (DW_OP_breg6 off; DW_OP_deref)
  Plt,      // a PLT entry: CFA = rsp + 8 + ((rip & 15) >= cfa_offset ? 8 : 0)  (the linker's expression)
  Signal,   // a signal trampoline (CIE augmentation 'S', glibc's __restore_rt): rsp points to the
            // ucontext_t of the interrupted code, whose registers the next frame continues from
};

/// From `start` (an offset from FrameTable::base) until the next row's start.
struct FrameRow {
  uint32_t start;
  int32_t cfa_offset;
  // The caller's rbp is saved at CFA + bp_offset; kBpUnchanged: rbp still holds it. In BpDeref rows
  // at rbp + bp_offset instead: the realigned frame saved it below the aligned stack, out of the
  // CFA's reach (GCC: DW_CFA_expression rbp: DW_OP_breg6 (rbp) 0).
  int16_t bp_offset;
  CfaRule rule;
  uint8_t flags;  // kOutermost

  static constexpr int16_t kBpUnchanged = INT16_MIN;
  /// The return address is undefined (DW_CFA_undefined rip): the first frame
  /// of the stack (_start, clone's child), where unwinding ends.
  static constexpr uint8_t kOutermost = 1;
};

/// The CFI of one object, for addresses [base, end).
class FrameTable {
 public:
  /// The row covering `pc`, or nullptr when none does (outside [base, end),
  /// or a None row). Async-signal-safe.
  const FrameRow* find(uint64_t pc) const noexcept;

  /// The start of the function (FDE) containing `pc`, or 0. Async-signal-safe.
  uint64_t function_start(uint64_t pc) const noexcept;

  uint64_t base = 0;  // runtime address of offset 0
  uint64_t end = 0;   // one past the last address covered
  std::vector<FrameRow> rows;              // sorted by start; gaps are None rows
  std::vector<uint32_t> function_starts;   // sorted FDE starts (offsets from base)
  std::vector<uint32_t> function_ends;     // parallel: one past each FDE (cut where a later one starts)
  std::string path;                        // the object's file, for messages and names
};

/// What a parse found, for diagnostics and tests.
struct FrameTableStats {
  size_t cies = 0;
  size_t fdes = 0;
  size_t unsupported_fdes = 0;  // some row of theirs is None (expression we cannot follow, RA not at CFA-8, ...)
  std::string error;            // non-empty: parsing stopped early (truncated or malformed data)
};

/// Accumulates FDEs from one or more CFI sources of one object, then sorts
/// them into a FrameTable. Never throws (malformed input stops that source
/// and is reported in the stats).
class FrameTableBuilder {
 public:
  /// `.eh_frame` of an object mapped in this process, found through its
  /// `.eh_frame_hdr` (PT_GNU_EH_FRAME) at runtime address `hdr`: every FDE
  /// of the header's search table. Addresses in it are runtime addresses.
  FrameTableStats add_eh_frame_hdr(const uint8_t* hdr);

  /// A whole `.eh_frame` section read from a file: `bytes` are its contents,
  /// `section_address` its sh_addr (for pc-relative pointers), `load_bias`
  /// what to add to file addresses to get runtime addresses.
  FrameTableStats add_eh_frame(std::span<const uint8_t> bytes, uint64_t section_address, uint64_t load_bias);

  /// A whole `.debug_frame` section (DWARF 2-5 CIE versions 1, 3, 4): absolute
  /// file addresses, CIE id 0xffffffff, no augmentation data.
  FrameTableStats add_debug_frame(std::span<const uint8_t> bytes, uint64_t load_bias);

  /// Sorts the rows of every FDE added into a table named `path`. Overlapping
  /// FDEs: the one starting later wins over the rest of the earlier one (of
  /// two starting at the same address, the one added first).
  FrameTable finish(std::string path);

 private:
  class Parser;  // reads one CFI source: CIEs, FDEs and their CFA programs (frame_table.cpp)

  struct Fde {
    uint64_t begin;  // runtime addresses
    uint64_t end;
    uint32_t first_row;  // its rows in rows_
    uint32_t row_count;
  };
  std::vector<Fde> fdes_;
  // Every FDE's rows, one after the other; start is an offset from the FDE's
  // begin until finish() rebases it (one vector: no allocation per FDE).
  std::vector<FrameRow> rows_;
};

}  // namespace coz
