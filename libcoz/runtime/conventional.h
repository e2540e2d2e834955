// The conventional profile gathered beside the experiments: folded call
// stacks of the samples, and time blocked per wait site. Written to the
// profile as `stack` and `blocked` records (docs/profile-format.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "line_map.h"
#include "futex_lock.h"

namespace coz {

/// Call stacks (in-scope frames only) counted from the sampling path: a
/// fixed, preallocated open-addressing table, so inserting needs no
/// allocation and no lock. A stack that finds no free slot is dropped and counted.
class StackTable {
 public:
  static constexpr size_t max_frames = 16;

  /// `frames` innermost first. Async-signal-safe.
  void add(SourceLine* const* frames, size_t depth);

  /// (frames "A;B;C" outermost first, count since the last call). Not for signal context.
  std::vector<std::pair<std::string, uint64_t>> take_new();

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t slot_count = 4096;
  static constexpr size_t max_probes = 16;
  struct Slot {
    std::atomic<uint64_t> key{0};  // 0: free
    std::atomic<bool> ready{false};
    uint32_t depth = 0;
    SourceLine* frames[max_frames];
    std::atomic<uint64_t> count{0};
    uint64_t reported = 0;
  };
  Slot slots_[slot_count];
  std::atomic<uint64_t> dropped_{0};
};

enum class WaitKind { Mutex, Cond, RwLock, Barrier, Join, Sem, Futex, Sleep, Signal };
const char* wait_kind_name(WaitKind kind);

/// Time spent blocked, per (wait site, kind). Updated only by waits that
/// really blocked, so a lock is fine here.
class BlockedTable {
 public:
  void add(SourceLine* site, WaitKind kind, uint64_t ns);

  struct Entry {
    std::string site;  // FILE:LINE, or "?" when no frame was in scope
    WaitKind kind;
    uint64_t ns;
    uint64_t count;
  };
  /// Totals since the last call.
  std::vector<Entry> take_new();

 private:
  struct Totals {
    uint64_t ns = 0, count = 0;
  };
  FutexLock lock_;
  std::map<std::pair<SourceLine*, int>, Totals> totals_;
};

}  // namespace coz
