#include "sampler.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "cpu_rings.h"
#include "sample_handler.h"
#include "descriptors.h"
#include "log.h"
#include "unwinder.h"
#include "real.h"
#include "sample_policy.h"
#include "futex_lock.h"
#include "signal_stack.h"
#include "no_destroy.h"

namespace coz {
// Shared with sample_handler.cpp (sample_handler.h says what they are).
std::atomic<uint64_t> g_kernel_weight{1};
std::atomic<bool> g_trap_kernel{false};

namespace {
// The rings of every process's time on each CPU (CpuRings::Settings::
// whole_cpu), which sample the threads that left their trap events
// (move_to_timer, ThreadState::sampled_by_cpus) as finely as the traps did.
// A CPU-time timer samples only at the scheduler's tick (4 ms): nghttpd's
// event loops on timers left 11% of the experiments without a sample in
// their line, and its top line got half the experiments. These events'
// timers run on whatever the CPU runs, with no cost at a thread's switch
// (the trap event's restart there is a hypervisor exit in this virtual
// machine); each of their samples copies the running thread's stack, other
// processes' too (skipped when drained). Possible where the system allows
// them (as root, or perf_event_paranoid <= 0); opened by the profiler
// thread once a thread has moved, so that a program whose threads all keep
// their events pays nothing for them. The moved threads keep their timers,
// whose signals then only pay the experiments' delays.
enum class WholeCpu { Unavailable, Possible, Open };
std::atomic<WholeCpu> g_whole_cpu{WholeCpu::Unavailable};
NoDestroy<CpuRings> g_whole_cpu_rings_holder;
CpuRings& g_whole_cpu_rings = g_whole_cpu_rings_holder.value;
std::atomic<int> g_whole_cpu_pid{0};  // the process whose samples are kept
std::atomic<uint64_t> g_whole_cpu_drain_ns{UINT64_MAX};
std::atomic<uint64_t> g_whole_cpu_experiment_drain_ns{UINT64_MAX};
bool g_forked_child = false;  // this process was forked from one with the runtime (start_process_sampling)
}  // namespace

bool whole_cpu_open() { return g_whole_cpu.load(std::memory_order_acquire) == WholeCpu::Open; }


// ---------------------------------------------------------------------------

namespace {
std::atomic<bool> g_perf_refused_warned{false};
std::atomic<bool> g_use_timers{false};  // perf_event refused once: every thread uses timers
std::atomic<bool> g_timer_failed_warned{false};

// Whether threads also sample the time they spend in the kernel (system
// calls; handle_perf_sample keeps those samples only): decided by the first
// thread's attempt.
enum class KernelSampling { Unknown, On, Refused };
std::atomic<KernelSampling> g_kernel_sampling{KernelSampling::Unknown};

// The process's per-CPU rings (cpu_rings.h), which take the samples of
// every thread's kernel time where they could be opened; else each thread
// opens a kernel-time sampler of its own (start_kernel_sampling).
//
// Why not every sample: the inherited events cannot be given a random
// phase per thread (a child starts with the parent's whole period), so each
// thread's last partial period would go unsampled, and a thread shorter
// than a period never sampled; nor can one thread be signalled per sample,
// or hurried. The kernel-time samplers had no random phase already, and are
// never signalled.
std::atomic<bool> g_cpu_rings_kernel{false};
// How often the profiler thread must drain them (open_cpu_rings).
std::atomic<uint64_t> g_cpu_rings_drain_ns{UINT64_MAX};
// How often during an experiment: each ring's sampling period (unsignalled_drain_interval_ns).
std::atomic<uint64_t> g_cpu_rings_experiment_drain_ns{UINT64_MAX};
NoDestroy<CpuRings> g_cpu_rings_holder;
CpuRings& g_cpu_rings = g_cpu_rings_holder.value;
// The profiler thread, whose own samples the rings take too and count nowhere.
std::atomic<int> g_profiler_tid{0};

/// The profiler thread's room for reading the per-CPU rings: a record that
/// wraps, the walk, the registered threads by tid, and a stand-in for the
/// threads that have exited since their samples were taken (those still
/// count, and credit their delays to no thread's ledger but the global one).
struct CpuRingsReader {
  // One reader at a time: the profiler thread, or the exiting thread's
  // shutdown(); the other leaves the records to it (as drain_ring does).
  std::atomic<bool> busy{false};
  alignas(8) unsigned char scratch[Config::stack_sample_bytes + 128];
  UnwindFrame walk[Config::max_unwind_frames];
  std::vector<std::pair<int, ThreadState*>> threads;
  ThreadState exited;
};
CpuRingsReader* g_cpu_rings_reader = nullptr;  // allocated once, never freed (a forked child reuses it)

bool cpu_rings_take_kernel_time() { return g_cpu_rings_kernel.load(std::memory_order_relaxed); }

/// Whether the per-CPU rings or the traps take every thread's kernel time.
/// Else each ring thread samples its own into its ring, where the system
/// allows it (start_kernel_sampling). Where the traps take it, a thread that
/// falls back to a ring (its trap event would not open, or it blocks
/// SIGTRAP for good) leaves its kernel time unsampled.
bool kernel_time_elsewhere() {
  return cpu_rings_take_kernel_time() || g_trap_kernel.load(std::memory_order_relaxed);
}

/// Whether the threads' rings hold kernel-time samples too.
bool kernel_time_in_thread_rings() {
  return g_kernel_sampling.load(std::memory_order_relaxed) == KernelSampling::On && !kernel_time_elsewhere();
}

// Whether threads sample with events that have no ring and raise SIGTRAP
// themselves (sigtrap=1) instead of mapping a ring and signalling through
// their descriptor (choose_trap_sampling). A thread's start and exit cost
// far less: thread create + join of an empty thread 36 us plain, 41 us with
// such an event, 106 us with an event and its ring (bench/floor/
// inherited_events.cpp, 2 cores), the ring's pages allocated, zeroed, and
// unmapped with a TLB shootdown on every core. The handler walks the live
// stack instead of a copy of it, as in timer mode. Samples of the time in
// the kernel still need a ring, and take the per-CPU ones.
std::atomic<bool> g_trap_sampling{false};
// Threads of a trap-sampling process whose trap event did not open: they
// sample with a ring, which in a quiet run no signal drains.
std::atomic<int> g_quiet_ring_fallbacks{0};

// Ring buffers of exited threads, waiting for the profiler thread to unmap them.
FutexLock g_retired_lock;
NoDestroy<std::vector<PerfRing::Mapping>> g_retired_list;  // the profiler thread unmaps them, also during exit
std::vector<PerfRing::Mapping>& g_retired = g_retired_list.value;

/// Each thread's CPU clock starts at zero, so a fixed first period would never
/// sample the last partial period of a short-lived thread: with thread churn,
/// every thread's final fraction of a period would go unseen. A random first
/// period (1..period ns) makes every instant equally likely to be sampled.
uint64_t first_period(const ThreadState& t, uint64_t period) {
  uint64_t phase = (static_cast<uint64_t>(t.tid) * 0x9E3779B97F4A7C15ull) ^ sys::monotonic_ns();
  return 1 + phase % period;
}

/// The shortest first period a sampler starts with. At the kernel's floor of
/// 10 us, the task-clock timer fires faster than this virtual machine takes
/// its interrupts: a thread made almost no progress for milliseconds (a
/// sample every ~30 us before its first signal arrived: fork_join threads
/// with 100+ samples in 3 ms, up to 3,150 lost per run), and an ioctl that
/// enabled such a sampler took up to 160 ms of kernel time (scale, under
/// strace and perf). A phase shorter than this is taken at this period, and the thread's
/// second period is shortened to make up for it (settle_period).
constexpr uint64_t min_first_period_ns = 50'000;

bool start_timer_sampling(ThreadState& t, const Config& config) {
  sigevent sev;
  std::memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = sample_signal;
  sev.sigev_value.sival_ptr = timer_signal_tag();  // tells its signals from the program's (is_runtime_signal)
  sev._sigev_un._tid = t.tid;
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t.timer) != 0) {
    log::warn_once(g_timer_failed_warned, "cannot create a CPU-time timer ({}): no samples will be taken",
                   std::strerror(errno));
    return false;
  }
  uint64_t period = config.sample_period_ns;
  uint64_t first = first_period(t, period);
  itimerspec spec{};
  spec.it_interval = {static_cast<time_t>(period / 1'000'000'000u), static_cast<long>(period % 1'000'000'000u)};
  spec.it_value = {static_cast<time_t>(first / 1'000'000'000u), static_cast<long>(first % 1'000'000'000u)};
  t.timer_mode = true;
  timer_settime(t.timer, 0, &spec, nullptr);
  return true;
}

