// Go parks and wakes its threads with raw futex system calls (runtime.futex,
// src/runtime/sys_linux_amd64.s), not through the C library, so the waits
// and wakes that the delay protocol brackets in C programs (docs/waits.md)
// were never seen in a Go program (issue #52). In a Go program the runtime
// redirects runtime.futex to the same bracketing as a C program's
// syscall(SYS_futex, ...): a wake catches up first; a wait pays before it
// blocks, and skips what accrued meanwhile when another thread woke it.
//
// runtime.futex runs on whatever stack its Go caller has, a goroutine's
// among them, of which a NOSPLIT function may count on ~100 bytes: the
// runtime's code runs on a stack of each thread's own instead (given as the
// thread registers). A call on a thread without one, or from a signal
// handler that interrupted such a call, goes straight to the kernel.
#pragma once

#include <cstdint>

namespace coz {

/// A thread's stack for the runtime's side of its redirected futex calls:
/// its top (0: none, the call goes straight to the kernel) and whether a
/// call is on it now. The first base of ThreadState, at offset 0, where the
/// redirect's entry finds it through the thread's ThreadState pointer (in
/// the runtime's static TLS already: a variable of its own made that TLS
/// block 64 bytes larger, which every thread's stack lost, and a program
/// measuring its stack saw).
struct GoCallStack {
  uint64_t go_call_top = 0;
  uint64_t go_call_busy = 0;
};

/// Redirects the Go program's runtime.futex, at `address` in memory. Only if
/// its code is the one known (Go 1.19 to 1.26); false, and nothing changed,
/// otherwise. At start-up, before the Go program runs.
bool redirect_go_futex(uint64_t address);

/// Whether runtime.futex was redirected: threads then need their stacks.
bool go_futex_redirected();

/// Gives a thread the stack its redirected futex calls run on, as it
/// registers, and takes it back once it has left (its ThreadState no
/// longer reachable from the thread).
void give_go_call_stack(GoCallStack& thread);
void take_go_call_stack(GoCallStack& thread);

}  // namespace coz
