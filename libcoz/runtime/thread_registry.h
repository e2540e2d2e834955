// Per-thread profiler state: the thread's side of the delay ledger and its
// sampler. Threads are registered when they start (pthread_create wrapper,
// or the runtime's constructor for the main thread) and unregistered when
// they exit (a pthread key destructor, which also runs on pthread_exit).
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <optional>

#include "breakpoints.h"
#include "conventional.h"
#include "delay.h"
#include "config.h"
#include "perf_ring.h"
#include "profiler_loop.h"
#include "request_latency.h"
#include "sample_policy.h"
#include "unwinder.h"
#include "futex_lock.h"
#include "go_wait.h"

namespace coz {

// GoCallStack first: the Go futex redirect's entry reads it at offset 0 (go_wait.h).
struct ThreadState : GoCallStack {
  ThreadLedger ledger;
  ThreadRequests requests;  // its COZ_BEGIN's requests in flight (runtime/requests.h)
  int tid = 0;
  int perf_fd = -1;
  // Its /proc schedstat file, opened as the thread starts (or by the
  // profiler thread the first time it reads the thread, core_use.cpp) and
  // closed once the thread has left the list. -1: not open.
  int schedstat_fd = -1;
  // The next thread on the stack of threads registered since the list was
  // last read (thread_registry.cpp).
  ThreadState* next_arrival = nullptr;
  // False until the first sample (which comes after a random phase), and
  // after hurry_next_sample: the signal handler then sets the regular period.
  std::atomic<bool> regular_period{false};
  // How much later than its random phase the first sample was taken (a
  // phase shorter than min_first_period_ns, see start_sampling): the handler
  // shortens the second period by as much, so later samples fall where the
  // phase put them.
  uint64_t phase_delay_ns = 0;
  // Samples taken at a period shorter than the configured one (see
  // counted_in_profile in sampler.cpp); starts at a random count.
  uint32_t short_period_samples = 0;
  // Fallback when perf_event is refused: a CPU-time timer signals the thread,
  // and the handler takes the IP from the signal context and walks frame
  // pointers within the thread's stack.
  bool timer_mode = false;
  timer_t timer{};
  // A thread that left its trap event for the whole-CPU events (move_to_timer,
  // whole_cpu_wanted; sampler.cpp, g_whole_cpu): once they are open, its
  // samples come from them, drained by the profiler thread, and its timer's
  // signals only pay its delays. Set by the thread after timer_mode.
  std::atomic<bool> sampled_by_cpus{false};
  // Its perf_event has no ring and raises SIGTRAP itself for each sample
  // (sampler.cpp, g_trap_sampling): the handler walks the live stack, as in
  // timer mode. Turned off by the profiler thread when the thread blocks
  // SIGTRAP for good (watch_trap_delivery): its sampler is then a ring one,
  // and its trap event, disabled, stays open in parked_trap_fd until it exits.
  std::atomic<bool> trap_mode{false};
  int parked_trap_fd = -1;
  // How often a thread in trap mode switches (sample_policy::switch_verdict):
  // its samples since the last look, and its counts then. The handler sets
  // timer_wanted; the thread trades its trap event for a CPU-time timer as
  // its next wait ends (move_current_thread_to_timer_if_wanted), outside any
  // signal handler.
  uint32_t samples_since_switch_check = 0;
  uint32_t looks_saying_move = 0;  // in a row (sample_policy::looks_before_a_move)
  sample_policy::SwitchStretch at_switch_check;  // the counts since the thread began
  // Waits for a mutex another thread held (thread_post_lock_wait). Written by
  // the thread, read by its own sample handler: atomic, never a locked RMW.
  std::atomic<uint64_t> lock_waits{0};
  std::atomic<bool> timer_wanted{false};
  // With timer_wanted: the whole-CPU events are to sample it (SwitchVerdict::MoveToWholeCpu).
  std::atomic<bool> whole_cpu_wanted{false};
  // Set by the handler while the thread switches often enough for who ends
  // its waits to decide (SwitchVerdict::SortWaits): the waits it blocked in
  // that only the outside could end, and that the program could
  // (count_wait_origin). Written by the thread, read by its own handler.
  std::atomic<bool> sorting_waits{false};
  std::atomic<uint64_t> outside_waits{0};
  std::atomic<uint64_t> program_waits{0};
  // When the trap handler last returned (monotonic ns): a trap that
  // arrives late right after it was raised while the handler ran
  // (handle_trap in sampler.cpp).
  uint64_t trap_handler_left_ns = 0;
  // The thread's stack (0, 0 when unknown): for the live walks (timer and trap modes),
  // and the walks that find a wait's site (record_blocked).
  uintptr_t stack_low = 0, stack_high = 0;
  int breakpoint_fd[max_breakpoints] = {-1, -1, -1, -1};  // --progress/--latency counters
  // The thread's one ring: its user-time samples, and those of its time in
  // the kernel where the system allows them (sampler.cpp,
  // start_kernel_sampling: that sampler writes here too, and never signals).
  PerfRing ring;
  // The kernel-time sampler's id (PERF_EVENT_IOC_ID): the ring's lost-record
  // notices name the sampler that lost them. 0: none.
  uint64_t kernel_event_id = 0;
  // The ring's one consumer at a time: the thread's sample handler, or the
  // profiler thread (drain_unsignalled_rings). Guards scratch and unwind_frames too.
  std::atomic<bool> draining{false};
  // The thread blocks the sample signal where the runtime cannot unblock it
  // (sampler.cpp, watch_signal_delivery): its sampler raises no signal, and
  // the profiler thread drains its ring.
  std::atomic<bool> signal_blocked{false};
  // The thread's sample handler is running (it blocks the signal meanwhile),
  // and how many times it ran; the thread's CPU time when the profiler
  // thread first saw the signal blocked (0: not seen), and that count then:
  // for watch_signal_delivery.
  std::atomic<bool> in_sample_handler{false};
  std::atomic<uint32_t> signals_taken{0};
  uint64_t blocked_seen_cpu_ns = 0;
  uint32_t blocked_seen_taken = 0;
  // A sample record that wraps the ring end is copied here (sampler.cpp).
  alignas(8) unsigned char scratch[Config::stack_sample_bytes + 128];
  // The frames of the sample being walked: kept here, not on the stack the
  // signal handler runs on.
  UnwindFrame unwind_frames[Config::max_unwind_frames];
  // The thread's alternate signal stack, where the sample handler runs
  // (signal_stack.h); null if it could not be allocated.
  void* signal_stack = nullptr;
  // Draws which waits called through a library get their site walked
  // (record_blocked); any seed but 0.
  uint64_t wait_draws = 0x9e3779b97f4a7c15u;
};

namespace detail {
// Initial-exec TLS, as reentrancy.h's flag; inline, as current_thread() is
// on every wrapper's path.
inline thread_local ThreadState* tls_thread = nullptr;
}  // namespace detail

/// This thread's state, or nullptr if it is not profiled. Async-signal-safe.
inline ThreadState* current_thread() { return detail::tls_thread; }

/// Registers the calling thread; `creator_local` is the creator's local delay.
void register_current_thread(uint64_t creator_local);

/// Pays what the thread owes, stops its sampler and forgets it.
void unregister_current_thread();

/// The calling thread trades its trap event for a CPU-time timer if its
/// sample handler asked for it (ThreadState::timer_wanted). Called as a wait
/// ends (wait.cpp), inside the runtime's work.
void move_current_thread_to_timer_if_wanted();

/// Program threads registered and not yet exited. When main has called
/// pthread_exit and the last other thread exits, this reaches 0 and the
/// profiler thread must leave too: glibc ends the process only when its last
/// thread exits.
int live_thread_count();

/// The process's threads as the kernel counts them (/proc/self/stat), for
/// threads that leave without the runtime seeing them: one that ends with
/// a raw syscall(SYS_exit) runs no thread-exit handler, and seccomp strict
/// mode kills a thread that makes a forbidden call. Nullopt when /proc
/// cannot be read. Reads the descriptor open_process_stat opened.
std::optional<ProcessThreads> read_process_threads();

/// Opens /proc/self/stat for read_process_threads, once, where the program
/// allocates no descriptor (descriptors.h), and closes the one a forked
/// child inherited (its parent's). Opening it for each read, every 50 ms,
/// took the lowest free number for a moment: a program that opened a file
/// just then got another number than it gets without the profiler. Call
/// where no thread of the program runs: at start-up, in a forked child; or,
/// where the runtime keeps a descriptor table of its own (descriptors.h),
/// on the profiler thread, which opens it there (elsewhere it forgets it).
void open_process_stat();

/// Under seccomp strict mode (about to be entered), the thread may only
/// read, write, _exit and sigreturn; under a filter that refuses one of the
/// runtime's calls (seccomp_filter.h), much the same: it pays what it owes,
/// leaves the thread list (but stays counted as live), stops its sampler,
/// and never runs the runtime's bookkeeping again.
void seal_current_thread();

/// The registry's lock: held by the readers of the list (LockedThreadList)
/// and by a thread that leaves it. A thread that registers takes no lock:
/// it pushes itself onto a stack of arrivals that the next reader moves
/// into the list, so a new thread never waits for a reader that a crowded
/// machine preempted mid-pass (short_threads, 2 new threads per 3 ms round
/// on 2 cores: 88-95 us per thread waiting for it, a sixth of the program's
/// time under coz, which read halving its long task 5 points low).
FutexLock& thread_list_lock();

/// The registered threads, those registered since the last look included,
/// under the registry's lock for as long as it lives (no thread can leave
/// meanwhile). Not for signal context.
class LockedThreadList {
 public:
  LockedThreadList();
  ~LockedThreadList();
  LockedThreadList(const LockedThreadList&) = delete;
  LockedThreadList& operator=(const LockedThreadList&) = delete;