/// Whether the kernel counts our rings against a locked-memory limit: for
/// a user without CAP_IPC_LOCK, perf_event_mlock_kb per CPU, then
/// RLIMIT_MEMLOCK (~9 MB here). Root, the usual case, has no limit.
bool memlock_limited() {
  static const bool limited = [] {
    rlimit limit{};
    return geteuid() != 0 && getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  }();
  return limited;
}

/// This process's rings (sample_policy.h).
sample_policy::Memory ring_memory() {
  return {static_cast<uint64_t>(sysconf(_SC_PAGESIZE)), memlock_limited()};
}

unsigned ring_data_pages(bool unsignalled) { return sample_policy::ring_data_pages(unsignalled, ring_memory()); }

std::atomic<bool> g_ring_shrunk_warned{false};

/// Maps `ring` with `pages` data pages, or with fewer, down to room for one
/// record, where the locked-memory limit refuses (memlock_limited).
bool map_ring(PerfRing& ring, int fd, unsigned pages) {
  const unsigned smallest = sample_policy::ring_pages_for(1, ring_memory().page_size);
  for (unsigned p = pages; p >= smallest; p /= 2) {
    if (ring.map(fd, p)) {
      if (p < pages) {
        uint64_t kib = static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
        log::warn_once(g_ring_shrunk_warned,
                       "the locked-memory limit leaves {} KiB of sample buffer for some threads ({} KiB asked): "
                       "samples may be lost; raise `ulimit -l` or /proc/sys/kernel/perf_event_mlock_kb",
                       p * kib, pages * kib);
      }
      return true;
    }
    if (errno != EPERM && errno != ENOMEM) return false;
  }
  return false;
}

/// Signal `sig` in thread `tid`'s masks in /proc: blocked (SigBlk), and
/// pending for the thread (SigPnd).
struct SignalInProc {
  bool blocked = false;
  bool pending = false;
};
SignalInProc signal_in_proc(int tid, int sig) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
  char text[4096];
  SignalInProc found;
  if (sys::read_small_file(path, text, sizeof text) <= 0) return found;
  auto has = [&](const char* name) {
    const char* field = std::strstr(text, name);
    return field && (std::strtoull(field + std::strlen(name), nullptr, 16) & (1ull << (sig - 1))) != 0;
  };
  found.blocked = has("\nSigBlk:");
  found.pending = has("\nSigPnd:");
  return found;
}

/// Whether thread `tid` blocks the sample signal now.
bool sample_signal_blocked(int tid) { return signal_in_proc(tid, sample_signal).blocked; }

std::atomic<int> g_signal_blocked_threads{0};
std::atomic<bool> g_signal_blocked_warned{false};

/// User-time samples waiting in a signalled thread's ring that say its
/// signals may not be handled: the handler drains the ring at every sample,
/// so more than one waits there only when the signal cannot be delivered,
/// or while the handler runs (at the shortest periods, it is sampled
/// itself). Where the ring also takes kernel-time samples, the profiler
/// thread drains it and counts them; else it counts the bytes waiting.
constexpr uint32_t undelivered_samples = 3;

/// The wrappers keep the sample signal deliverable whatever mask the program
/// sets through libc, but a thread can still block it with the raw
/// rt_sigprocmask, or run a long handler of its own whose sa_mask holds it.
/// Its samples then wait in a ring no handler drains (and are lost once it
/// is full), and its signals stay pending for the thread to read with a
/// signalfd or sigwait (issue #14: 300 SIGSTKFLT read by a program, a profile
/// without samples, no word). The ring that fills says so; /proc confirms
/// it; the sampler then raises no more signals for the thread, and the
/// profiler thread drains its rings until the thread unblocks the signal
/// (checked each time). Meanwhile its samples still count and credit
/// delays, but it pays what it owes only at its waits. Brief blocks are
/// left alone: the sample handler blocks the signal while it runs (at
/// --period 10us its ring filled meanwhile), and so does glibc around
/// pthread_create or fork; the thread is switched once it has run
/// blocked_cpu_for_switch_ns of CPU time with the signal blocked and no
/// handler run. CPU time, not wall time: a thread preempted as its handler
/// began (the signal blocked, the flag not yet set) looked blocked for 10
/// ms on a loaded machine.
void watch_signal_delivery(Runtime& rt, ThreadState& t, uint32_t user_samples_drained) {
  constexpr uint64_t blocked_cpu_for_switch_ns = 5'000'000;
  bool was_blocked = t.signal_blocked.load(std::memory_order_relaxed);
  bool blocked = was_blocked;
  if (was_blocked) {
    blocked = sample_signal_blocked(t.tid);
  } else if ((user_samples_drained >= undelivered_samples ||
              t.ring.unread_bytes() >= undelivered_samples * Config::stack_sample_bytes) &&
             !t.in_sample_handler.load(std::memory_order_acquire)) {
    uint32_t taken = t.signals_taken.load(std::memory_order_acquire);
    uint64_t cpu = sys::thread_cpu_ns(t.tid);
    bool still = t.blocked_seen_cpu_ns != 0 && t.blocked_seen_taken == taken;
    if (!sample_signal_blocked(t.tid) || t.in_sample_handler.load(std::memory_order_acquire)) {
      t.blocked_seen_cpu_ns = 0;
    } else if (!still) {
      t.blocked_seen_cpu_ns = cpu;
      t.blocked_seen_taken = taken;
    } else {
      blocked = cpu - t.blocked_seen_cpu_ns >= blocked_cpu_for_switch_ns;
    }
  } else {
    t.blocked_seen_cpu_ns = 0;
  }
  if (blocked == was_blocked) return;
  t.blocked_seen_cpu_ns = 0;
  if (blocked) {
    sample_handler::stop_signals(t.perf_fd);
    // Its first sample may not have set the regular period yet (settle_period).
    if (sample_handler::set_period(t.perf_fd, rt.sample_period_ns.load(std::memory_order_relaxed))) {
      t.regular_period.store(true, std::memory_order_release);
    }
    g_signal_blocked_threads.fetch_add(1, std::memory_order_relaxed);
    log::warn_once(g_signal_blocked_warned,
                   "thread {} blocks the sample signal (SIGSTKFLT) where the runtime cannot unblock it (a raw "
                   "rt_sigprocmask, or a long handler that masks it): its samples are collected without signals "
                   "while it does, and it pays the experiments' delays only at its waits",
                   t.tid);
  } else {
    sys::raw_syscall6(SYS_fcntl, t.perf_fd, F_SETFL, O_ASYNC, 0, 0, 0);
    g_signal_blocked_threads.fetch_sub(1, std::memory_order_relaxed);
  }
  t.signal_blocked.store(blocked, std::memory_order_relaxed);
}

