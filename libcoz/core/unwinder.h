// Walking a thread's user stack without frame pointers, from a sample's
// registers, with the loaded objects' call-frame information (frame_table.h).
//
// The walk runs on the sampling path (a signal handler, or the profiler
// thread draining a ring): it only reads the published tables and the stack
// memory it is given, through bounds-checked reads. It never allocates,
// locks, or follows a pointer outside that memory.
//
// Two sources of stack memory serve the same walk: the copy of the stack the
// kernel puts in a perf_event sample (PERF_SAMPLE_STACK_USER, starting at
// the sampled rsp), and, in the timer fallback, the live stack of the
// interrupted thread, within its bounds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "frame_table.h"

namespace coz {

/// The loaded objects' frame tables, published for lock-free lookups in the
/// way LineMap publishes its ranges: an immutable sorted index behind one
/// atomic pointer. Tables are added at start-up and after dlopen; a
/// finished table never moves or changes.
class FrameTables {
 public:
  FrameTables() = default;
  FrameTables(const FrameTables&) = delete;
  FrameTables& operator=(const FrameTables&) = delete;

  /// Adds an object's table (visible after publish()). Not signal-safe;
  /// add() and publish() must not run concurrently with each other.
  void add(FrameTable table);
  /// Makes every table added so far visible to find(). A table added later
  /// whose range overlaps an earlier one's (a library loaded where an
  /// unloaded one was) replaces it.
  void publish();

  /// The table whose range contains `pc`, or nullptr. Async-signal-safe.
  const FrameTable* find(uint64_t pc) const noexcept;

  size_t size() const { return tables_.size(); }
  const std::deque<FrameTable>& tables() const { return tables_; }

 private:
  struct Index {
    std::vector<const FrameTable*> by_base;  // sorted by base, disjoint ranges
  };
  std::deque<FrameTable> tables_;  // stable addresses
  std::atomic<const Index*> published_{nullptr};
  std::vector<std::unique_ptr<Index>> indexes_;  // every index published (handlers may still read old ones)
};

/// The registers a walk starts from.
struct UnwindRegisters {
  uint64_t ip = 0;
  uint64_t sp = 0;
  uint64_t bp = 0;
  /// The thread was in the kernel through the `syscall` instruction just
  /// before ip. Where ip has no call-frame information (glibc's clone3
  /// leaves its last instructions without any, so that a new thread's walk
  /// ends there), the walk takes it for a leaf system-call stub: the return
  /// address on top of the stack, if that lands in known code.
  bool after_syscall = false;
};

/// The stack memory a walk may read.
class StackMemory {
 public:
  /// A copy of [address, address + size) taken when the sample was taken.
  static StackMemory copy(uint64_t address, const uint8_t* bytes, size_t size) noexcept {
    return StackMemory(address, address + size, bytes);
  }
  /// The live memory [low, high) of the interrupted thread's stack.
  static StackMemory live(uint64_t low, uint64_t high) noexcept { return StackMemory(low, high, nullptr); }

  /// The 8 bytes at `address`, if they lie within the memory. Async-signal-safe.
  bool read(uint64_t address, uint64_t& value) const noexcept;

 private:
  StackMemory(uint64_t low, uint64_t high, const uint8_t* bytes) : low_(low), high_(high), bytes_(bytes) {}
  uint64_t low_, high_;
  const uint8_t* bytes_;  // null: live memory
};

/// The registers of the calling function where this is called: where a walk
/// of the calling thread's own stack starts (a wait's site,
/// thread_registry.cpp). Always inlined, so they are the caller's.
[[gnu::always_inline]] inline UnwindRegisters current_registers() {
  UnwindRegisters regs;
  __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
                   : "=r"(regs.ip), "=r"(regs.sp), "=r"(regs.bp));
  return regs;
}

/// Why a walk ended.
enum class UnwindStop : uint8_t {
  Outermost,   // the stack's first frame (return address undefined or 0): complete
  NoCfi,       // an address no frame table covers (no .eh_frame/.debug_frame, JIT code, garbage)
  Unreadable,  // a read outside the stack memory (the copy was too short, or a stack switch)
  BadFrame,    // a frame that does not move up the stack (corrupt CFI or stack)
  DepthLimit,  // max_frames reached
};
const char* unwind_stop_name(UnwindStop stop);

/// One frame of a walk.
struct UnwindFrame {
  /// The address that identifies the frame's code: the sampled IP for the
  /// first frame and for a frame interrupted by a signal; for the others the
  /// return address - 1, which lies inside the call instruction (the return
  /// address itself may already belong to the next line, or function).
  uint64_t pc;
  const FrameTable* table;  // the object containing pc (null when none does)
};

/// Walks from `regs` until the stack's first frame or `max_frames` frames.
/// frames[0] is the sampled IP. Returns the number of frames; `stop` says
/// why the walk ended. Async-signal-safe.
size_t unwind(const FrameTables& tables, const UnwindRegisters& regs, const StackMemory& stack,
              UnwindFrame* frames, size_t max_frames, UnwindStop& stop) noexcept;

}  // namespace coz
