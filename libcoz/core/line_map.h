// Address -> source line map for the binaries in scope.
//
// Built once at start-up (and extended when a library is loaded) from the
// DWARF line tables; looked up on the sampling path, so find() is a binary
// search over a sorted array: no allocation, no locks, no exceptions.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace coz {

struct LineTable;  // dwarf_lines.h
class ElfFile;     // elf_file.h

/// Under `coz run --system`, every line's name ends with " [PROGRAM]", the
/// base name of the executable of the process it runs in: the same source
/// built into two programs is two lines, and the report says which program
/// each is in (docs/system.md). Set once, before any name is taken.
void set_line_program(std::string_view program);
/// " [PROGRAM]" as set_line_program set it; "" outside `coz run --system`.
std::string_view line_program_suffix();

/// Where distributions install separate debug files (debug_file.h).
inline constexpr std::string_view default_debug_root = "/usr/lib/debug";

/// One source line that samples can be attributed to and experiments can select.
/// Addresses of SourceLine objects are stable for the life of the LineMap.
struct SourceLine {
  std::string file;  // path as the debug info names it, made absolute with the compilation directory
  uint32_t line = 0;
  /// The function (demangled) whose code the line is: for a line reached
  /// through an inlined call (see LineMap::add_object), the function that
  /// makes the call. Empty when the debug info names none.
  std::string function;
  /// What an experiment that selects this line speeds up: null for the line
  /// itself, or its function's unit (LineMap::group_by_function).
  std::atomic<SourceLine*> unit{nullptr};
  std::atomic<uint64_t> samples{0};           // all samples attributed here (LineMap::count_samples)
  std::atomic<uint64_t> reported_samples{0};  // part of `samples` already written to the profile
  uint32_t index = 0;                         // its place in LineMap::lines()
  /// The line sampled first before this one: the list of sampled lines
  /// (LineMap::count_samples, SampledLines), set once before the line joins it.
  const SourceLine* sampled_before = nullptr;

  /// "FILE:LINE", or "FILE:FUNCTION" for a function unit or a function-level
  /// line (line 0; FILE is the binary's path without debug info); followed
  /// by " [PROGRAM]" under `coz run --system` (set_line_program).
  std::string name() const;

  /// The line or function an experiment selecting this line speeds up. Async-signal-safe.
  SourceLine* experiment_unit() {
    SourceLine* u = unit.load(std::memory_order_acquire);
    return u ? u : this;
  }
};

/// Decides whether a source file (absolute path) is in scope.
using SourceFilter = std::function<bool(std::string_view file)>;

/// What add_object() found in one ELF file.
struct ObjectLines {
  std::string path;
  size_t ranges = 0;          // address ranges kept (after the source filter)
  size_t lines = 0;           // distinct source lines kept
  /// Part of `ranges`: inlined code from out-of-scope files charged to the in-scope line that calls it.
  size_t inlined_ranges = 0;
  bool has_debug_info = true; // false: no .debug_line, in the file or a separate debug file
  /// No debug info, so one range per function symbol (.symtab, else .dynsym):
  /// each SourceLine has file = the binary's path, line = 0, function = its name.
  bool function_level = false;
  std::string debug_file;     // the separate debug file the lines came from, or empty
  std::string supplementary_file;  // the dwz supplementary file its strings and shared DIEs came from, or empty
  std::string error;          // non-empty: the file could not be read (the message says why)
};

class LineMap {
 public:
  LineMap() = default;
  LineMap(const LineMap&) = delete;
  LineMap& operator=(const LineMap&) = delete;

  /// Reads the DWARF line tables (versions 2 to 5) of the ELF file at `path`,
  /// loaded at `load_bias` (dl_iterate_phdr's dlpi_addr: 0 for a non-PIE
  /// executable), and keeps the lines whose source file passes `in_scope`.
  /// Code whose line is out of scope (or 0) but that was inlined, directly or
  /// through other inlined calls, from an in-scope line is charged to that
  /// line: the innermost in-scope call site (DW_AT_call_file:DW_AT_call_line).
  /// Never throws: problems are reported in the result.
  /// When the file has no .debug_line, its separate debug file is looked for
  /// (debug_file.h) under `debug_root` among other places; failing that, the
  /// symbol table gives function-level ranges (ObjectLines::function_level).
  /// A debug file processed by dwz is read with its supplementary file
  /// (debug_file.h's find_supplementary_file).
  ObjectLines add_object(const std::string& path, uintptr_t load_bias, const SourceFilter& in_scope,
                         std::string_view debug_root = default_debug_root);

  /// Sorts the ranges added so far and makes them visible to find(); call
  /// after the last add_object() and before find(), and again after adding a
  /// library later. An object added since the last call replaces every older
  /// range within its code (a library loaded where an unloaded one was).
  /// Safe while other threads call find(); add_object() and finalize()
  /// themselves must not run concurrently with each other.
  void finalize();

  /// The line containing `address`, or nullptr. Async-signal-safe.
  SourceLine* find(uintptr_t address) const;

  /// Counts `n` samples at `line` (one of lines()). A line's first samples
  /// put it at the head of the list of sampled lines, which SampledLines
  /// reads. Async-signal-safe.
  void count_samples(SourceLine& line, uint64_t n) {
    if (n == 0 || line.samples.fetch_add(n, std::memory_order_relaxed) != 0) return;
    const SourceLine* head = newest_sampled_.load(std::memory_order_relaxed);
    do line.sampled_before = head;
    while (!newest_sampled_.compare_exchange_weak(head, &line, std::memory_order_release, std::memory_order_relaxed));
  }
  /// The line most recently sampled for the first time: the head of the list.
  const SourceLine* newest_sampled() const { return newest_sampled_.load(std::memory_order_acquire); }

