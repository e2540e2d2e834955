#include "signal_stack.h"

#include <cstdlib>

#include "real.h"

namespace coz {
namespace {

int real_sigaltstack(const stack_t* ss, stack_t* old) { return real::functions().sigaltstack(ss, old); }

stack_t runtime_stack(const ThreadState& t) {
  stack_t ss = {};
  ss.ss_sp = t.signal_stack;
  ss.ss_size = runtime_signal_stack_bytes;
  return ss;
}

}  // namespace

// One sigaltstack call each way where the program has no alternate stack
// of its own (the usual case): the call that sets a stack also returns the
// one before. Two each way (ask, then set) were 4 of the ~20 system calls a
// thread's start and exit cost the runtime.
void install_signal_stack(ThreadState& t) {
  t.signal_stack = std::malloc(runtime_signal_stack_bytes);
  if (!t.signal_stack) return;  // the handler then runs on the thread's stack, as it did
  stack_t ours = runtime_stack(t);
  stack_t before = {};
  if (real_sigaltstack(&ours, &before) != 0) return;
  if (!(before.ss_flags & SS_DISABLE)) real_sigaltstack(&before, nullptr);  // the program's: it stays
}

void remove_signal_stack(ThreadState& t) {
  if (!t.signal_stack) return;
  // A handler running on it ends the thread (pthread_exit): the stack is in
  // use until the thread is gone, so it is never freed.
  if (on_signal_stack(t, reinterpret_cast<uint64_t>(__builtin_frame_address(0)))) {
    t.signal_stack = nullptr;
    return;
  }
  stack_t off = {};
  off.ss_flags = SS_DISABLE;
  stack_t current = {};
  // Refused (EPERM) on the program's alternate stack: ours is not installed.
  if (real_sigaltstack(&off, &current) == 0 && current.ss_sp != t.signal_stack && !(current.ss_flags & SS_DISABLE)) {
    current.ss_flags &= ~SS_ONSTACK;
    real_sigaltstack(&current, nullptr);  // the program's: put back
  }
  std::free(t.signal_stack);
  t.signal_stack = nullptr;
}

int program_sigaltstack(ThreadState& t, const stack_t* ss, stack_t* old) {
  if (!t.signal_stack) return real_sigaltstack(ss, old);
  stack_t current = {};
  if (real_sigaltstack(nullptr, &current) != 0) return -1;
  if (current.ss_sp == t.signal_stack) {
    current = {};
    current.ss_flags = SS_DISABLE;  // the program set none (the kernel reports no stack so)
  }
  if (ss) {
    stack_t next = (ss->ss_flags & SS_DISABLE) ? runtime_stack(t) : *ss;
    if (real_sigaltstack(&next, nullptr) != 0) return -1;
  }
  if (old) *old = current;
  return 0;
}

}  // namespace coz