/// An event on thread `tid` (0: the calling thread), or -errno.
long perf_event_open(perf_event_attr* attr, int tid = 0) {
  long fd = sys::raw_syscall6(SYS_perf_event_open, reinterpret_cast<long>(attr), tid, -1 /* any cpu */,
                              -1 /* no group */, PERF_FLAG_FD_CLOEXEC);
  return fd;
}
}  // namespace

bool install_sample_handler() {
  return install_sample_signal(sample_signal, &sample_handler::on_sample_signal);
}

bool install_trap_handler() { return install_sample_signal(trap_signal, &sample_handler::on_sample_signal); }

/// A second sampler for the thread's time in the kernel, where the system
/// allows it (perf_event_paranoid <= 1, or CAP_PERFMON); only its samples
/// inside system calls count (handle_perf_sample). They carry the user
/// registers saved at kernel entry and the user stack, so they are charged to
/// the user line that made the call. It never signals: a signal raised
/// inside a system call would cut short a wait that cannot restart
/// (epoll_wait, poll, a partial pipe write), so the profiler thread and the
/// thread's own sample handler drain it. It keeps its period (the
/// configured one, or a multiple at the shortest: unsignalled_period_ns)
/// during experiments: nothing needs its samples sooner, and at the user
/// samplers' faster period it cost the experiments more than the baselines
/// (two_threads' no-effect line at 50%: -2.5% against -0.7% without it,
/// interleaved runs).
///
/// The thread has one ring for both samplers: it is mapped on this one, and
/// the user-time sampler (`user_fd`, not mapped yet) writes there too
/// (PERF_EVENT_IOC_SET_OUTPUT, allowed between two events of one thread).
/// A ring each cost every new thread two mappings, each allocated, zeroed,
/// and unmapped at its exit with a TLB shootdown on every core: thread
/// create + join of an empty thread went from ~28 us to ~175 us. The
/// user-time sampler still signals alone: only an event's own overflow
/// raises its descriptor's signal, and this one's descriptor asks for none.
/// Returns its descriptor (disabled; start_sampling enables it after the
/// other, then closes it: its mapping keeps it alive, so the thread costs
/// the process one descriptor, not two), or -1 with the ring left unmapped.
int start_kernel_sampling(ThreadState& t, perf_event_attr attr, uint64_t period, int user_fd) {
  if (g_kernel_sampling.load(std::memory_order_relaxed) == KernelSampling::Refused) return -1;
  attr.exclude_user = 1;
  attr.exclude_kernel = 0;
  attr.disabled = 1;  // enabled once the user-time sampler is (start_sampling)
  attr.wakeup_events = 0;
  attr.sample_period = period;  // no random phase: kernel time is sampled from the thread's start
  long fd = perf_event_open(&attr);
  if (fd < 0) {
    g_kernel_sampling.store(KernelSampling::Refused, std::memory_order_relaxed);
    return -1;
  }
  const int kernel_fd = static_cast<int>(fd);
  uint64_t id = 0;
  const bool shared = map_ring(t.ring, kernel_fd, ring_data_pages(true)) &&
                      ioctl(user_fd, PERF_EVENT_IOC_SET_OUTPUT, kernel_fd) == 0 &&
                      ioctl(kernel_fd, PERF_EVENT_IOC_ID, &id) == 0;
  if (!shared) {
    t.ring.unmap();
    sys::raw_syscall6(SYS_close, kernel_fd);
    g_kernel_sampling.store(KernelSampling::Refused, std::memory_order_relaxed);
    return -1;
  }
  t.kernel_event_id = id;
  g_kernel_sampling.store(KernelSampling::On, std::memory_order_relaxed);
  return kernel_fd;
}

/// The event of a sampler without a ring (g_trap_sampling): the one of
/// `ring_sampler_attr`, made to raise SIGTRAP for each sample itself, in
/// the kernel too if `kernel` (g_trap_kernel).
perf_event_attr trap_sampler_attr(perf_event_attr attr, bool kernel) {
  attr.exclude_kernel = !kernel;
  attr.sample_type = 0;  // nothing is written: it has no ring
  attr.sample_regs_user = 0;
  attr.sample_stack_user = 0;
  attr.wakeup_events = 0;
  attr.sigtrap = 1;
  attr.remove_on_exec = 1;  // the kernel asks it of sigtrap events; a program exec'd starts its own
  attr.sig_data = trap_signal_tag();  // tells its traps from the program's (is_runtime_signal)
  return attr;
}

/// The user-time sampler's event, disabled, with its first period `first`.
perf_event_attr ring_sampler_attr(uint64_t first, bool quiet) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = first;
  // The user registers and a slice of the user stack: the sample's walk
  // (unwinder.h) finds its callers without frame pointers.
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  attr.sample_regs_user = (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP);
  attr.sample_stack_user = Config::stack_sample_bytes;
  attr.disabled = 1;
  attr.exclude_kernel = 1;  // also keeps samples (and signals) to user mode, so no syscall sees EINTR
  attr.exclude_hv = 1;
  // A signal on every sample (O_ASYNC signals each one, whatever the wakeup
  // settings): delays are paid within one period. In a quiet run, only the
  // first sample signals (settle_period), and the ring wakes no one until
  // it is half full, which the profiler thread's drains never let happen.
  attr.wakeup_events = quiet ? 0 : 1;
  return attr;
}

/// Maps the ring of the user-time sampler `t.perf_fd` (shared with a
/// kernel-time sampler where one is needed) and routes its signals to the
/// thread. False, with the thread's sampler stopped, when it cannot.
bool start_ring_sampling(ThreadState& t, const Config& config, const perf_event_attr& attr, bool quiet) {
  const uint64_t kernel_period = kernel_period_ns(config);
  // A sampler of its own for its kernel time (start_kernel_sampling tries,
  // where the system allows).
  const int kernel_fd = kernel_time_elsewhere() ? -1 : start_kernel_sampling(t, attr, kernel_period, t.perf_fd);
  if (kernel_fd < 0 && !map_ring(t.ring, t.perf_fd, ring_data_pages(quiet))) {
    log::warn_once(g_perf_refused_warned,
                   "cannot map a perf_event ring buffer ({}): threads started from now on may not be sampled{}",
                   std::strerror(errno),
                   errno == EPERM ? " (the locked-memory limit is used up: `ulimit -l`, "
                                    "/proc/sys/kernel/perf_event_mlock_kb)"
                                  : "");
    stop_sampling(t);
    return false;
  }
  f_owner_ex owner{F_OWNER_TID, t.tid};
  if (fcntl(t.perf_fd, F_SETFL, O_ASYNC) != 0 || fcntl(t.perf_fd, F_SETSIG, sample_signal) != 0 ||
      fcntl(t.perf_fd, F_SETOWN_EX, &owner) != 0) {
    log::warn_once(g_perf_refused_warned, "cannot route perf_event signals to threads: {}", std::strerror(errno));
    if (kernel_fd >= 0) sys::raw_syscall6(SYS_close, kernel_fd);
    stop_sampling(t);
    return false;
  }
  ioctl(t.perf_fd, PERF_EVENT_IOC_ENABLE, 0);
  // Then the kernel-time sampler: enabling this one while the other was
  // already on took up to 107 ms of kernel time, 2 runs of scale in 22 (the
  // ioctl spun in event_function_call; kernel 6.18 in this virtual machine);
  // never in 12 runs in this order.
  if (kernel_fd >= 0) {
    ioctl(kernel_fd, PERF_EVENT_IOC_ENABLE, 0);
    sys::raw_syscall6(SYS_close, kernel_fd);
  }
  return true;
}

