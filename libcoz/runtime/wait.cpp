#include "wait.h"

#include "runtime.h"
#include "thread_registry.h"

namespace coz {

Wait::Wait(WaitKind kind, Entry entry) : kind_(kind), entry_(entry), start_(sys::monotonic_ns()) {
  if (entry_ == Entry::QueueWithDebt) {
    thread_pre_lock_wait(start_);
  } else {
    thread_pre_block();
  }
}

void Wait::done(bool woken_by_thread) {
  int saved = errno;
  uint64_t now = sys::monotonic_ns();
  record_blocked(kind_, now - start_);
  if (entry_ == Entry::QueueWithDebt) {
    thread_post_lock_wait(now);
  } else {
    thread_post_block(woken_by_thread);
  }
  errno = saved;
}

KernelWait::KernelWait(WaitKind kind) : kind_(kind), start_(sys::monotonic_ns()), since_(0) {
  thread_pre_block();
  // After paying: records posted while this thread paid are older than its wait.
  if (const WakeBoard* board = wake_board()) since_ = board->head();
}

const WakeBoard* KernelWait::wake_board() {
  Runtime* rt = runtime();
  return rt ? &rt->wakes : nullptr;
}

bool KernelWait::must_decide() const {
  ThreadState* t = current_thread();
  Runtime* rt = runtime();
  return t && rt && rt->ledger.accrued_while_blocked(t->ledger);
}

void KernelWait::finish(std::optional<uint64_t> credit) {
  record_blocked(kind_, sys::monotonic_ns() - start_);
  ThreadState* t = current_thread();
  Runtime* rt = runtime();
  if (t && rt) rt->ledger.post_block_claim(t->ledger, credit);
}

void catch_up() {
  int saved = errno;
  thread_catch_up();
  errno = saved;
}

void wake_through_kernel(WakeKind kind, int target) {
  ThreadState* t = current_thread();
  Runtime* rt = runtime();
  if (!t || !rt) return;
  int saved = errno;
  // A signal handler that writes to a pipe (the self-pipe trick) may have
  // interrupted this thread inside ledger code: paying there would pay the
  // same debt twice. The interrupted code settles it; post what stands.
  if (!t->ledger.busy.load(std::memory_order_relaxed)) rt->ledger.catch_up(t->ledger);
  if (rt->ledger.delays_outstanding()) rt->wakes.post(kind, target, t->ledger.local.load(std::memory_order_relaxed));
  errno = saved;
}

}  // namespace coz
