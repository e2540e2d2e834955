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
#include <string>
#include <string_view>
#include <vector>

namespace coz {

/// One source line that samples can be attributed to and experiments can select.
/// Addresses of SourceLine objects are stable for the life of the LineMap.
struct SourceLine {
  std::string file;  // path as the debug info names it, made absolute with the compilation directory
  uint32_t line = 0;
  std::atomic<uint64_t> samples{0};           // all samples attributed here (sampling path)
  std::atomic<uint64_t> reported_samples{0};  // part of `samples` already written to the profile

  std::string name() const { return file + ":" + std::to_string(line); }
};

/// Decides whether a source file (absolute path) is in scope.
using SourceFilter = std::function<bool(std::string_view file)>;

/// What add_object() found in one ELF file.
struct ObjectLines {
  std::string path;
  size_t ranges = 0;          // address ranges kept (after the source filter)
  size_t lines = 0;           // distinct source lines kept
  bool has_debug_info = true; // false: no .debug_line at all
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
  /// Never throws: problems are reported in the result.
  ObjectLines add_object(const std::string& path, uintptr_t load_bias, const SourceFilter& in_scope);

  /// Sorts the ranges; call after the last add_object() and before find().
  void finalize();

  /// The line containing `address`, or nullptr. Async-signal-safe.
  SourceLine* find(uintptr_t address) const;

  /// The line named `file:line`, where `file` may be the full path or any
  /// suffix of it that starts after a '/' (e.g. "main.cpp" or "src/main.cpp").
  /// nullptr if no code is attributed to that line.
  SourceLine* find_line(std::string_view file, uint32_t line);

  /// Every line, in the order they were added.
  const std::deque<SourceLine>& lines() const { return lines_; }
  std::deque<SourceLine>& lines() { return lines_; }

  size_t range_count() const { return ranges_.size(); }

 private:
  struct Range {
    uintptr_t begin;  // runtime addresses (load bias applied), half-open
    uintptr_t end;
    SourceLine* line;
  };
  std::deque<SourceLine> lines_;
  std::vector<Range> ranges_;
  bool finalized_ = false;
};

}  // namespace coz
