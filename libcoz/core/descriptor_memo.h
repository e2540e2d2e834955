// A value remembered per descriptor number until the number is closed or
// replaced: for what costs system calls to learn about a descriptor and is
// asked again and again (channels.h: the kernel object a wake goes through,
// an fstat and a getsockname or getpeername, asked for every wake record a
// waiter checks in a speedup experiment, and at every read and write of one
// under `coz run --system`).
//
// Forgetting is the caller's: the interposed close family (close,
// close_range, closefrom, dup2 and dup3 over a number) and accept, after the
// call. A number closed where the runtime cannot see it (inside the C
// library's fclose, a raw system call) keeps its value until one of those
// forgets it: an object opened at that number meanwhile is named as the old one.
//
// Until the first value is learned, forgetting is a single load: the close
// family forgets on every call, in every run, and nothing is learned before
// an experiment inserts delays.
//
// Lock-free, no allocation, constant-initialised (no guard: safe across
// fork, docs/lifecycle.md).
#pragma once

#include <atomic>
#include <cstdint>

namespace coz {

/// Non-zero values per descriptor number below `Size` (0: not known).
template <unsigned Size>
class DescriptorMemo {
 public:
  /// The value remembered for `fd`, else `learn()`'s, remembered unless the
  /// number was forgotten while it was being learned (it may then name the
  /// object closed meanwhile). Numbers from `Size` up are learned each time.
  template <typename Learn>
  uint64_t remember(int fd, Learn&& learn) {
    if (fd < 0 || static_cast<unsigned>(fd) >= Size) return learn();
    Slot& slot = slots_[fd];
    if (uint64_t known = slot.value.load()) return known;
    // Before the learning: a forget that finds the memo unused comes
    // before this store, so its close came before the learning too.
    if (!used_.load()) used_.store(true);
    const uint32_t forgets = slot.forgets.load();
    const uint64_t value = learn();
    if (value == 0) return 0;
    slot.value.store(value);
    // A forget since: its own store of 0 may have come before ours.
    if (slot.forgets.load() != forgets) {
      uint64_t expected = value;
      slot.value.compare_exchange_strong(expected, 0);
    }
    return value;
  }

  /// After `fd` was closed or replaced.
  void forget(int fd) {
    if (fd < 0 || static_cast<unsigned>(fd) >= Size || !used_.load()) return;
    slots_[fd].forgets.fetch_add(1);
    slots_[fd].value.store(0);
  }

  /// After the numbers from `first` to `last` (inclusive) were closed.
  void forget_range(unsigned first, unsigned last) {
    if (!used_.load()) return;
    for (unsigned fd = first; fd < Size && fd <= last; ++fd) forget(static_cast<int>(fd));
  }

 private:
  // Sequentially consistent throughout: remember's store of the value and
  // load of `forgets` must not pass forget's increment and store.
  struct Slot {
    std::atomic<uint64_t> value{0};
    std::atomic<uint32_t> forgets{0};
  };
  Slot slots_[Size];
  std::atomic<bool> used_{false};  // a value was ever learned
};

}  // namespace coz
