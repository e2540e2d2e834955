// The conventional profile gathered beside the experiments: folded call
// stacks of the samples, and time blocked per wait site. Written to the
// profile as `stack` and `blocked` records (docs/profile-format.md).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "line_map.h"
#include "futex_lock.h"

namespace coz {

/// One frame of a folded stack: an in-scope line (a SourceLine*, aligned,
/// so its low bit is 0) or an out-of-scope function that an in-scope line
/// called (its entry address * 2 + 1), named only when written.
using StackFrame = uintptr_t;

/// The slots of an open-addressing table claimed so far, in the order they
/// were claimed: the profiler takes the tables' new counts at each
/// experiment, and a pass over the claimed slots costs the stacks and wait
/// sites the program has, not the table's 4,096 slots. A slot is claimed
/// once and never freed. Async-signal-safe to add to.
template <size_t N>
class ClaimedSlots {
 public:
  void add(size_t slot) {
    const uint32_t k = count_.fetch_add(1, std::memory_order_relaxed);
    if (k < N) order_[k].store(static_cast<uint32_t>(slot) + 1, std::memory_order_release);
  }
  /// f(slot) for each slot claimed so far; one whose claim is being noted
  /// at this moment may come only at the next call.
  template <class F>
  void for_each(F f) const {
    const uint32_t n = std::min<uint32_t>(count_.load(std::memory_order_acquire), N);
    for (uint32_t k = 0; k < n; ++k) {
      if (uint32_t noted = order_[k].load(std::memory_order_acquire)) f(noted - 1);
    }
  }

 private:
  std::atomic<uint32_t> count_{0};
  std::atomic<uint32_t> order_[N] = {};  // slot + 1; 0: being noted
};

/// Call stacks (in-scope lines and the functions they called) counted from
/// the sampling path: a fixed, preallocated open-addressing table, so
/// inserting needs no allocation and no lock. A stack that finds no free
/// slot is dropped and counted.
class StackTable {
 public:
  static constexpr size_t max_frames = 16;

  static StackFrame line_frame(SourceLine* line) { return reinterpret_cast<uintptr_t>(line); }
  static StackFrame function_frame(uint64_t entry) { return static_cast<uintptr_t>(entry) * 2 + 1; }
  /// The line of a line frame, nullptr for a function frame.
  static SourceLine* line_of(StackFrame f) { return (f & 1) ? nullptr : reinterpret_cast<SourceLine*>(f); }

  /// `count` samples of the stack `frames`, innermost first. Async-signal-safe.
  void add(const StackFrame* frames, size_t depth, uint64_t count = 1);

  /// (frames "A;B;C" outermost first, count since the last call); a function
  /// frame is named by `function_name(entry address)`. Not for signal context.
  /// Callers may overlap (the profiler thread and an exiting thread): each
  /// sample is taken once.
  std::vector<std::pair<std::string, uint64_t>> take_new(
      const std::function<std::string(uint64_t)>& function_name);

  /// Samples whose stack was dropped because the table was full.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  /// take_new's lock, for the runtime's fork handlers (runtime.cpp).
  FutexLock& lock() { return take_lock_; }

 private:
  static constexpr size_t slot_count = 4096;
  static constexpr size_t max_probes = 16;
  struct Slot {
    std::atomic<uint64_t> key{0};  // 0: free
    std::atomic<bool> ready{false};
    uint32_t depth = 0;
    StackFrame frames[max_frames];
    std::atomic<uint64_t> count{0};
    uint64_t reported = 0;  // part of count already taken, under take_lock_
  };
  Slot slots_[slot_count];
  ClaimedSlots<slot_count> claimed_;  // noted once ready
  std::atomic<uint64_t> dropped_{0};
  FutexLock take_lock_;  // take_new's; add() never takes it
};

enum class WaitKind { Mutex, Cond, RwLock, Barrier, Join, Sem, Futex, Sleep, Signal, Io, Poll, Child, FileLock };
const char* wait_kind_name(WaitKind kind);

/// Time spent blocked, per (wait site, kind): a fixed, preallocated
/// open-addressing table like StackTable. A wait is recorded right after the
/// call it wrapped returned, when that call may hold the program's lock (a
/// mutex wait): recording must not allocate or lock, since the program's
/// allocator may take that very lock (a malloc wrapped in a pthread mutex),
/// and it may run in a signal handler. A pair that finds no free slot is
/// dropped and counted.
class BlockedTable {
 public:
  /// `count` waits that blocked `ns` in all. Async-signal-safe: no
  /// allocation, no lock.
  void add(SourceLine* site, WaitKind kind, uint64_t ns, uint64_t count = 1);

  struct Entry {
    std::string site;  // FILE:LINE, or "?" when no frame was in scope
    WaitKind kind;
    uint64_t ns;
    uint64_t count;
  };
  /// Totals since the last call (callers may overlap: each wait is taken once).
  std::vector<Entry> take_new();

  /// Waits dropped because the table was full.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  /// take_new's lock, for the runtime's fork handlers (runtime.cpp).
  FutexLock& lock() { return take_lock_; }

 private:
  static constexpr size_t slot_count = 4096;
  static constexpr size_t max_probes = 16;
  struct Slot {
    std::atomic<uint64_t> key{0};  // 0: free; else (site << 4 | kind) + 1
    std::atomic<uint64_t> ns{0};
    std::atomic<uint64_t> count{0};
    uint64_t reported_ns = 0, reported_count = 0;  // under take_lock_
  };
  Slot slots_[slot_count];
  ClaimedSlots<slot_count> claimed_;
  std::atomic<uint64_t> dropped_{0};
  FutexLock take_lock_;
};

}  // namespace coz
