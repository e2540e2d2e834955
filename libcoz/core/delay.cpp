#include "delay.h"

#include <algorithm>

namespace coz {
namespace {

/// Marks the thread as inside ledger code for the scope, so its signal
/// handler does not pay concurrently (which would pay twice). Only the
/// thread and its own handler touch the flag, and a handler leaves it as it
/// found it: a load and a store, not an exchange (a locked instruction, on
/// every wait's way in and out).
class BusyScope {
 public:
  explicit BusyScope(ThreadLedger& t) : t_(t), was_busy_(t.busy.load(std::memory_order_relaxed)) {
    t.busy.store(true, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~BusyScope() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_.busy.store(was_busy_, std::memory_order_relaxed);
  }
  bool nested() const { return was_busy_; }

 private:
  ThreadLedger& t_;
  bool was_busy_;
};

/// Raises the thread's local count to `value` if it is below (the signal
/// handler may add to it meanwhile: never moves it back).
void raise_local(ThreadLedger& t, uint64_t value) {
  uint64_t local = t.local.load(std::memory_order_relaxed);
  while (local < value && !t.local.compare_exchange_weak(local, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

void DelayLedger::begin_experiment(uint64_t delay_per_sample_ns, uint64_t delay_per_trap_sample_ns) {
  counts_->forgive_below.store(counts_->global.load(std::memory_order_acquire), std::memory_order_release);
  counts_->delay_per_sample.store(delay_per_sample_ns, std::memory_order_release);
  counts_->delay_per_trap_sample.store(delay_per_trap_sample_ns, std::memory_order_release);
}

void DelayLedger::end_experiment() {
  counts_->delay_per_sample.store(0, std::memory_order_release);
  counts_->delay_per_trap_sample.store(0, std::memory_order_release);
}

void DelayLedger::start_thread(ThreadLedger& child, uint64_t creator_local) const {
  child.local.store(creator_local, std::memory_order_relaxed);
  child.pre_block_global = 0;
  child.pre_block_local = 0;
  child.busy.store(false, std::memory_order_relaxed);
  child.blocked.store(false, std::memory_order_relaxed);
}

uint64_t DelayLedger::credit_sample(ThreadLedger& t, uint64_t samples) {
  return credit(t, counts_->delay_per_sample.load(std::memory_order_relaxed) * samples);
}

uint64_t DelayLedger::credit_trap_sample(ThreadLedger& t, uint64_t samples) {
  return credit(t, counts_->delay_per_trap_sample.load(std::memory_order_relaxed) * samples);
}

uint64_t DelayLedger::credit(ThreadLedger& t, uint64_t ns) {
  if (ns == 0) return 0;
  t.local.fetch_add(ns, std::memory_order_relaxed);
  counts_->global.fetch_add(ns, std::memory_order_acq_rel);
  return ns;
}

void DelayLedger::forgive_old_debt(ThreadLedger& t) const {
  raise_local(t, counts_->forgive_below.load(std::memory_order_acquire));
}

uint64_t DelayLedger::owed(ThreadLedger& t) const {
  forgive_old_debt(t);
  return debt(t);
}

bool DelayLedger::settled(const ThreadLedger& t) const {
  return t.blocked.load(std::memory_order_acquire) || debt(t) == 0;
}

uint64_t DelayLedger::pay(ThreadLedger& t) {
  // Every sample, unlock, wait and thread exit comes here, and almost
  // always owes nothing: no busy scope for that. (owed() also raises the
  // thread's count to what was forgiven, which pre_block notes: a shortcut
  // on delays_outstanding() alone left it behind, and a waiter woken by
  // another thread paid what it should have skipped: WakeTest.)
  if (owed(t) == 0) return 0;
  BusyScope busy(t);
  uint64_t due = owed(t);
  if (due == 0) return 0;
  uint64_t slept = sleep_(due);
  t.sleeps.fetch_add(1, std::memory_order_relaxed);
  total_sleeps_.fetch_add(1, std::memory_order_relaxed);
  t.local.fetch_add(slept, std::memory_order_relaxed);
  total_paused_.fetch_add(slept, std::memory_order_relaxed);
  return slept;
}

uint64_t DelayLedger::pay_all(ThreadLedger& t) {
  // Each round owes what was credited during the last one, at most s x its
  // length per crediting thread: a few rounds settle it. The bound keeps a
  // thread from waiting out a 100% speedup run by several threads at once.
  constexpr int max_rounds = 16;
  uint64_t total = 0;
  for (int round = 0; round < max_rounds; ++round) {
    uint64_t slept = pay(t);
    if (slept == 0) break;
    total += slept;
  }
  return total;
}

uint64_t DelayLedger::pay_from_signal(ThreadLedger& t) { return paid_elsewhere(t) ? 0 : pay(t); }

void DelayLedger::count_as_paid(ThreadLedger& t, uint64_t ns) {
  t.local.fetch_add(ns, std::memory_order_relaxed);
  total_paused_.fetch_add(ns, std::memory_order_relaxed);
}

void DelayLedger::pre_block(ThreadLedger& t) {
  pay_all(t);
  BusyScope busy(t);
  t.pre_block_global = global();
  t.pre_block_local = t.local.load(std::memory_order_relaxed);
  t.blocked.store(true, std::memory_order_release);
}

void DelayLedger::pre_lock_wait(ThreadLedger& t, uint64_t now_ns) {
  BusyScope busy(t);
  forgive_old_debt(t);
  t.pre_wait_debt = debt(t);
  t.pre_block_global = global();
  t.pre_wait_ns = now_ns;
  t.blocked.store(true, std::memory_order_release);
}

void DelayLedger::post_lock_wait(ThreadLedger& t, uint64_t now_ns) {
  {
    BusyScope busy(t);
    t.blocked.store(false, std::memory_order_release);
    uint64_t g = global();
    uint64_t accrued = g > t.pre_block_global ? g - t.pre_block_global : 0;
    uint64_t waited = now_ns > t.pre_wait_ns ? now_ns - t.pre_wait_ns : 0;
    uint64_t virtual_wait = waited > accrued ? waited - accrued : 0;  // the pauses credited meanwhile do not exist there
    uint64_t still_owed = t.pre_wait_debt > virtual_wait ? t.pre_wait_debt - virtual_wait : 0;
    raise_local(t, g - std::min(g, still_owed));  // owe exactly still_owed from here
  }
  pay(t);
}

void DelayLedger::post_block(ThreadLedger& t, bool skip) {
  {
    BusyScope busy(t);
    t.blocked.store(false, std::memory_order_release);
    if (skip) {
      // Where it stood, moved on by everything that accrued meanwhile. Not
      // local += accrued: a sample of its own from before the wait may have
      // been credited since (kernel-time samples and drained rings arrive
      // late), and is in both counts already; added again, the thread would
      // stand ahead of the virtual clock and owe nothing for that long, and
      // so would every thread it creates.
      uint64_t g = global();
      if (g > t.pre_block_global) raise_local(t, t.pre_block_local + (g - t.pre_block_global));
    }
  }
  pay(t);
}

}  // namespace coz