bool start_sampling(ThreadState& t, const Config& config) {
  if (g_use_timers.load(std::memory_order_relaxed)) return start_timer_sampling(t, config);
  Runtime* rt = runtime();
  const bool quiet = rt && rt->quiet_sampling;
  uint64_t period = rt ? rt->sample_period_ns.load(std::memory_order_relaxed) : 0;
  if (period == 0) period = config.sample_period_ns;
  const uint64_t phase = first_period(t, period);
  perf_event_attr attr = ring_sampler_attr(std::max(phase, min_first_period_ns), quiet);

  long fd = -1;
  if (g_trap_sampling.load(std::memory_order_relaxed)) {
    perf_event_attr trap = trap_sampler_attr(attr, g_trap_kernel.load(std::memory_order_relaxed));
    // Enabled at once: with no ring there is nothing to set up first, and
    // an ioctl less per thread. A trap before the thread's state is set
    // (its first period is 50 us of CPU time at least) is the runtime's
    // own work, which counts nowhere, or finds trap_mode off.
    trap.disabled = 0;
    fd = perf_event_open(&trap);
    t.trap_mode.store(fd >= 0, std::memory_order_release);  // else a ring, as if there were no traps
    if (fd < 0 && quiet) g_quiet_ring_fallbacks.fetch_add(1, std::memory_order_relaxed);
  }
  if (fd < 0) fd = perf_event_open(&attr);
  if (fd < 0) {
    // Refused for this process (paranoid level, seccomp, no PMU): fall back for every thread.
    log::warn_once(g_perf_refused_warned, "perf_event_open refused ({}): sampling with CPU-time timers instead, {}",
                   std::strerror(static_cast<int>(-fd)), timer_sampling_caveat());
    g_use_timers.store(true, std::memory_order_relaxed);
    return start_timer_sampling(t, config);
  }
  // Out of the program's reach: it may close every descriptor it did not
  // open and reuse the numbers (descriptors.h), and this one gets a period
  // set, flags changed and a close at the thread's exit.
  t.perf_fd = descriptors::adopt(static_cast<int>(fd));
  t.regular_period.store(false, std::memory_order_relaxed);
  t.phase_delay_ns = attr.sample_period - phase;
  // At a shortened period, one sample in `rate` is counted (counted_in_profile):
  // which one must be random too, or every thread would lose its last
  // rate - 1 samples on average (-10% for threads of 2-3 ms).
  t.short_period_samples = static_cast<uint32_t>(sys::monotonic_ns() >> 10);
  if (!t.trap_mode.load(std::memory_order_relaxed)) return start_ring_sampling(t, config, attr, quiet);
  return true;
}

bool pause_sampling_for_exec(ThreadState& t) {
  if (!t.trap_mode.load(std::memory_order_acquire) || !g_trap_kernel.load(std::memory_order_relaxed)) return false;
  // The child of a vfork() runs on its parent's thread state (same memory,
  // same thread pointer), and its descriptor names the parent's event: a
  // disable there would stop the parent's sampler for good. Its own task
  // has no event to stop.
  if (sys::gettid() != t.tid) return false;
  // A trap raised during this call arrives as it returns, to the handler.
  if (sys::raw_syscall6(SYS_ioctl, t.perf_fd, PERF_EVENT_IOC_DISABLE, 0) == 0) return true;
  // Refused (a seccomp filter the runtime did not see installed: one
  // inherited, or one that answers ioctl with an error): the event goes.
  stop_sampling(t);
  return true;
}

void resume_sampling_after_exec(ThreadState& t) {
  if (t.perf_fd >= 0) {
    sys::raw_syscall6(SYS_ioctl, t.perf_fd, PERF_EVENT_IOC_ENABLE, 0);
  } else if (Runtime* rt = runtime()) {
    start_sampling(t, rt->config);  // its event went before the exec
  }
}

void stop_sampling(ThreadState& t) {
  if (t.timer_mode) {
    t.sampled_by_cpus.store(false, std::memory_order_relaxed);
    timer_delete(t.timer);
    t.timer_mode = false;
    return;
  }
  if (t.perf_fd < 0) return;
  if (t.trap_mode.exchange(false, std::memory_order_acq_rel)) {
    // Nothing to drain or unmap, and no need to disable it first: the close
    // ends it, and a trap still on its way finds trap_mode off.
    descriptors::close_own(t.perf_fd);
    t.perf_fd = -1;
    return;
  }
  if (t.parked_trap_fd >= 0) descriptors::close_own(std::exchange(t.parked_trap_fd, -1));
  if (t.signal_blocked.exchange(false, std::memory_order_relaxed)) {
    g_signal_blocked_threads.fetch_sub(1, std::memory_order_relaxed);
  }
  ioctl(t.perf_fd, PERF_EVENT_IOC_DISABLE, 0);
  // Its last samples, since the last drain. The thread has left the thread
  // list, so the profiler thread cannot be draining it.
  if (Runtime* rt = runtime()) sample_handler::drain_ring(*rt, t);
  if (PerfRing::Mapping m = t.ring.release(); m.address) {
    FutexGuard guard(g_retired_lock);
    g_retired.push_back(m);
  }
  t.kernel_event_id = 0;
  descriptors::close_own(t.perf_fd);  // an event lives on until its mapping is unmapped
  t.perf_fd = -1;
}

