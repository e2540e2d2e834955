#include "wait.h"

#include "runtime.h"
#include "channels.h"
#include "thread_registry.h"

namespace coz {

Wait::Wait(WaitKind kind, Entry entry, const void* caller)
    : kind_(kind), entry_(entry), active_(!in_runtime()), caller_(caller) {
  if (!active_) return;
  RuntimeSection section;
  start_ = sys::monotonic_ns();
  if (entry_ == Entry::QueueWithDebt) {
    thread_pre_lock_wait(start_);
  } else {
    thread_pre_block();
  }
}

void Wait::done(bool woken_by_thread) {
  if (!active_) return;
  RuntimeSection section;
  int saved = errno;
  uint64_t now = sys::monotonic_ns();
  record_blocked(kind_, now - start_, caller_);
  if (entry_ == Entry::QueueWithDebt) {
    thread_post_lock_wait(now);
  } else {
    thread_post_block(woken_by_thread);
    // A sleep ends with time, a signal mostly from outside; the rest
    // (condition variables, semaphores, joins, futexes) with the program.
    if (kind_ != WaitKind::Sleep && kind_ != WaitKind::Signal) thread_count_program_wait(now - start_);
  }
  move_current_thread_to_timer_if_wanted();
  errno = saved;
}

KernelWait::KernelWait(WaitKind kind, Timing timing, const void* caller)
    : kind_(kind),
      caller_(caller),
      start_(timing == Timing::Timed ? sys::monotonic_ns() : 0),
      since_(0),
      rt_(runtime()),
      thread_(current_thread()),
      board_(nullptr) {
  // Inside another wait of this thread (a signal handler's write, the
  // self-pipe trick, while the thread blocks in poll): the outer wait
  // decides; a nested one would overwrite what it noted.
  if (!rt_ || !thread_ || in_runtime() || thread_->ledger.blocked.load(std::memory_order_acquire)) {
    rt_ = nullptr;
    thread_ = nullptr;
    return;
  }
  RuntimeSection section;
  board_ = &rt_->wakes;
  rt_->ledger.pre_block(thread_->ledger);
  // After paying: records posted while this thread paid are older than its wait.
  since_ = rt_->wakes.head();
  if (rt_->system) {
    shared_board_ = &rt_->system->wakes;
    shared_since_ = shared_board_->head();
  } else {
    sorting_ = start_ != 0 && thread_->sorting_waits.load(std::memory_order_relaxed);
  }
}

bool KernelWait::must_decide() const { return thread_ && rt_->ledger.accrued_while_blocked(thread_->ledger); }

void KernelWait::finish(bool woken_by_program) {
  if (!thread_) return;
  if (start_ != 0) {
    const uint64_t ns = (end_ != 0 ? end_ : sys::monotonic_ns()) - start_;
    record_blocked(kind_, ns, caller_);
    if (origin_ != Origin::Unknown) count_wait_origin(*thread_, origin_ == Origin::Outside, ns);
  }
  rt_->ledger.post_block(thread_->ledger, woken_by_program);
  // Inside done()'s runtime section, which keeps errno.
  if (thread_->timer_wanted.load(std::memory_order_relaxed)) move_current_thread_to_timer_if_wanted();
}

void catch_up_if_owed() {
  ThreadState* t = current_thread();
  Runtime* rt = runtime();
  if (!t || !rt || !rt->ledger.owes(t->ledger) || in_runtime()) return;
  RuntimeSection section;
  int saved = errno;
  rt->ledger.catch_up(t->ledger);
  errno = saved;
}

namespace {

/// Before a wake: pays what the thread owes, then says whether to post the
/// wake: not when no delay of an experiment may be owed any more (nothing
/// to decide). A signal handler that wakes (the self-pipe trick) may have
/// interrupted the thread inside ledger code: paying there would pay the
/// same debt twice. The interrupted code settles it.
bool pay_before_waking(Runtime& rt, ThreadState& t) {
  if (!t.ledger.busy.load(std::memory_order_relaxed)) rt.ledger.catch_up(t.ledger);
  return rt.ledger.delays_outstanding();
}

/// This process's slot of `coz run --system`; nullptr outside it, and in a
/// vfork child (its parent's slot, in its parent's memory).
ProcessSlot* own_system_slot(Runtime* rt) {
  if (!rt || !rt->system || !rt->system_slot) return nullptr;
  return rt->system_slot->pid.load(std::memory_order_relaxed) == sys::getpid() ? rt->system_slot : nullptr;
}

/// wake_parent_at_exit, for a process known to be of the run.
void post_exit(Runtime& rt) {
  ThreadState* t = current_thread();
  if (!t || !rt.ledger.delays_outstanding() || in_runtime()) return;
  RuntimeSection section;
  int saved = errno;
  if (pay_before_waking(rt, *t)) rt.system->wakes.post(WakeKind::Exit, sys::getpid());
  errno = saved;
}

/// wake_through_kernel and wake_through_connect: `foreign_channel()` names
/// what the wake goes through for the board of `coz run --system`.
template <typename ForeignChannel>
void post_wake(WakeKind kind, int target, ForeignChannel&& foreign_channel) {
  ThreadState* t = current_thread();
  Runtime* rt = runtime();
  // Nothing to pay and no credit to post (the common case, as in catch_up).
  if (!t || !rt || !rt->ledger.delays_outstanding() || in_runtime()) return;
  RuntimeSection section;
  int saved = errno;
  if (pay_before_waking(*rt, *t)) {
    rt->wakes.post(kind, target);
    // `coz run --system`: the woken thread may be another process's, which
    // knows the descriptor only by the kernel object behind it.
    if (rt->system && (kind == WakeKind::Write || kind == WakeKind::Connect || kind == WakeKind::Unlock ||
                       kind == WakeKind::Read)) {
      if (uint64_t channel = foreign_channel()) rt->system->wakes.post(kind, sys::getpid(), channel);
    }
  }
  errno = saved;
}

}  // namespace

void wake_through_kernel(WakeKind kind, int target) {
  post_wake(kind, target, [target] { return channel_id(target); });
}

void wake_through_connect(int fd, const sockaddr* addr, socklen_t addr_len) {
  post_wake(WakeKind::Connect, fd, [addr, addr_len] { return connect_target_id(addr, addr_len); });
}

void leave_system_at_exit() {
  Runtime* rt = runtime();
  ProcessSlot* slot = own_system_slot(rt);
  if (!slot) return;
  post_exit(*rt);
  slot->state.store(ProcessSlot::Exited, std::memory_order_release);
}

void wake_parent_at_exit() {
  Runtime* rt = runtime();
  if (own_system_slot(rt)) post_exit(*rt);
}

bool is_exit_of(const WakeRecord& record, int child) {
  return record.foreign && record.kind == WakeKind::Exit && record.target == child;
}

}  // namespace coz
