// The virtual-speedup ledger: a global delay count and one local count per thread.
//
// Speeding line L up by s is emulated by pausing every *other* thread for
// s x (sample period) each time a thread is sampled in L. The sampled thread
// credits itself (local += d) and raises the global count (global += d);
// every thread whose local count is behind the global one owes the difference
// and pays it with a measured sleep (oversleep is credited, so the error does
// not accumulate). Pauses are later subtracted from the experiment's duration.
//
// Blocking: a thread pays what it owes before it blocks; woken by another
// thread, it skips the delays that accrued while it was blocked (the waker
// paid them before waking it); woken by a timeout or the outside world, it
// pays them. Wakers pay before waking. One exception: waiting for a mutex
// that another thread holds, the time queued absorbs the debt instead
// (pre_lock_wait).
//
// Between experiments the debt is forgiven: delays belong to the experiment
// that created them, and a late payment would distort the next one.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>

namespace coz {

/// The counts every thread of an experiment compares itself with. A
/// process's own, or (`coz run --system`) one set in memory shared by every
/// process of the run, so that a sample in one process pauses the threads of
/// all (system_shared.h). Atomic and address-free: valid in shared memory.
struct LedgerCounts {
  std::atomic<uint64_t> global{0};
  std::atomic<uint64_t> forgive_below{0};
  std::atomic<uint64_t> delay_per_sample{0};
  std::atomic<uint64_t> delay_per_trap_sample{0};  // credit_trap_sample's
};

/// One thread's side of the ledger. Written by its own thread and by that
/// thread's signal handler, so every update is an atomic read-modify-write.
struct ThreadLedger {
  std::atomic<uint64_t> local{0};        // delay paid or credited, ns
  uint64_t pre_block_global = 0;         // global count when the thread last blocked
  uint64_t pre_block_local = 0;          // its own local count then
  uint64_t pre_wait_debt = 0;            // debt carried into a lock wait (pre_lock_wait)
  uint64_t pre_wait_ns = 0;              // when that wait began
  std::atomic<bool> busy{false};         // inside ledger code: the signal handler must not pay now
  std::atomic<bool> blocked{false};      // between pre_block and post_block: its debt may be skipped
  std::atomic<uint64_t> sleeps{0};       // payments that slept: switches of the profiler's, not the program's
};

class DelayLedger {
 public:
  /// Sleeps about `ns` and returns the ns that really passed.
  using SleepFn = uint64_t (*)(uint64_t ns);

  explicit DelayLedger(SleepFn sleep) : sleep_(sleep) {}

  /// Counts kept in `shared` from now on instead of this ledger's own (at
  /// start-up, before any thread compares itself with them).
  void share_counts(LedgerCounts* shared) { counts_ = shared; }
  bool counts_shared() const { return counts_ != &own_; }

  // ---- experiment control (profiler thread) ----
  /// Starts crediting `delay_per_sample_ns` per selected sample (0 for a 0%
  /// experiment), and `delay_per_trap_sample_ns` per sample that stands at a
  /// breakpoint of the runtime's (credit_trap_sample; 0: none), whatever the
  /// speedup.
  void begin_experiment(uint64_t delay_per_sample_ns, uint64_t delay_per_trap_sample_ns = 0);
  void end_experiment();
  uint64_t global() const { return counts_->global.load(std::memory_order_acquire); }
  uint64_t delay_per_sample() const { return counts_->delay_per_sample.load(std::memory_order_relaxed); }
  /// Whether delays credited since the last experiment began may still be
  /// owed: during an experiment that inserts delays, and after it until the
  /// next one forgives them. A waker's credit matters only then.
  bool delays_outstanding() const {
    return counts_->global.load(std::memory_order_acquire) > counts_->forgive_below.load(std::memory_order_acquire);
  }
  /// Total ns this process's threads have spent paying delays (its own,
  /// even where the counts are shared).
  uint64_t total_paused() const { return total_paused_.load(std::memory_order_relaxed); }
  /// Payments that slept, over this process's threads: each is a voluntary
  /// context switch of the runtime's, not the program's.
  uint64_t total_sleeps() const { return total_sleeps_.load(std::memory_order_relaxed); }

