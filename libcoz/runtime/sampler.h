// Sampling: a perf_event task-clock counter per thread. Where the kernel
// allows (sampler.cpp, choose_trap_sampling), it has no ring and raises
// SIGTRAP in the thread for each sample; the handler walks the live stack.
// Else it samples the registers and a slice of the user stack into a ring
// buffer and signals the thread on each sample through its descriptor; a
// run that can insert no delays then needs no signals: its threads are
// signalled once, and the profiler thread drains their rings. Either way
// the signal handler attributes samples to lines and pays delays.
#pragma once

#include <cerrno>
#include <string>

#include "runtime.h"
#include "sample_signal.h"
#include "thread_registry.h"

namespace coz {

/// Installs the sample signal handler (once per process).
bool install_sample_handler();
/// Takes SIGTRAP too, whatever the samplers: the breakpoints of command-line
/// progress points can raise it (claim_breakpoint_trap).
bool install_trap_handler();

/// Decides, on the calling thread before any other thread of the program
/// starts, how threads sample and where their time in the kernel goes:
/// each thread's trap event takes it too where it can (Linux 6.1+, kernel
/// time allowed); else the process's per-CPU rings (cpu_rings.h) take every
/// thread's, where the system allows it, so that no thread opens a
/// kernel-time sampler of its own (COZ_CPU_RINGS=0 turns them off: each
/// thread then tries its own). Then decides whether threads sample with
/// traps (no ring per thread), and if so takes SIGTRAP. Returns whether the
/// per-CPU rings were opened.
bool start_process_sampling(Runtime& rt);
/// The profiler thread's id: its samples in the per-CPU rings count nowhere.
void note_profiler_thread(int tid);
/// Whether a debugger (or strace) traces the process: it would stop the
/// program at each of the runtime's sample signals.
bool traced();
/// The profiler thread's tid; 0 without one, -1 while it starts (between
/// pthread_create and its first instruction: note_profiler_thread).
int profiler_thread_tid();
/// In a forked child: drops the parent's per-CPU rings (the child's thread
/// is not sampled into them) without touching them.
void forget_inherited_process_sampling();

/// Opens, maps and enables the calling thread's sampler. False (with a
/// warning the first time) when perf_event_open is refused.
bool start_sampling(ThreadState& thread, const Config& config);
void stop_sampling(ThreadState& thread);

/// Before the calling thread replaces the process image (execve and the
/// other exec calls): stops its sampler if a sample of the kernel's work
/// of the exec could reach the new image. A trap taken in the kernel is
/// raised as the thread returns to user mode, which after an exec is in the
/// new image, where SIGTRAP has its default action: the program was killed
/// by it. Returns whether it stopped it.
bool pause_sampling_for_exec(ThreadState& thread);
/// After an exec that failed (the image is still ours): samples again.
void resume_sampling_after_exec(ThreadState& thread);

/// Stops the calling thread's sampler for as long as it lives (an exec
/// call: interpose_exec.cpp, and syscall()), and restarts it if the exec
/// returns (it failed).
class ExecWindow {
 public:
  ExecWindow() : thread_(runtime() ? current_thread() : nullptr) {
    paused_ = thread_ && pause_sampling_for_exec(*thread_);
  }
  ~ExecWindow() {
    if (!paused_) return;
    int saved_errno = errno;
    resume_sampling_after_exec(*thread_);
    errno = saved_errno;
  }
  ExecWindow(const ExecWindow&) = delete;
  ExecWindow& operator=(const ExecWindow&) = delete;