  ThreadState* const* begin() const { return begin_; }
  ThreadState* const* end() const { return end_; }
  size_t size() const { return static_cast<size_t>(end_ - begin_); }

 private:
  ThreadState* const* begin_;
  ThreadState* const* end_;
};

/// Calls f(ThreadState&) for every registered thread, under the registry
/// lock (threads cannot leave meanwhile). Not for signal context.
template <typename F>
void for_each_thread(F&& f) {
  LockedThreadList threads;
  for (ThreadState* t : threads) f(*t);
}

/// In a forked child: only the forking thread exists (call with
/// thread_list_lock() free).
void reset_live_threads_after_fork();

// The delay protocol for the interposed calls; no-ops when the calling
// thread is not profiled.
void thread_pre_block();
void thread_post_block(bool skip);
/// Around waiting for a mutex another thread holds (DelayLedger::pre_lock_wait);
/// `now_ns` is CLOCK_MONOTONIC at entry and at exit.
void thread_pre_lock_wait(uint64_t now_ns);
void thread_post_lock_wait(uint64_t now_ns);
/// A wait of the calling thread that lasted `ns`, which the program could
/// end: counted (count_wait_origin) while the thread sorts its waits.
void thread_count_program_wait(uint64_t ns);
/// While `t` sorts its waits: a wait that lasted `ns` and that only the
/// outside (`outside`) or the program could end. Shorter than
/// sample_policy::blocked_wait_min_ns, it returned without blocking: not counted.
inline void count_wait_origin(ThreadState& t, bool outside, uint64_t ns) {
  if (ns < sample_policy::blocked_wait_min_ns) return;
  std::atomic<uint64_t>& count = outside ? t.outside_waits : t.program_waits;
  count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // only this thread writes
}
/// A wait of the calling thread that blocked `ns`: charged to the in-scope
/// line that called it, for the conventional profile. `caller` is the
/// wrapper's return address: the site itself when the program called the
/// wait directly; otherwise the site is found by unwinding (sampled).
void record_blocked(WaitKind kind, uint64_t ns, const void* caller);

/// The calling thread's local delay (what a thread it creates inherits).
uint64_t thread_local_delay();

}  // namespace coz