void move_to_timer(ThreadState& t) {
  t.timer_wanted.store(false, std::memory_order_relaxed);
  Runtime* rt = runtime();
  if (!rt || t.timer_mode || !t.trap_mode.load(std::memory_order_acquire)) return;
  stop_sampling(t);  // a trap event: closed, and a trap still on its way finds trap_mode off
  if (!start_timer_sampling(t, rt->config)) return;
  // After timer_mode is set: the whole-CPU rings' reader relies on it (record_sample).
  if (t.whole_cpu_wanted.load(std::memory_order_relaxed) &&
      g_whole_cpu.load(std::memory_order_relaxed) != WholeCpu::Unavailable) {
    t.sampled_by_cpus.store(true, std::memory_order_release);
    rt->stats.threads_on_whole_cpu.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  rt->stats.threads_on_timers.fetch_add(1, std::memory_order_relaxed);
}

void suspend_sampling(ThreadState& t) {
  if (t.timer_mode) {
    itimerspec off{};
    timer_settime(t.timer, 0, &off, nullptr);
    return;
  }
  if (t.perf_fd >= 0) ioctl(t.perf_fd, PERF_EVENT_IOC_DISABLE, 0);
  // The kernel-time sampler's descriptor was closed once it was mapped
  // (descriptors.h), so it cannot be disabled: it runs on, but it never
  // signals, and samples only the shutdown's system calls, at a multiple of
  // the period.
}

void hurry_next_sample(ThreadState& t) {
  if (t.timer_mode || t.perf_fd < 0) return;
  // Not shorter: at 20 us, a thread's own sampling outran its handler, 15
  // samples or more were lost at once (~1 run of scale in 2).
  constexpr uint64_t hurried_period_ns = 100'000;
  // The period first, then the flag: the handler resets the period only
  // after it sees the flag cleared, so it can never leave the short period
  // in place with the flag saying regular.
  if (sample_handler::set_period(t.perf_fd, hurried_period_ns)) t.regular_period.store(false, std::memory_order_release);
}

uint64_t hurry_threads_that_owe(Runtime& rt) {
  uint64_t largest_debt = 0;
  for_each_thread([&](ThreadState& t) {
    if (rt.ledger.settled(t.ledger)) return;
    hurry_next_sample(t);
    largest_debt = std::max(largest_debt, rt.ledger.outstanding(t.ledger));
  });
  return largest_debt;
}

bool every_thread_settled(Runtime& rt) {
  bool settled = true;
  for_each_thread([&](ThreadState& t) { settled = settled && rt.ledger.settled(t.ledger); });
  return settled;
}

uint64_t set_sample_period(Runtime& rt, uint64_t period) {
  // Timer-mode threads keep the configured period (their timers would need rearming).
  if (g_use_timers.load(std::memory_order_relaxed)) period = rt.config.sample_period_ns;
  if (rt.sample_period_ns.exchange(period, std::memory_order_relaxed) == period) return period;
  for_each_thread([&](ThreadState& t) {
    if (!t.timer_mode && t.perf_fd >= 0) sample_handler::set_period(t.perf_fd, period);
  });
  return period;
}

namespace {
/// Consumes per-CPU rings: each sample is its thread's, found by tid among
/// the registered threads (under the registry lock, so none can leave
/// meanwhile), and walked in the reader's room, not the thread's (whose own
/// handler may be walking its own sample). `whole_cpu`: the rings of every
/// process (g_whole_cpu_rings), whose samples count only for this
/// process's threads that they sample (sampled_by_cpus); else the kernel
/// time's inherited ones (g_cpu_rings).
void drain_cpu_rings(Runtime& rt, CpuRings& rings, bool whole_cpu) {
  CpuRingsReader& reader = *g_cpu_rings_reader;
  // Most drains find nothing (kernel time is a small share of most
  // programs): then neither the registry's lock, which every leaving
  // thread takes too, nor the table of threads.
  if (!rings.unread()) return;
  if (reader.busy.exchange(true, std::memory_order_acquire)) return;
  const int profiler_tid = g_profiler_tid.load(std::memory_order_relaxed);
  LockedThreadList threads;
  reader.threads.clear();
  for (ThreadState* t : threads) reader.threads.emplace_back(t->tid, t);
  std::sort(reader.threads.begin(), reader.threads.end());
  auto thread_of = [&](int tid) -> ThreadState& {
    auto found = std::lower_bound(reader.threads.begin(), reader.threads.end(), std::pair<int, ThreadState*>{tid, nullptr});
    return found != reader.threads.end() && found->first == tid ? *found->second : reader.exited;
  };
  const int pid = g_whole_cpu_pid.load(std::memory_order_relaxed);
  rings.drain(
      [&](const perf_event_header& h) {
        if (h.type == PERF_RECORD_SAMPLE) {
          const int tid = sample_record_tid(h);
          if (tid == profiler_tid) return;
          if (!whole_cpu) {
            sample_handler::handle_perf_sample(rt, thread_of(tid), h, SampleSource::KernelTime, true, reader.walk);
            return;
          }
          if (sample_record_pid(h) != pid) return;
          // A thread that exited since, or never left its own event: not this sampler's.
          ThreadState& t = thread_of(tid);
          if (&t == &reader.exited || !t.sampled_by_cpus.load(std::memory_order_acquire)) return;
          const bool in_kernel = (h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
          sample_handler::handle_perf_sample(rt, t, h, in_kernel ? SampleSource::PeriodInSyscall : SampleSource::UserTime,
                                          true, reader.walk);
        } else if (h.type == PERF_RECORD_LOST && !whole_cpu) {
          // (A whole CPU's lost records were mostly other processes': not counted.)
          const auto* body = reinterpret_cast<const uint64_t*>(&h + 1);  // u64 id; u64 lost
          rt.stats.lost.fetch_add(body[1], std::memory_order_relaxed);
          rt.stats.lost_kernel.fetch_add(body[1], std::memory_order_relaxed);
        }
      },
      reader.scratch, sizeof reader.scratch);
  reader.busy.store(false, std::memory_order_release);
}

/// Opens the whole-CPU rings (g_whole_cpu), from the profiler thread.
void open_whole_cpu_rings(Runtime& rt) {
  if (!g_cpu_rings_reader) g_cpu_rings_reader = new CpuRingsReader;
  CpuRings::Settings settings;
  settings.whole_cpu = true;
  settings.user = true;
  settings.kernel = true;  // the time in system calls, as the traps take it (g_trap_kernel)
  settings.stack_bytes = Config::stack_sample_bytes;
  // The configured period, not an experiment's shorter one (the descriptors
  // are closed once mapped): each sample credits the delays of as many
  // samples as the traps take meanwhile, as a timer's does (record_sample).
  settings.period_ns = rt.config.sample_period_ns;
  const auto cpus = static_cast<unsigned>(std::max(1L, sysconf(_SC_NPROCESSORS_CONF)));
  settings.data_pages = sample_policy::cpu_ring_data_pages(ring_memory(), cpus);
  g_whole_cpu_pid.store(sys::getpid(), std::memory_order_relaxed);
  if (!g_whole_cpu_rings.open(settings)) {
    log::debug("no whole-CPU sampling ({}): threads moved to timers are sampled on the tick", std::strerror(errno));
    g_whole_cpu.store(WholeCpu::Unavailable, std::memory_order_relaxed);
    return;
  }
  g_whole_cpu_rings.close_descriptors();  // each mapping keeps its event (cpu_rings.h)
  g_whole_cpu_drain_ns.store(sample_policy::cpu_ring_drain_interval_ns(settings.period_ns, ring_memory(), cpus),
                             std::memory_order_relaxed);
  g_whole_cpu_experiment_drain_ns.store(
      std::min(sample_policy::whole_cpu_experiment_drain_ns, g_whole_cpu_drain_ns.load(std::memory_order_relaxed)),
      std::memory_order_relaxed);
  g_whole_cpu.store(WholeCpu::Open, std::memory_order_release);
  log::debug("whole-CPU sampling: {} ring(s) for the threads moved to timers", cpus);
}
}  // namespace

namespace {
/// Whether the running kernel is `major`.`minor` or later.
bool kernel_at_least(int major, int minor) {
  utsname name{};
  if (uname(&name) != 0) return false;
  int running_major = 0, running_minor = 0;
  if (std::sscanf(name.release, "%d.%d", &running_major, &running_minor) != 2) return false;
  return running_major > major || (running_major == major && running_minor >= minor);
}

/// Opens and closes an event of a trap sampler's kind (trap_sampler_attr):
/// 0 if it opens, else -errno.
long probe_trap_event(bool kernel) {
  perf_event_attr probe = trap_sampler_attr(ring_sampler_attr(1'000'000'000, false), kernel);
  long fd = perf_event_open(&probe);
  if (fd >= 0) sys::raw_syscall6(SYS_close, fd);
  return fd < 0 ? fd : 0;
}

/// Whether threads may sample with traps at all: where the kernel sends a
/// thread's trap when it blocks SIGTRAP later instead of forcing it (Linux
/// 6.0; on 5.13-5.x a sample taken while the handler ran would end the
/// process), and no debugger is attached (it would stop at every trap).
bool traps_allowed(const Config& config) {
  return config.sample_traps && !g_use_timers.load(std::memory_order_relaxed) && kernel_at_least(6, 0) && !traced();
}

/// Whether the traps can sample the time in the kernel too (g_trap_kernel):
/// one event per thread then takes all its time, and no per-CPU ring is
/// needed. The kernel must raise a trap taken in the kernel as the thread
/// returns to user mode (a task_work, since Linux 6.1), never inside the
/// system call: a signal pending there would cut short a wait that cannot
/// restart (epoll_wait, poll, a partial pipe write). Before 6.1 it was
/// raised from an irq_work at once. And the system must allow kernel time
/// to be sampled (perf_event_paranoid <= 1, or CAP_PERFMON).
bool traps_can_take_kernel_time() { return kernel_at_least(6, 1) && probe_trap_event(/*kernel=*/true) == 0; }

/// Decides whether threads sample with traps (g_trap_sampling), on the
/// first thread, before any other starts, where they are allowed
/// (traps_allowed): where the time in the kernel needs no ring per thread
/// (the traps take it, the per-CPU rings do, or it cannot be sampled) and
/// an event of the kind opens. Then the runtime's handler takes SIGTRAP too.
void choose_trap_sampling(bool trap_kernel, bool cpu_rings) {
  const bool per_thread_kernel_rings =
      !trap_kernel && !cpu_rings && g_kernel_sampling.load(std::memory_order_relaxed) != KernelSampling::Refused;
  if (per_thread_kernel_rings) return;
  if (!trap_kernel) {  // else its probe opened already
    if (long error = probe_trap_event(/*kernel=*/false); error < 0) {
      log::debug("no samplers without rings ({}): a ring per thread", std::strerror(static_cast<int>(-error)));
      return;
    }
  }
  if (!install_sample_signal(trap_signal, &sample_handler::on_sample_signal)) return;
  g_trap_kernel.store(trap_kernel, std::memory_order_relaxed);
  g_trap_sampling.store(true, std::memory_order_relaxed);
  if (trap_kernel) g_kernel_sampling.store(KernelSampling::On, std::memory_order_relaxed);
  static std::atomic<bool> said{false};  // once, not again in each forked child
  if (!said.exchange(true)) {
    log::info("samplers: each thread's perf_event raises SIGTRAP per sample, with no ring{}",
              trap_kernel ? ", in user mode and in the kernel" : "");
  }
}

/// Opens the per-CPU rings for the time in the kernel (start_process_sampling).
bool open_cpu_rings(Runtime& rt) {
  const Config& config = rt.config;
  if (!config.cpu_rings || g_use_timers.load(std::memory_order_relaxed)) return false;
  if (g_kernel_sampling.load(std::memory_order_relaxed) == KernelSampling::Refused) return false;
  if (!g_cpu_rings_reader) g_cpu_rings_reader = new CpuRingsReader;
  CpuRings::Settings settings;
  settings.stack_bytes = Config::stack_sample_bytes;
  // Each CPU's ring, like a thread's, takes at most a sample per period.
  const auto cpus = static_cast<unsigned>(std::max(1L, sysconf(_SC_NPROCESSORS_CONF)));
  settings.data_pages = sample_policy::cpu_ring_data_pages(ring_memory(), cpus);
  settings.user = false;
  settings.kernel = true;
  settings.period_ns = kernel_period_ns(config);  // start_kernel_sampling's, for the same reasons
  // The descriptors live only until the rings are mapped, in a process
  // where no other thread runs (at start-up, or in a forked child): no need
  // to take them out of the program's numbers.
  if (!g_cpu_rings.open(settings)) {
    // Kernel time is not ours to sample here (EACCES: no thread's sampler
    // could either), or an older kernel (before 5.13) knows no
    // inherit_thread (EINVAL): each thread tries its own.
    log::debug("no per-CPU kernel-time sampling ({}): a sampler per thread", std::strerror(errno));
    if (errno == EACCES || errno == EPERM) g_kernel_sampling.store(KernelSampling::Refused, std::memory_order_relaxed);
    return false;
  }
  g_cpu_rings.close_descriptors();
  g_kernel_sampling.store(KernelSampling::On, std::memory_order_relaxed);
  g_cpu_rings_kernel.store(true, std::memory_order_relaxed);
  g_cpu_rings_drain_ns.store(sample_policy::cpu_ring_drain_interval_ns(settings.period_ns, ring_memory(), cpus),
                             std::memory_order_relaxed);
  g_cpu_rings_experiment_drain_ns.store(sample_policy::cpu_ring_experiment_drain_interval_ns(settings.period_ns),
                                        std::memory_order_relaxed);
  return true;
}
}  // namespace

bool start_process_sampling(Runtime& rt) {
  // Once: the per-CPU samplers' period and each thread's kernel-time one.
  g_kernel_weight.store(kernel_period_ns(rt.config) / rt.config.sample_period_ns, std::memory_order_relaxed);
  // The traps take the kernel's time too where they can; else the per-CPU
  // rings do, where the system allows it to be sampled.
  g_trap_sampling.store(false, std::memory_order_relaxed);
  g_trap_kernel.store(false, std::memory_order_relaxed);
  const bool traps = traps_allowed(rt.config);
  const bool trap_kernel = traps && traps_can_take_kernel_time();
  const bool cpu_rings = !trap_kernel && open_cpu_rings(rt);
  if (traps) choose_trap_sampling(trap_kernel, cpu_rings);
  // Threads leave their trap events only where the traps take the kernel's
  // time (check_switch_rate): then the whole-CPU rings may sample them, in
  // the run's first process only. Each process's rings take every
  // process's samples: a server's forked workers, each with rings of its
  // own, would multiply the timers and stack copies on every CPU. Its
  // other processes keep their traps (forget_inherited_process_sampling).
  // (COZ_RUN_PID: 0 where libcoz.so was preloaded without `coz run`; then
  // any process that was not forked.)
  const bool first_process = rt.config.run_pid == 0 ? !g_forked_child : rt.config.run_pid == sys::getpid();
  const bool whole_cpu = trap_kernel && g_trap_sampling.load(std::memory_order_relaxed) &&
                         rt.config.whole_cpu_sampling && first_process && whole_cpu_events_allowed();
  g_whole_cpu.store(whole_cpu ? WholeCpu::Possible : WholeCpu::Unavailable, std::memory_order_relaxed);
  if (trap_kernel && !g_trap_sampling.load(std::memory_order_relaxed)) {
    // The probe opened, the handler could not be installed: rings after all.
    return open_cpu_rings(rt);
  }
  return cpu_rings;
}

/// Whether a debugger traces the process: it would stop the program at
/// each of the runtime's SIGTRAPs.
bool traced() {
  char text[4096];
  if (sys::read_small_file("/proc/self/status", text, sizeof text) <= 0) return false;
  const char* field = std::strstr(text, "\nTracerPid:");
  return field && std::strtol(field + std::strlen("\nTracerPid:"), nullptr, 10) != 0;
}

void note_profiler_thread(int tid) { g_profiler_tid.store(tid, std::memory_order_relaxed); }
int profiler_thread_tid() { return g_profiler_tid.load(std::memory_order_relaxed); }

void forget_inherited_process_sampling() {
  g_cpu_rings.forget();  // it has no descriptor: see start_process_sampling
  g_cpu_rings_kernel.store(false, std::memory_order_relaxed);
  // The parent's whole-CPU rings are not mapped here, and a child opens none
  // (start_process_sampling): its threads keep their traps.
  if (g_whole_cpu.load(std::memory_order_relaxed) == WholeCpu::Open) g_whole_cpu_rings.forget();
  g_whole_cpu.store(WholeCpu::Unavailable, std::memory_order_relaxed);
  g_forked_child = true;
  // The forking thread was the only one left: a reader that was draining in
  // the parent (the profiler thread) does not exist here.
  if (g_cpu_rings_reader) g_cpu_rings_reader->busy.store(false, std::memory_order_relaxed);
}

namespace {
/// Gives thread `t`, whose traps wait blocked, the sampler of a thread that
/// blocks the sample signal (watch_signal_delivery): a ring the profiler
/// thread drains, whose signal (SIGSTKFLT, O_ASYNC off for now) comes back
/// when the thread unblocks it. Its trap event is disabled and parked. From
/// the profiler thread, with `t` registered (for_each_thread).
bool switch_to_ring(Runtime& rt, ThreadState& t) {
  perf_event_attr attr = ring_sampler_attr(rt.sample_period_ns.load(std::memory_order_relaxed), /*quiet=*/true);
  attr.disabled = 0;
  long fd = perf_event_open(&attr, t.tid);
  if (fd < 0) return false;
  f_owner_ex owner{F_OWNER_TID, t.tid};
  if (!map_ring(t.ring, static_cast<int>(fd), ring_data_pages(true)) ||
      sys::raw_syscall6(SYS_fcntl, fd, F_SETSIG, sample_signal) != 0 ||
      sys::raw_syscall6(SYS_fcntl, fd, F_SETOWN_EX, reinterpret_cast<long>(&owner)) != 0) {
    t.ring.unmap();
    sys::raw_syscall6(SYS_close, fd);
    return false;
  }
  ioctl(t.perf_fd, PERF_EVENT_IOC_DISABLE, 0);
  t.parked_trap_fd = t.perf_fd;
  t.regular_period.store(true, std::memory_order_relaxed);
  t.signal_blocked.store(true, std::memory_order_relaxed);
  g_signal_blocked_threads.fetch_add(1, std::memory_order_relaxed);
  t.perf_fd = descriptors::adopt(static_cast<int>(fd));
  t.trap_mode.store(false, std::memory_order_release);
  return true;
}

/// A thread in trap mode can block SIGTRAP where the wrappers cannot keep
/// it deliverable (the raw rt_sigprocmask, or a long handler of its own
/// whose sa_mask holds it): its traps then wait, coalesced into one, and
/// its samples are lost. The profiler thread watches for it, as
/// watch_signal_delivery does for the rings: a thread that has run
/// blocked_cpu_for_switch_ns of CPU time with no trap handled, and SIGTRAP
/// blocked and pending in /proc, is given a ring (switch_to_ring). Cheap: no system call
/// for a thread that took a trap since the last look, or waits in a call the
/// runtime interposes (a pool of 1,000 idle threads would otherwise cost
/// 50,000 CPU-clock reads a second).
void watch_trap_delivery(Runtime& rt, ThreadState& t) {
  constexpr uint64_t blocked_cpu_for_switch_ns = 5'000'000;
  if (t.in_sample_handler.load(std::memory_order_acquire)) return;
  if (t.ledger.blocked.load(std::memory_order_relaxed)) return;
  const uint32_t taken = t.signals_taken.load(std::memory_order_acquire);
  if (taken != t.blocked_seen_taken) {
    t.blocked_seen_taken = taken;
    t.blocked_seen_cpu_ns = 0;
    return;
  }
  const uint64_t cpu = sys::thread_cpu_ns(t.tid);
  if (t.blocked_seen_cpu_ns == 0 || cpu - t.blocked_seen_cpu_ns < blocked_cpu_for_switch_ns) {
    if (t.blocked_seen_cpu_ns == 0) t.blocked_seen_cpu_ns = cpu;
    return;
  }
  t.blocked_seen_cpu_ns = cpu;  // look again later
  // Blocked is not enough: a trap must wait too. Time in the kernel takes
  // no trap unless the traps sample it (g_trap_kernel), and the main thread
  // of a program that starts threads back to back spends most of its time
  // in clone, inside pthread_create, which blocks every signal meanwhile:
  // taken for a thread that blocks SIGTRAP, it was given a ring with a false
  // warning, as were threads that block everything and run in the kernel.
  // A trap raised while SIGTRAP is blocked waits (since Linux 6.0) until it
  // is unblocked; one that waits through pthread_create is handled as it
  // returns, which counts as a trap taken.
  const SignalInProc trap = signal_in_proc(t.tid, trap_signal);
  if (!trap.blocked || !trap.pending) return;
  if (!switch_to_ring(rt, t)) return;
  t.blocked_seen_cpu_ns = 0;
  log::warn_once(g_signal_blocked_warned,
                 "thread {} blocks the sample signal (SIGTRAP) where the runtime cannot unblock it (a raw "
                 "rt_sigprocmask, or a long handler that masks it): its samples are collected without signals "
                 "while it does, and it pays the experiments' delays only at its waits",
                 t.tid);
}

/// How often the profiler thread looks at the trap threads (watch_trap_delivery).
constexpr uint64_t trap_watch_interval_ns = 20'000'000;
uint64_t g_last_trap_watch_ns = 0;  // the profiler thread's
}  // namespace

void drain_unsignalled_rings(Runtime& rt) {
  if (cpu_rings_take_kernel_time()) drain_cpu_rings(rt, g_cpu_rings, false);
  const WholeCpu whole_cpu = g_whole_cpu.load(std::memory_order_relaxed);
  if (whole_cpu == WholeCpu::Possible && rt.stats.threads_on_whole_cpu.load(std::memory_order_relaxed) > 0 &&
      sys::gettid() == g_profiler_tid.load(std::memory_order_relaxed)) {
    open_whole_cpu_rings(rt);
  }
  if (whole_cpu == WholeCpu::Open) drain_cpu_rings(rt, g_whole_cpu_rings, true);
  const uint64_t now = g_trap_sampling.load(std::memory_order_relaxed) ? sys::monotonic_ns() : 0;
  const bool watch_traps = now - g_last_trap_watch_ns >= trap_watch_interval_ns;
  if (watch_traps) g_last_trap_watch_ns = now;
  for_each_thread([&](ThreadState& t) {
    if (t.timer_mode || t.perf_fd < 0) return;
    if (t.trap_mode.load(std::memory_order_relaxed)) {  // no ring
      if (watch_traps) watch_trap_delivery(rt, t);
      return;
    }
    if (rt.quiet_sampling) {
      sample_handler::drain_ring(rt, t);
      return;
    }
    // A signalled thread's ring holds its kernel-time samples too: drained
    // here, with any of its user-time samples whose signal has not been
    // handled yet (watch_signal_delivery counts those).
    uint32_t user_samples = 0;
    const bool kernel_time_here = kernel_time_in_thread_rings();
    if (t.signal_blocked.load(std::memory_order_relaxed) || kernel_time_here) {
      user_samples = sample_handler::drain_ring(rt, t);
    }
    watch_signal_delivery(rt, t, user_samples);
  });
}

uint64_t unsignalled_drain_interval_ns(const Runtime& rt) {
  // A thread's ring that no signal drains: every ring of a quiet run (with
  // traps, only a thread whose trap event could not open has one), a ring
  // that takes kernel time too, a ring given to a thread that blocks the
  // sample signal.
  const bool quiet_rings = rt.quiet_sampling && (!g_trap_sampling.load(std::memory_order_relaxed) ||
                                                 g_quiet_ring_fallbacks.load(std::memory_order_relaxed) > 0);
  const bool kernel_time_rings = kernel_time_in_thread_rings();
  uint64_t interval = UINT64_MAX;
  const bool experimenting = rt.experiment.selected.load(std::memory_order_relaxed) != nullptr;
  if (quiet_rings || kernel_time_rings || g_signal_blocked_threads.load(std::memory_order_relaxed) > 0) {
    interval = sample_policy::quiet_drain_interval_ns(rt.config.sample_period_ns, ring_memory());
  }
  if (cpu_rings_take_kernel_time()) {
    // During an experiment, as often as a CPU's ring can take a sample: a
    // sample's delay is credited when it is drained, and the other threads
    // pay it at their next sample, so draining only as the rings fill
    // (every 60 ms at 1 ms) turned the experiment's delays into lumps. A
    // producer that paid 30 ms at once while its consumer (the selected
    // line) emptied a queue of 2 ms starved it, as it would not if the line
    // were faster: syscall_write's pwrite line, its time in the kernel, read
    // +30% to +44% at 50% (truth +47%; traps +48%), +43% to +47% drained at
    // the rings' period. Not faster: drained every 1 ms, fork_join's left
    // part read ~3 points low (median +27.9% in 8 runs against +31%; why is
    // not established: the profiler thread's wakes, at real-time priority,
    // with the unmapping of retired rings in each, are the suspects). In
    // every experiment, 0% ones too, so that those wakes cost the baselines
    // what they cost the speedups.
    interval = std::min(interval, (experimenting ? g_cpu_rings_experiment_drain_ns : g_cpu_rings_drain_ns)
                                      .load(std::memory_order_relaxed));
  }
  if (whole_cpu_open()) {  // for the same reasons, and before its rings fill with other processes' samples
    interval = std::min(interval, (experimenting ? g_whole_cpu_experiment_drain_ns : g_whole_cpu_drain_ns)
                                      .load(std::memory_order_relaxed));
  }
  return interval;
}

bool kernel_sampling() { return g_kernel_sampling.load(std::memory_order_relaxed) == KernelSampling::On; }

uint64_t outside_switch_rate(const Runtime& rt) {
  const bool sampled_finely = g_whole_cpu.load(std::memory_order_relaxed) != WholeCpu::Unavailable;
  return sampled_finely ? rt.config.timer_switch_rate_outside : 0;
}

bool whole_cpu_sampling() { return whole_cpu_open(); }

bool timer_sampling() { return g_use_timers.load(std::memory_order_relaxed); }

void use_timer_sampling() { g_use_timers.store(true, std::memory_order_relaxed); }

// Measured with --fixed-line at 50% through test/programs/robust/no_perf_launcher
// (HZ=250): fork_join's left part, in threads of 3 ms, +21% where perf_event
// gives +32% (truth ~33%; 37% of its CPU time became samples, the threads'
// last stretch after their last tick never did); lock_contention's critical
// line, 0.75 ms a lock hold, +35.5% (truth ~50%), with 99% of its CPU time
// sampled: likely because each sample credits 2 ms of delay at once (4
// periods at 50%), longer than a hold. syscall_write's pwrite line: +47%
// at 50%, ranked first, as with perf_event.
std::string timer_sampling_caveat() {
  const uint64_t tick = sys::tick_ns();
  const std::string every =
      tick > 0 ? fmt::format("every {:g} ms here", static_cast<double>(tick) / 1e6) : std::string("every few ms");
  return fmt::format("which fire only on the scheduler's tick ({}): threads that live or hold locks for less than "
                     "a few ticks get predictions that read low (perf_event_paranoid <= 2 or CAP_PERFMON samples at "
                     "the set period)",
                     every);
}

uint64_t unsignalled_period_ns(const Config& config) {
  return sample_policy::unsignalled_period_ns(config.sample_period_ns, ring_memory());
}

uint64_t kernel_period_ns(const Config& config) {
  return sample_policy::kernel_period_ns(config.sample_period_ns, ring_memory());
}

void unmap_retired_rings(uint64_t budget_ns) {
  const uint64_t start = sys::monotonic_ns();
  for (;;) {
    PerfRing::Mapping m;
    {
      FutexGuard guard(g_retired_lock);
      if (g_retired.empty()) return;
      m = g_retired.back();
      g_retired.pop_back();
    }
    munmap(m.address, m.size);
    if (sys::monotonic_ns() - start >= budget_ns) return;
  }
}

FutexLock& retired_rings_lock() { return g_retired_lock; }

void forget_retired_rings() {
  FutexGuard guard(g_retired_lock);
  g_retired.clear();
}

void forget_inherited_sampler(ThreadState& t) {
  t.timer_mode = false;  // POSIX timers are not inherited by a forked child
  t.sampled_by_cpus.store(false, std::memory_order_relaxed);
  t.trap_mode.store(false, std::memory_order_relaxed);
  if (t.parked_trap_fd >= 0) descriptors::close_own(std::exchange(t.parked_trap_fd, -1));
  t.signal_blocked.store(false, std::memory_order_relaxed);  // the new sampler signals until seen otherwise
  g_signal_blocked_threads.store(0, std::memory_order_relaxed);
  t.kernel_event_id = 0;
  // The child's switches and CPU time count from zero (check_switch_rate);
  // its lock waits, delay sleeps and sorted waits go on from its parent's.
  t.samples_since_switch_check = 0;
  t.looks_saying_move = 0;
  t.at_switch_check = {.lock_waits = t.lock_waits.load(std::memory_order_relaxed),
                       .delay_sleeps = t.ledger.sleeps.load(std::memory_order_relaxed),
                       .outside_waits = t.outside_waits.load(std::memory_order_relaxed),
                       .program_waits = t.program_waits.load(std::memory_order_relaxed)};
  t.timer_wanted.store(false, std::memory_order_relaxed);
  t.whole_cpu_wanted.store(false, std::memory_order_relaxed);
  t.sorting_waits.store(false, std::memory_order_relaxed);
  if (t.perf_fd < 0) return;
  t.ring.unmap();  // the kernel-time sampler's descriptor was closed when it started
  descriptors::close_own(t.perf_fd);
  t.perf_fd = -1;
}

}  // namespace coz