  /// The line named `file:line`, where `file` may be the full path or any
  /// suffix of it that starts after a '/' (e.g. "main.cpp" or "src/main.cpp").
  /// nullptr if no code is attributed to that line.
  SourceLine* find_line(std::string_view file, uint32_t line);

  /// The lowest address attributed to `line` (0 if none): where a hardware
  /// breakpoint counts visits to it. Call after finalize().
  uintptr_t first_address(const SourceLine* line) const;

  /// Function granularity: points every line that has a function name and no
  /// unit yet at its function's unit (one per demangled name, named
  /// "FILE:FUNCTION" after the first line of it seen), so that one experiment
  /// speeds up the whole function, inlined callees included. Call after
  /// finalize(), under the same exclusion as add_object(). Returns the number
  /// of units. Static functions of the same name in two files share a unit.
  size_t group_by_function();
  /// Undoes group_by_function: every line is its own unit again (the units
  /// stay, so that a line still names its function's unit: unit_of()).
  void ungroup();
  /// The function unit of `line` (group_by_function made it), or nullptr.
  const SourceLine* unit_of(const SourceLine& line) const;

  /// Every line, in the order they were added.
  const std::deque<SourceLine>& lines() const { return lines_; }
  std::deque<SourceLine>& lines() { return lines_; }

  /// Ranges visible to find() (those added before the last finalize()).
  size_t range_count() const {
    const RangeTable* t = published_.load(std::memory_order_acquire);
    return t ? t->ranges.size() : 0;
  }

 private:
  struct Range {
    uintptr_t begin;  // runtime addresses (load bias applied), half-open
    uintptr_t end;
    SourceLine* line;
  };
  // find() reads an immutable sorted table through one atomic pointer, so a
  // library can be added (add_object + finalize, on another thread) while
  // signal handlers keep looking up: they see the old table or the new one.
  // Old tables are kept until the map dies, since a handler may still read one.
  struct RangeTable {
    std::vector<Range> ranges;  // sorted, disjoint
  };
  struct ObjectState;  // per add_object() call (line_map.cpp)

  void add_line_table(const LineTable& table, ObjectState& object);
  void add_function_symbols(const ElfFile& elf, const std::string& path, ObjectState& object);
  /// The line of the innermost in-scope call site around `scope` (memoized), or UINT32_MAX.
  uint32_t call_site_line(uint32_t scope, ObjectState& object);
  /// The demangled name of a scope's function (memoized per object).
  const std::string& scope_function(uint32_t scope, ObjectState& object);
  uint32_t intern_file(std::string_view path);
  uint32_t intern_line(uint32_t file_id, uint32_t line, bool& inserted);  // index into lines_
  /// `older` (sorted, disjoint) less everything within the code of the
  /// objects added since the last finalize().
  std::vector<Range> without_code_added(const std::vector<Range>& older);
  /// Appends [begin, end) -> line to the pending ranges, extending the last one
  /// when contiguous. The symbol-table fallback will call it with line 0 ranges.
  void add_range(uintptr_t begin, uintptr_t end, uint32_t line_index, ObjectState& object);

  std::deque<SourceLine> lines_;
  std::deque<SourceLine> units_;  // function units (group_by_function)
  size_t grouped_lines_ = 0;      // lines_ that group_by_function has looked at since the last ungroup()
  std::atomic<const SourceLine*> newest_sampled_{nullptr};  // count_samples
  std::unordered_map<std::string, SourceLine*> unit_of_function_;
  std::vector<Range> pending_;  // added since the last finalize(), unsorted
  /// The code of the objects added since the last finalize() (runtime
  /// addresses, half-open): where older ranges are stale.
  std::vector<std::pair<uintptr_t, uintptr_t>> pending_code_;
  std::atomic<const RangeTable*> published_{nullptr};
  std::vector<std::unique_ptr<RangeTable>> tables_;  // every table published, newest last

  std::deque<std::string> files_;  // every file name seen, interned (stable for the views below)
  std::unordered_map<std::string_view, uint32_t> file_ids_;
  std::unordered_map<uint64_t, uint32_t> line_ids_;  // (file id << 32 | line) -> index into lines_
  std::unordered_map<std::string, uint32_t> function_line_ids_;  // binary path '\0' function -> index into lines_
  std::vector<uint32_t> line_object_;                // per line: last object that used it (counts ObjectLines::lines)
  uint32_t object_count_ = 0;
};

/// The indices of the lines sampled so far, for a reader that passes over
/// them often (the profiler, at each experiment): a pass then costs the
/// lines the program runs, not every line of its code (nghttpd: 5,106).
/// Lines only ever join LineMap's list, at its head, so each refresh reads
/// only the lines that joined since the last. One reader per object.
class SampledLines {
 public:
  /// Brings the indices up to date with `map`'s list and returns them. A
  /// line whose first sample is being counted at this moment may join only
  /// at the next refresh.
  const std::vector<uint32_t>& refresh(const LineMap& map) {
    const SourceLine* newest = map.newest_sampled();
    for (const SourceLine* l = newest; l != seen_; l = l->sampled_before) indices_.push_back(l->index);
    seen_ = newest;
    return indices_;
  }

 private:
  const SourceLine* seen_ = nullptr;
  std::vector<uint32_t> indices_;
};

}  // namespace coz
