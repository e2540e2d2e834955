// Recent wake-ups through the kernel: how a thread woken through a
// descriptor tells a wake of the program from one of the outside world.
//
// Threads of one program often wake each other through descriptors, not
// pthread calls: a write to a pipe, a socket or an eventfd, a connect, a
// signal, an io_uring submission. The waker catches up (pays its delays)
// first, as before any wake, then posts a record here: what it did, and to
// which descriptor (or thread). The woken thread, back from
// read/epoll_wait/poll/accept/..., looks for a record posted while it
// waited that reaches the descriptor it waited on (channels.h decides); if
// it finds one, it skips the delays that accrued while it slept, as a
// thread woken by a pthread call does (DelayLedger::post_block). Woken by
// the outside world (a client, a timer, a child), it finds none and pays.
//
// A fixed ring of records, overwritten oldest first: posting is a few
// stores and one fetch_add, with no lock and no system call, because it
// sits on every write of the program. Records are posted only while delays
// of an experiment may be owed (DelayLedger::delays_outstanding): during a
// 0% experiment nothing accrues, so there is nothing to decide. A wait longer
// than the ring's memory may miss its waker and pay: that costs accuracy
// only on waits during which more than `capacity` other writes happened.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace coz {

enum class WakeKind : uint32_t {
  Write,       // write/send*/eventfd_write on `target`, a descriptor
  Connect,     // connect on `target`, a socket: wakes an accept
  Signal,      // a signal to `target`, a thread id, or 0 for any thread of the process
  RingSubmit,  // io_uring_enter submitting on `target`, the ring's descriptor
  Unlock,      // flock/fcntl unlock on `target`, a descriptor
  Read,        // read/recv* on `target`, a descriptor: makes room for a writer blocked on a full pipe or socket
  Exit,        // `coz run --system` only: a process of the run exits (`target`, its pid): ends its parent's waitpid
};

struct WakeRecord {
  WakeKind kind;
  int target;  // on the board of `coz run --system` (system_shared.h): the poster's pid
  /// On the board of `coz run --system`: the kernel object the wake went
  /// through, named so that any process can tell (channel_id in channels.h).
  uint64_t channel = 0;
  /// Read from that board: posted by another process, so `target` is no descriptor of ours.
  bool foreign = false;
};

class WakeBoard {
 public:
  static constexpr uint64_t capacity = 1024;
  /// A slot's sequence number while a post writes it, and before its first.
  static constexpr uint64_t slot_in_progress = ~uint64_t{0};
  static constexpr uint64_t slot_empty = ~uint64_t{0} - 1;

  /// The sequence number the next record will get: a waiter notes it before
  /// it blocks, and later looks only at records from there on.
  uint64_t head() const { return next_.load(std::memory_order_acquire); }

  /// Posts a record. Lock-free; safe from any thread (not from signal handlers
  /// that interrupt a post on the same thread: none do).
  void post(WakeKind kind, int target, uint64_t channel = 0);

  /// Whether a record posted at or after `since` reaches the waiter
  /// (`reaches(record)`), asking at most `max_checks` times, newest first
  /// (the wake that ended the wait is most often the last one that reached
  /// it: two readers of one pipe are both woken by a write, one takes the
  /// data and the other returns with a later write's); records overwritten
  /// meanwhile are skipped.
  /// `foreign_to`: on the board of `coz run --system`, the reader's pid:
  /// its own records are skipped (its process's board has them), the others
  /// marked foreign.
  template <typename Reaches>
  bool reached_since(uint64_t since, int max_checks, Reaches&& reaches, int foreign_to = 0) const {
    uint64_t end = head();
    uint64_t begin = end > capacity && since < end - capacity ? end - capacity : since;
    for (uint64_t seq = end; seq > begin && max_checks > 0;) {
      --seq;
      WakeRecord record;
      if (!read(seq, record)) continue;
      if (foreign_to != 0) {
        if (record.target == foreign_to) continue;
        record.foreign = true;
      }
      --max_checks;
      if (reaches(record)) return true;
    }
    return false;
  }

 private:
  struct Slot {
    std::atomic<uint64_t> seq{slot_empty};  // the record's sequence number once complete
    std::atomic<uint64_t> kind_and_target{0};
    std::atomic<uint64_t> channel{0};
  };

  /// Copies record `seq` if it is complete and not overwritten (seqlock-style).
  bool read(uint64_t seq, WakeRecord& out) const;

  std::atomic<uint64_t> next_{0};
  Slot slots_[capacity];
};

}  // namespace coz
