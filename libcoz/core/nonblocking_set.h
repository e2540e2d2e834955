// Which descriptor numbers the program made non-blocking, as far as the
// runtime saw it say so: a call on one cannot block, so it is the thread's
// own work, not a wait, and its wrapper needs no wait bracket (the ledger's
// pre- and post-block, two clock reads). An event loop (memcached,
// nghttpd) makes a read and a send per request on such sockets; the
// bracket was most of what each wrapper cost.
//
// Learned only from what the program asks of the kernel through interposed
// calls: fcntl's F_SETFL and F_GETFL, ioctl's FIONBIO, accept4's
// SOCK_NONBLOCK. A number the runtime saw nothing of reads as blocking: its
// calls keep the bracket, as before. Forgotten where the channels are
// (channels.h: the close family, dup2, dup3, accept's new number).
//
// What it cannot see: the flag lives on the open file, which another
// process or a dup'd number may change; and a number closed where the
// runtime cannot see it (fclose of an fdopen'ed socket, a raw system call)
// and reopened by a call it does not wrap keeps its mark. A blocking call
// there is taken for work: it pays what accrued while it blocked, as a wait
// woken from outside does, and its blocked time is not recorded.
//
// Lock-free, no allocation, constant-initialised (safe across fork: the
// child's numbers name the same open files).
#pragma once

#include <atomic>
#include <cstdint>

namespace coz {

class NonBlockingSet {
 public:
  /// Numbers from here up are never marked: their calls keep the bracket.
  static constexpr unsigned size = 65536;

  /// After the kernel said whether `fd` is non-blocking.
  void note(int fd, bool nonblocking) {
    if (fd < 0 || static_cast<unsigned>(fd) >= size) return;
    std::atomic<uint64_t>& word = words_[fd / 64];
    if (nonblocking) {
      word.fetch_or(bit(fd), std::memory_order_relaxed);
      used_.store(true, std::memory_order_relaxed);
    } else if (used_.load(std::memory_order_relaxed) && (word.load(std::memory_order_relaxed) & bit(fd))) {
      word.fetch_and(~bit(fd), std::memory_order_relaxed);
    }
  }
  /// Whether `fd` was made non-blocking and not closed since.
  bool has(int fd) const {
    if (fd < 0 || static_cast<unsigned>(fd) >= size) return false;
    return (words_[fd / 64].load(std::memory_order_relaxed) & bit(fd)) != 0;
  }
  /// After `fd` was closed or replaced.
  void forget(int fd) { note(fd, false); }
  /// After the numbers from `first` to `last` (inclusive) were closed.
  void forget_range(unsigned first, unsigned last) {
    if (!used_.load(std::memory_order_relaxed)) return;
    for (unsigned fd = first; fd < size && fd <= last; ++fd) {
      if (fd % 64 == 0 && last - fd >= 63) {  // a whole word at once
        words_[fd / 64].store(0, std::memory_order_relaxed);
        fd += 63;
      } else {
        forget(static_cast<int>(fd));
      }
    }
  }

 private:
  static uint64_t bit(int fd) { return uint64_t{1} << (fd % 64); }
  std::atomic<uint64_t> words_[size / 64] = {};
  std::atomic<bool> used_{false};  // a number was ever marked: closes skip the rest until then
};

}  // namespace coz
