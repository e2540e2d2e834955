// The sample handler never runs on the program's stacks. A thread's stack
// may be small and nearly full (a 16 KiB pthread stack, an 8 KiB coroutine
// stack with a guard page): without the profiler no signal ever lands
// there, and with it each sample put the kernel's signal frame and the
// handler's frames on it (5 KiB at most here, the high-water mark of the
// handler's stack over a run), which crashed such programs (issue #14). So
// every profiled thread gets an alternate signal stack of the runtime's
// own, and the sample handler is SA_ONSTACK.
//
// The program's own sigaltstack stays its own (interposed): a stack it sets
// is installed for real, because its SA_ONSTACK handlers must run there
// (and the sample handler then runs there too, as any handler would: such
// stacks are sized for handlers); when it removes its stack, the runtime's
// goes back; and it always reads back what it set itself, never the
// runtime's stack.
#pragma once

#include <signal.h>

#include "thread_registry.h"

namespace coz {

/// Each thread's alternate stack: room for the kernel's signal frame (~3.5
/// KiB with AVX-512 state), the sample handler (5 KiB with the frame here)
/// and, when the program sends itself the sample signal, the program's own
/// handler (sample_signal.h), which would have had the thread's stack. Only
/// the pages a handler touches are ever resident.
constexpr size_t runtime_signal_stack_bytes = 64 * 1024;

/// Whether `sp` is on thread `t`'s own signal stack: a sample there is of
/// the sample handler. Async-signal-safe.
inline bool on_signal_stack(const ThreadState& t, uint64_t sp) {
  const auto low = reinterpret_cast<uint64_t>(t.signal_stack);
  return low != 0 && sp >= low && sp < low + runtime_signal_stack_bytes;
}

/// At registration, on the thread itself: allocates its stack, installed
/// unless the thread has an alternate stack already (the program's).
void install_signal_stack(ThreadState& t);

/// At the thread's exit, on the thread itself, before its state is freed.
void remove_signal_stack(ThreadState& t);

/// The interposed sigaltstack of a profiled thread (`t`).
int program_sigaltstack(ThreadState& t, const stack_t* ss, stack_t* old);

}  // namespace coz