  // ---- thread side ----
  /// A new thread starts where its creator stood when it created it
  /// (`creator_local`): it owes nothing for the time before it existed.
  void start_thread(ThreadLedger& child, uint64_t creator_local) const;
  /// The thread was sampled in the selected line, `samples` times at the
  /// period in force; returns the delay credited (0 outside a speedup
  /// experiment). Async-signal-safe.
  uint64_t credit_sample(ThreadLedger& t, uint64_t samples = 1);
  /// The thread was sampled in the trap of a breakpoint that counts a
  /// `--progress` line: the time of the runtime's, not the program's, that
  /// the really unprofiled program never spends. Credited as a line sped up
  /// by 100% is, in every experiment alike: the other threads pause for it,
  /// and the experiment's duration leaves it out. Left in, a thread that
  /// counted 43,000 visits a second spent ~half its time in the traps here
  /// (a debug exception leaves a virtual machine), and every prediction of
  /// its program read half the truth (space_pipeline's consumer at 50%:
  /// +26% against +42% with the same point counted by COZ_PROGRESS).
  /// Returns the delay credited. Async-signal-safe.
  uint64_t credit_trap_sample(ThreadLedger& t, uint64_t samples);
  /// What the thread owes now (after forgiving debt from earlier experiments).
  uint64_t owed(ThreadLedger& t) const;
  /// Whether owed(t) would be more than 0, with loads only: inline, for the
  /// wrappers' fast path (outside experiments that insert delays, nothing
  /// is ever owed, and every unlock and wake asks).
  bool owes(const ThreadLedger& t) const { return debt(t) != 0; }
  /// True when the thread owes nothing, or is blocked (a thread woken by
  /// another skips what accrued meanwhile). A thread in the middle of paying
  /// is not settled: it made its progress ahead of the virtual clock, and is
  /// level with it only once the payment ends. Read by the profiler thread.
  bool settled(const ThreadLedger& t) const;
  /// What the thread owes, by loads only (a thread in the middle of paying
  /// still owes what it is sleeping off): a bound on how long it takes to
  /// settle once no more delays are credited. Read by the profiler thread.
  uint64_t outstanding(const ThreadLedger& t) const { return debt(t); }
  /// Pauses for what the thread owes; returns ns paused. Async-signal-safe.
  uint64_t pay(ThreadLedger& t);
  /// Pays until the thread owes nothing: delays credited while it slept are
  /// owed too. Before waking or waiting on another thread, the thread must
  /// stand where the virtual clock stands at that moment, not where it stood
  /// when it began to pay (a thread that exited after one payment, with the
  /// line still running elsewhere, woke its joiner ~10% of a round early).
  uint64_t pay_all(ThreadLedger& t);
  /// Pays, unless the thread is inside ledger code (then a later call pays). For signal handlers.
  uint64_t pay_from_signal(ThreadLedger& t);
  /// Whether pay_from_signal would pay now, by loads only: a handler that
  /// must prepare for a payment (pause its sampler) asks first.
  bool would_pay_from_signal(const ThreadLedger& t) const { return !paid_elsewhere(t) && owes(t); }
  /// Counts `ns` the thread spent on a payment besides its sleep (a
  /// handler pausing and restarting its sampler around it: pay_from_handler
  /// in sampler.cpp) as paid: it made no progress then either, and a thread
  /// that pays often would fall behind by that much each time.
  void count_as_paid(ThreadLedger& t, uint64_t ns);

  /// Before a call that may block: pays what the thread owes, then notes the
  /// global count. The debt belongs to the work before this point; paid after
  /// the call, it would be paid holding what the call acquired (a contended
  /// mutex), stalling every thread that waits for it.
  void pre_block(ThreadLedger& t);
  /// After it returns: `skip` when another thread of the program woke it
  /// up (a pthread call, or a wake through the kernel found on the
  /// WakeBoard), which skips everything that accrued until the return, the
  /// time it waited for a core after the wake included. Pays what remains owed.
  ///
  /// Why until the return: woken, a thread often waits for a core that the
  /// threads running the selected line hold, and that wait is shorter in
  /// the sped-up program. A wake through a descriptor used to skip only
  /// up to the waker's count at the wake and pay the rest: a pool's
  /// dispatcher, woken by each result while both workers held the two
  /// cores, paid ~0.3 ms per wake, 14 of an experiment's 20 ms of delays
  /// in all, on its workers' path. Predictions fell 2-5 points short on
  /// every request/response and pool structure (proc_pool +20% for +26%).
  void post_block(ThreadLedger& t, bool skip);
  /// Whether delays were credited since the thread blocked: only then does it
  /// matter who ended the wait (a thread woken without, pays nothing either way).
  bool accrued_while_blocked(const ThreadLedger& t) const { return global() > t.pre_block_global; }
  /// Before waiting for a mutex that another thread holds: notes the debt
  /// instead of paying it. Paid first, it kept the thread out of the queue:
  /// with every waiter paying at once, the lock was sometimes released to no
  /// one and sat idle, which the sped-up program never does.
  void pre_lock_wait(ThreadLedger& t, uint64_t now_ns);
  /// After acquiring it: skips the delays credited meanwhile (the releaser
  /// caught up), and the time spent queued, net of those, absorbs the debt
  /// carried in: paused first, the thread would have queued that much later
  /// and still been waiting. Pays what the wait did not absorb.
  void post_lock_wait(ThreadLedger& t, uint64_t now_ns);
  /// Before waking another thread (unlock, signal, post, thread exit).
  void catch_up(ThreadLedger& t) { pay_all(t); }

 private:
  /// Whether a signal handler must leave the thread's debt alone: it
  /// interrupted ledger code, or a blocking call, whose post_block skips or
  /// pays what accrues (paid here too, it would be paid twice).
  static bool paid_elsewhere(const ThreadLedger& t) {
    return t.busy.load(std::memory_order_relaxed) || t.blocked.load(std::memory_order_relaxed);
  }
  void forgive_old_debt(ThreadLedger& t) const;
  /// The thread made `ns` of progress the others must pause for: its own
  /// count and the global one both move.
  uint64_t credit(ThreadLedger& t, uint64_t ns);
  /// Global count less what the thread paid or was forgiven; reads only.
  uint64_t debt(const ThreadLedger& t) const {
    uint64_t paid = std::max(t.local.load(std::memory_order_relaxed), counts_->forgive_below.load(std::memory_order_acquire));
    uint64_t g = global();
    return g > paid ? g - paid : 0;
  }

  LedgerCounts own_;
  LedgerCounts* counts_ = &own_;
  std::atomic<uint64_t> total_paused_{0};
  std::atomic<uint64_t> total_sleeps_{0};
  SleepFn sleep_;
};

}  // namespace coz
