// What the program's threads did with the cores during an experiment: their
// time ready to run but waiting for a core (the kernel's schedstat
// run_delay; the cores they kept busy come from the process's CPU time). A
// program whose threads wait for cores can speed up when a line frees a core
// for them, which pausing the other threads does not reproduce: the report
// says so for such a program (docs/analysis.md section 5.1).
#pragma once

#include <cstddef>
#include <cstdint>

namespace coz {

/// The registered threads' counters at one moment.
struct CoreUseSnapshot {
  /// At most this many threads are read (two small /proc reads each, per
  /// experiment); beyond, a rotating subset, scaled up to all of them.
  static constexpr size_t max_threads = 32;
  struct Entry {
    int tid = 0;
    uint64_t waiting_ns = 0;
  };
  Entry entries[max_threads];
  size_t count = 0;
  double scale = 1;  // registered threads / threads read
  uint64_t taken_ns = 0;
};

/// Reads the counters of the registered threads. Profiler thread only
/// (keeps their /proc files open, above the program's descriptors; takes
/// the thread list's lock).
void snapshot_core_use(CoreUseSnapshot& out);

/// Reads the counters of the threads `begin` read, again (a crowd's
/// rotating subset stays the same across an experiment). Profiler thread only.
void snapshot_core_use_again(const CoreUseSnapshot& begin, CoreUseSnapshot& out);

struct ThreadState;
/// Opens the thread's schedstat file as it starts (register_current_thread,
/// under the list's lock). Opening takes the lowest free number until the
/// file moves up: the profiler thread opening it at an experiment, on a
/// loaded machine that preempted it in between, took the number of up to 25
/// of the program's reopens (OwnershipTest, fd_reuse beside two spinning
/// loops: 4 runs of 12). At the thread's start the window is the one its
/// sampler's perf_event_open has anyway (docs/descriptors.md).
void open_core_use_file(ThreadState& t);
/// Closes the thread's schedstat file as it leaves the thread list, or as a
/// forked child forgets the parent's threads (under the list's lock).
void close_core_use_file(ThreadState& t);

/// Threads that waited for a core between `begin` and `end`, on average (in
/// whole threads, e.g. 0.4; same tids: a thread that exited meanwhile counts
/// nothing, one started meanwhile is not read); negative when not measured
/// (no schedstat here).
double waiting_for_core_between(const CoreUseSnapshot& begin, const CoreUseSnapshot& end);

/// CPUs this process may run on (its affinity mask); 0 if unknown.
int usable_cpus();

}  // namespace coz