 private:
  ThreadState* thread_;
  bool paused_ = false;
};

/// Takes no more samples of the calling thread, which stays registered: its
/// descriptors and rings stay in place for the profiler thread.
void suspend_sampling(ThreadState& thread);

/// Trades the thread's trap event for a CPU-time timer (its handler found
/// it switching too often for the event: sample_policy::switch_verdict),
/// whose samples are the whole-CPU events' instead where it was woken mostly
/// from outside and those events are allowed (ThreadState::sampled_by_cpus).
/// By the thread itself, outside any signal handler, under the thread list's
/// lock (the profiler thread reads its descriptor under it):
/// move_current_thread_to_timer_if_wanted.
void move_to_timer(ThreadState& thread);

/// Makes the thread's next sample come after ~20 us of its CPU time instead
/// of up to a full period, so that a running thread that owes delays pays
/// them now (the end of an experiment waits for that). A thread that is not
/// running is not disturbed: no signal comes until it runs. The sample after
/// that one has the regular period again. No-op in timer mode.
void hurry_next_sample(ThreadState& thread);

/// At the end of an experiment: hurries the next sample of every thread of
/// this process that owes delays, and returns the largest debt among them.
uint64_t hurry_threads_that_owe(Runtime& rt);
/// Whether every thread of this process has paid what it owes, or is blocked.
bool every_thread_settled(Runtime& rt);

/// Makes every thread (and every thread started later) sample each `period`
/// ns of its CPU time; returns the period now in force (in timer mode, always
/// the configured one). From the profiler thread, between experiments.
uint64_t set_sample_period(Runtime& rt, uint64_t period);

/// Consumes the rings that no signal drains (all of), and counts their
/// samples: every ring in a quiet run (Runtime::quiet_sampling: threads take
/// no signal per sample), else the rings that take kernel-time samples too
/// and the rings of threads that block the sample signal, which it also finds (a thread can block it
/// where the interposed calls cannot keep it deliverable: the raw
/// rt_sigprocmask, or a long handler of its own whose sa_mask holds it).
/// The profiler thread calls this often enough that no ring fills
/// (unsignalled_drain_interval_ns). Every 20 ms it also looks for threads
/// sampled with traps that block SIGTRAP for good, and gives them a ring
/// (watch_trap_delivery in sampler.cpp).
void drain_unsignalled_rings(Runtime& rt);

/// How long the profiler thread may sleep before drain_unsignalled_rings
/// must run: a thread's ring no signal drains fills in
/// sample_policy::quiet_drain_interval_ns, a CPU's kernel-time ring in
/// cpu_ring_drain_interval_ns, or during an experiment at the period of its
/// sampler (their delays are credited as they are drained). UINT64_MAX when
/// there is no such ring.
uint64_t unsignalled_drain_interval_ns(const Runtime& rt);

/// Whether threads sample their time in the kernel too (allowed by the
/// system; known once the first thread has started sampling).
bool kernel_sampling();

/// The switch rate above which a thread woken mostly from outside the
/// program leaves its trap event (sample_policy::switch_verdict):
/// Config::timer_switch_rate_outside where whole-CPU events can sample the
/// threads that move as finely as their traps did, else 0 (never).
uint64_t outside_switch_rate(const Runtime& rt);

/// Whether whole-CPU events sample the threads that left their trap events
/// (opened once one did, where the system allows them).
bool whole_cpu_sampling();

/// Whether threads sample with CPU-time timers: perf_event was refused, or
/// a small descriptor limit asked for them (use_timer_sampling).
bool timer_sampling();
/// Every thread samples with CPU-time timers, which take no descriptor (a
/// small descriptor limit with no room above it, runtime.cpp). At start-up,
/// before any thread samples.
void use_timer_sampling();
/// What CPU-time timers cost the answer, for the warnings that say they
/// are in use. They sample the time in the kernel too (a CPU-time clock
/// counts it; the signal comes as the call returns, where the walk starts
/// from the line that made it), but fire only on the scheduler's tick.
std::string timer_sampling_caveat();

/// The period of the samplers no signal drains (every sampler of a quiet
/// run; the kernel-time samplers take a multiple of it): the configured
/// one, or at the shortest periods the multiple of it whose rings need
/// draining only every 1 ms.
uint64_t unsignalled_period_ns(const Config& config);

/// The period of the kernel-time samplers (sample_policy::kernel_period_ns).
uint64_t kernel_period_ns(const Config& config);

/// Unmaps the ring buffers of threads that have exited, until `budget_ns`
/// has passed (one at least; the rest wait for the next call). The profiler
/// thread calls this: an munmap in a multithreaded process waits for TLB
/// shootdowns on every core, which made each exiting thread ~1 ms slower
/// when threads churned (20,000 short threads, 4 at a time: 33 us -> 950 us
/// per thread). It took 1-6 ms per ring here, time in which the profiler
/// drains no ring: hence the budget.
void unmap_retired_rings(uint64_t budget_ns = UINT64_MAX);
/// The lock of the rings waiting to be unmapped, for the runtime's fork
/// handlers (runtime.cpp), which hold every lock of the runtime across fork().
FutexLock& retired_rings_lock();
/// In a forked child: forgets the parent's rings waiting to be unmapped
/// (the kernel maps no perf ring into a child: their addresses may be the
/// child's own mappings soon). Call with retired_rings_lock() free.
void forget_retired_rings();

/// In a forked child: drops the descriptor and mapping inherited from the
/// parent without touching the event, which is still the parent's (an ioctl
/// on the shared descriptor would disable the parent's sampler).
void forget_inherited_sampler(ThreadState& thread);

}  // namespace coz
