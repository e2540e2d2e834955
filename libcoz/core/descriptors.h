// The runtime's own long-lived descriptors (the profile, each thread's
// sampler, the breakpoint counters), kept out of the program's way.
//
// A descriptor is only a number, and the program owns the numbers: it may
// close every one from 3 up at start-up (close_range, closefrom, a loop to
// sysconf(_SC_OPEN_MAX)), then open its own files, which get the lowest free
// numbers. A runtime that kept a number it had lost would then write its
// records into the program's file, set a period or clear O_APPEND on it, and
// close it when a thread exits. And each descriptor the runtime takes below
// the program's limit is one the program can no longer open.
//
// So every long-lived descriptor of the runtime is moved at or above the
// program's soft RLIMIT_NOFILE, where the program allocates nothing: the
// limit is raised for the one F_DUPFD_CLOEXEC and restored at once (a
// descriptor above a lowered limit stays valid; only new allocations are
// limited). The program's loops up to sysconf(_SC_OPEN_MAX) never reach it,
// and the interposed close, close_range, closefrom, dup2 and dup3 (also
// through syscall()) pass the runtime's descriptors by, as if they were not
// open. What cannot be interposed: a close_range or close issued with an
// inline `syscall` instruction, and a program that raises its own limit and
// then closes numbers it never opened that way.
//
// Where the hard limit equals the soft one and cannot be raised for a
// moment (no CAP_SYS_RESOURCE, or already at fs.nr_open), there is no number
// above the limit. Under a limit of 1024 or more the descriptors go as
// high below it as they can, where only a program that uses nearly all of
// its numbers reaches them. Under a small one, the descriptors of the
// process's own (the profile, the control file, /proc/self/stat) live in a
// descriptor table of the runtime's own: the profiler thread leaves the
// process's table for a copy of it (unshare(CLONE_FILES)), closes the
// program's descriptors there but stderr, and opens the runtime's files in
// it, so they take no number from the program. The limit bounds the numbers
// of every table, so the program keeps all of its own. Only the profiler
// thread can use those descriptors: other threads hand their records to it
// (ProfileWriter, Profiler). The threads then sample with timers, which
// take no descriptor (runtime.cpp): the profiler thread acts on each
// thread's sampler by its number, which would name nothing, or one of its
// own files, in its table.
#pragma once

#include "futex_lock.h"

namespace coz::descriptors {

/// Moves `fd`, a descriptor the runtime just opened, to a number above the
/// program's reach (see above), close-on-exec, and registers it as the
/// runtime's. Returns the number it now has (`fd` itself is closed, unless
/// it could not be moved); in the runtime's own table (in_own_table()),
/// `fd` as it is. Not for signal context.
int adopt(int fd);

/// Closes a descriptor that adopt() returned, and forgets it.
void close_own(int fd);

/// Whether `fd` is one of the runtime's. Lock-free, async-signal-safe.
bool is_runtime(int fd);

/// The lowest runtime descriptor in [from, to], or -1. Async-signal-safe.
int next_runtime(unsigned from, unsigned to);

/// close_range(2) over [first, last] except the runtime's descriptors:
/// the gaps between them are closed with one call each. -1 and errno as
/// close_range (ENOSYS on kernels before 5.9).
int close_range_except_runtime(unsigned first, unsigned last, int flags);

/// At start-up, before the runtime opens a descriptor: whether it keeps
/// its own in a table of its own (above), because the program's limit is
/// small, it has fewer than a few dozen numbers above it and may not raise
/// the hard one. Returns own_table(); `limit` gets the soft limit.
bool decide_table(unsigned long& limit);
/// Whether the process's own descriptors of the runtime are in a table of
/// its own (decide_table).
bool own_table();
/// On the profiler thread, before it opens anything: leaves the process's
/// table for a copy and closes there every descriptor but stderr (copies
/// kept would hold the program's pipes open). False if the kernel refuses
/// (seccomp): the runtime's descriptors then go to the program's table.
bool enter_own_table();
/// Whether this thread is the one with the runtime's own table.
bool in_own_table();
/// Whether this thread can use the process's own descriptors of the runtime:
/// any thread, unless they are in a table of the runtime's own.
inline bool usable_here() { return !own_table() || in_own_table(); }

/// The lock of the limit's raise and restore: the runtime's fork handlers
/// hold it across fork() with every other lock (runtime.cpp).
FutexLock& lock();

}  // namespace coz::descriptors
