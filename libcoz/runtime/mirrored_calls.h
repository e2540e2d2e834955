// Calls whose effect is per thread in the kernel but per process in the
// program's mind, made again on the runtime's own thread.
//
// Capabilities and the "keep capabilities" flags are each thread's own.
// A program that drops privileges and keeps some capabilities (setpriv
// --reuid ... --keep-groups, libcap-ng's capng_change_id) sets them on its
// thread, then changes its user and groups, which glibc applies to every
// thread of the process (a signal to each, SIGSETXID) and aborts the
// program if one of them fails. The profiler thread, which never got the
// capabilities back, failed setresgid with EPERM: SIGABRT, no output. So the
// interposed prctl and capset calls that keep or raise capabilities are made
// on the profiler thread too, before they return to the program.
#pragma once

namespace coz {

/// After the calling (program) thread made system call `number` with these
/// arguments successfully: has the profiler thread make it too, and waits
/// for it (up to a second). Nothing without a profiler thread.
void mirror_on_profiler_thread(long number, long a1, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0);

/// On the profiler thread, at each of its wake-ups: makes the call a program
/// thread asked for, if any.
void serve_mirrored_call();

/// Whether a call changes what the kernel lets this thread do with its
/// credentials (prctl's PR_SET_KEEPCAPS and PR_SET_SECUREBITS, capset on itself).
bool changes_thread_capabilities(long number, long a1, long a2);

}  // namespace coz
