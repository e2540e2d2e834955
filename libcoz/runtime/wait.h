// The shapes every interposed call takes (see delay.h for why): catch up
// before waking someone; pre-block / call / post-block around a wait,
// skipping the delays that accrued while blocked only when another thread
// of the program ended the wait. Shared by interpose.cpp (threads and their
// synchronisation) and interpose_io.cpp (waits and wakes through descriptors).
#pragma once

#include <errno.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>

#include "conventional.h"
#include "reentrancy.h"
#include "runtime.h"
#include "sample_policy.h"
#include "sys.h"
#include "wake_board.h"

namespace coz {

struct ThreadState;

/// Brackets a wait: pre-block on entry; on exit, records how long it blocked
/// and post-blocks (skipping or paying the delays that accrued); keeps errno.
/// `QueueWithDebt`: waiting for a mutex another thread holds, where the time
/// queued absorbs the debt carried in (DelayLedger::pre_lock_wait) instead
/// of the thread paying it first. Inside the runtime's own work
/// (reentrancy.h), it does nothing: the call is the runtime's.
/// `caller`: the wrapper's return address, where the program called the
/// wait; the default argument is evaluated in the wrapper, which is what
/// gives it (record_blocked).
class Wait {
 public:
  enum class Entry { PayFirst, QueueWithDebt };
  explicit Wait(WaitKind kind, Entry entry = Entry::PayFirst, const void* caller = __builtin_return_address(0));
  void done(bool woken_by_thread);

 private:
  WaitKind kind_;
  Entry entry_;
  bool active_;  // false inside the runtime's own work
  const void* caller_;
  uint64_t start_ = 0;
};

/// A wait that another thread of the program may end through the kernel (a
/// write to the pipe it reads, a signal, a connect): on exit, a WakeBoard
/// record that reached it means a thread of the program woke it, and it
/// skips what accrued while it waited; without one, it pays.
class KernelWait {
 public:
  /// How long it blocked goes to the wait sites of the conventional profile
  /// unless `Untimed` (a write, which almost never blocks: two clock reads
  /// were most of what waiting added to every write).
  enum class Timing { Timed, Untimed };
  /// `caller` as for Wait.
  explicit KernelWait(WaitKind kind, Timing timing = Timing::Timed, const void* caller = __builtin_return_address(0));
  /// Ends the wait. `reaches(const WakeRecord&)` says whether a record posted
  /// during the wait ended it; asked only when delays accrued meanwhile.
  template <typename Reaches>
  void done(Reaches&& reaches) {
    if (!thread_) return;
    RuntimeSection section;
    int saved = errno;
    finish(must_decide() && woken_by_program(reaches));
    errno = saved;
  }
  /// Before done(), where the thread sorts the waits it blocks in by who
  /// could end them (ThreadState::sorting_waits; never under `coz run
  /// --system`, where the peer may be a process of the run):
  /// `only_outside()` says whether only the outside could have ended this
  /// one (wake_origin.h), asked only of a wait that blocked. It may make
  /// system calls and take the epoll registry's lock: inside the runtime's
  /// section, errno kept.
  template <typename OnlyOutside>
  void sort(OnlyOutside&& only_outside) {
    if (!sorting_) return;
    end_ = sys::monotonic_ns();  // what finish() times the wait by
    if (end_ - start_ < sample_policy::blocked_wait_min_ns) return;
    RuntimeSection section;
    int saved = errno;
    origin_ = only_outside() ? Origin::Outside : Origin::Program;
    errno = saved;
  }
  /// Ends a wait that nothing in the program could have ended (a child's
  /// exit, a timeout): pays.
  void done_from_outside() {
    if (!thread_) return;
    RuntimeSection section;
    int saved = errno;
    finish(false);
    errno = saved;
  }

 private:
  /// Whether a record posted since the wait began reaches it
  /// (WakeBoard::reached_since): of this process or, under `coz run
  /// --system`, of another process of the run.
  template <typename Reaches>
  bool woken_by_program(Reaches&& reaches) const {
    // Each check may cost a system call or two (channels.h): bounded.
    constexpr int max_checks = 64;
    if (board_->reached_since(since_, max_checks, reaches)) return true;
    return shared_board_ && shared_board_->reached_since(shared_since_, max_checks, reaches, sys::getpid());
  }
  /// Delays accrued while blocked: only then does it matter who ended the wait.
  bool must_decide() const;
  void finish(bool woken_by_program);

  WaitKind kind_;
  enum class Origin : uint8_t { Unknown, Program, Outside };
  Origin origin_ = Origin::Unknown;
  bool sorting_ = false;
  const void* caller_;
  uint64_t start_;  // 0 when untimed
  uint64_t end_ = 0;  // when sort() looked: 0 if it did not
  uint64_t since_;
  uint64_t shared_since_ = 0;
  // Looked up once: every wrapped read and write comes through here. All
  // null when the runtime is off, the thread is not profiled, or the call
  // is the runtime's own (reentrancy.h).
  Runtime* rt_;
  ThreadState* thread_;
  const WakeBoard* board_;
  const WakeBoard* shared_board_ = nullptr;  // `coz run --system`: the processes' board
};

/// Whether an experiment may have left this thread delays to pay: never in
/// a --fixed-speedup 0 run, nor between experiments.
inline bool delays_possible() {
  Runtime* rt = runtime();
  return rt && rt->ledger.delays_outstanding();
}

/// The part of catch_up that runs only while an experiment's delays may be
/// owed: pays what this thread owes, if anything.
void catch_up_if_owed();

/// Before waking another thread (pays what this thread owes; keeps errno).
/// Nothing inside the runtime's own work, as every shape here. Inline:
/// every unlock, signal and post comes here, and outside experiments that
/// insert delays (always, in a --fixed-speedup 0 run) nothing can be owed:
/// three loads and out. As a call through the whole ledger path, it made an
/// uncontended lock/unlock pair 4x slower.
inline void catch_up() {
  if (delays_possible()) catch_up_if_owed();
}

/// Before waking another thread through the kernel: catches up, then, while
/// an experiment inserts delays, leaves the credit on the board for the
/// thread woken to claim (keeps errno).
void wake_through_kernel(WakeKind kind, int target);
/// As wake_through_kernel for a `connect` of socket `fd` to `addr`: under
/// `coz run --system`, its record names the address (connect_target_id),
/// since the socket itself has no name before the call.
void wake_through_connect(int fd, const sockaddr* addr, socklen_t addr_len);

/// `coz run --system`, as this process ends (exit, _exit): its parent may
/// be waiting for it. Pays what the exiting thread owes and leaves its credit
/// on the processes' board (WakeKind::Exit), which the parent's waitpid
/// claims. Nothing in a vfork child, which runs in its parent's memory.
void wake_parent_at_exit();

/// `coz run --system`, in `_exit`: the process takes part no more (exit()
/// says so as its profiler shuts down). Left Live, a child reaped at once
/// was found gone without an exit code, counted dead, and the experiment
/// dropped. Then as wake_parent_at_exit.
void leave_system_at_exit();

/// Whether `record` is the exit of `child` (waitpid's returned pid) that
/// wake_parent_at_exit posted in another process.
bool is_exit_of(const WakeRecord& record, int child);

}  // namespace coz
