// How much wall time a thread's CPU time took while other threads held the
// cores: the scale of the delay a sample in the selected line credits.
//
// A sample stands for a period of the thread's CPU time, and a virtual
// speedup pauses every other thread for s x that period. Where the thread
// had a core whenever it could run, that is the wall time the line would
// save. Where more threads were runnable than cores (other programs on the
// machine, or the program's own threads beyond the cores), the thread ran
// only part of the time it was runnable, and a line s faster in CPU time
// saves s x its wall time, (CPU + waits for a core) per CPU: a pause of s x
// the period alone undercounts it. syscall_write's write line at 50% beside
// one busy loop on a 2-core machine: predicted +31% against +43% real, its
// consumer runnable 1.41 s per 1.0 s it ran.
//
// The waits come from the kernel's run delay (/proc/.../schedstat: time
// runnable but not running). That also holds the wait of every wake-up for
// a core to take the thread, which a faster line does not shorten (a
// consumer woken 60,000 times a second waits a microsecond each time even
// on an idle machine): only the share of the delay that follows involuntary
// switches (preemptions) counts, the delay split by the counts of the two
// kinds of switch (getrusage). The split undercounts a preemption's wait,
// longer than a wake-up's, where a thread has both: never more than the
// truth.
#pragma once

#include <cstdint>

namespace coz::preemption {

/// A thread's counts at one moment.
struct Counts {
  uint64_t cpu_ns = 0;        // schedstat's first field: time on a CPU
  uint64_t run_delay_ns = 0;  // its second: time runnable, waiting for a CPU
  uint64_t voluntary = 0;     // switches: blocked, slept
  uint64_t involuntary = 0;   // switches: preempted
};

/// A stretch shorter than this in CPU time says too little: the factor
/// stays what it was and the stretch grows until the next sample.
constexpr uint64_t min_stretch_cpu_ns = 200'000;

/// The most a factor may be: a thread that ran one part in four of the time
/// it was runnable. Beyond it the stretch is more likely the thread's
/// own pause (a stop signal, a debugger) than the scheduler's sharing.
constexpr double max_factor = 4.0;

/// Wall time per CPU time over the stretch from `then` to `now`: 1 where
/// the thread was never preempted, `previous` where the stretch is too
/// short (min_stretch_cpu_ns) or the counts went backwards.
double wall_per_cpu(const Counts& then, const Counts& now, double previous);

/// Whether the stretch from `then` to `now` is long enough to replace the factor.
bool long_enough(const Counts& then, const Counts& now);

}  // namespace coz::preemption
