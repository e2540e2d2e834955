#include "sampler.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "log.h"
#include "real.h"
#include "futex_lock.h"

namespace coz {

// ---------------------------------------------------------------------------
// Signal context. Everything in this namespace runs inside the sample signal
// handler: no allocation, no locks that wait, no exceptions, no stdio.
// ---------------------------------------------------------------------------
namespace signal_safe {
namespace {

/// Sets a perf_event's sample period (the kernel restarts its countdown).
/// A raw system call: async-signal-safe, and ioctl is not re-entered.
bool set_period(int perf_fd, uint64_t period) {
  return sys::raw_syscall6(SYS_ioctl, perf_fd, PERF_EVENT_IOC_PERIOD, reinterpret_cast<long>(&period)) == 0;
}

/// Enables a perf_event (again). Signal-safe, as set_period.
void enable(int perf_fd) { sys::raw_syscall6(SYS_ioctl, perf_fd, PERF_EVENT_IOC_ENABLE, 0); }

/// Stops the perf_event from signalling its thread on each sample (O_ASYNC off).
void stop_signals(int perf_fd) { sys::raw_syscall6(SYS_fcntl, perf_fd, F_SETFL, 0, 0, 0, 0); }

/// The in-scope frames of a sample, innermost first: the sampled IP, then
/// each return address - 1 (the call instruction, on the caller's line).
/// frames[0] is the line the sample is attributed to; all of them make its
/// folded stack. One lookup per frame.
size_t in_scope_frames(const Runtime& rt, uint64_t ip, const uint64_t* chain, uint64_t depth,
                       SourceLine* (&frames)[StackTable::max_frames]) {
  size_t n = 0;
  if (SourceLine* line = rt.lines.find(ip)) frames[n++] = line;
  bool skipped_ip = false;
  for (uint64_t i = 0; i < depth && n < StackTable::max_frames; ++i) {
    uint64_t a = chain[i];
    if (a >= PERF_CONTEXT_MAX) continue;  // context marker (PERF_CONTEXT_USER, ...)
    if (!skipped_ip && a == ip) {         // the chain starts with the IP itself
      skipped_ip = true;
      continue;
    }
    SourceLine* line = rt.lines.find(a - 1);
    if (line && (n == 0 || line != frames[n - 1])) frames[n++] = line;
  }
  return n;
}

/// Whether this sample enters the profile's counts. While threads sample
/// faster than the configured period (an experiment that inserts delays),
/// only one sample in `rate` does, so that every count in the profile stays
/// one per configured period of CPU time, whenever it was taken.
bool counted_in_profile(const Runtime& rt, ThreadState& t) {
  uint64_t period = rt.sample_period_ns.load(std::memory_order_relaxed);
  if (period == 0 || period >= rt.config.sample_period_ns) return true;
  uint64_t rate = rt.config.sample_period_ns / period;
  return ++t.short_period_samples % rate == 0;
}

/// Counts a sample of thread `t`, and credits its delay if it is in the selected line.
void record_sample(Runtime& rt, ThreadState& t, uint64_t ip, const uint64_t* chain, uint64_t depth) {
  bool counted = counted_in_profile(rt, t);
  if (counted) rt.stats.samples.fetch_add(1, std::memory_order_relaxed);
  SourceLine* frames[StackTable::max_frames];
  size_t depth_in_scope = in_scope_frames(rt, ip, chain, depth, frames);
  if (depth_in_scope == 0) {
    if (counted) rt.stats.unattributed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  SourceLine* line = frames[0];
  if (counted) {
    rt.stacks.add(frames, depth_in_scope);
    line->samples.fetch_add(1, std::memory_order_relaxed);
  }

  SourceLine* selected = rt.experiment.selected.load(std::memory_order_acquire);
  if (selected == line) {
    // Every sample credits its delay (the ledger's delay per sample matches the period in force).
    if (counted) rt.experiment.selected_samples.fetch_add(1, std::memory_order_relaxed);
    if (uint64_t delay = rt.ledger.credit_sample(t.ledger)) rt.points.note_delay_credit(delay);
  }
}

void handle_perf_sample(Runtime& rt, ThreadState& t, const perf_event_header& h) {
  // Layout for sample_type = IP | CALLCHAIN: u64 ip; u64 nr; u64 ips[nr].
  const auto* body = reinterpret_cast<const uint64_t*>(&h + 1);
  size_t words = (h.size - sizeof h) / sizeof(uint64_t);
  if (words < 2) return;
  uint64_t depth = body[1];
  if (depth > words - 2) depth = words - 2;
  record_sample(rt, t, body[0], body + 2, depth);
}

/// Consumes thread `t`'s ring. Does nothing when another consumer holds it:
/// its records are left to that one.
void drain_ring(Runtime& rt, ThreadState& t) {
  if (t.draining.exchange(true, std::memory_order_acquire)) return;
  t.ring.drain(
      [&](const perf_event_header& h) {
        if (h.type == PERF_RECORD_SAMPLE) {
          handle_perf_sample(rt, t, h);
        } else if (h.type == PERF_RECORD_LOST) {
          const auto* body = reinterpret_cast<const uint64_t*>(&h + 1);  // u64 id; u64 lost
          rt.stats.lost.fetch_add(body[1], std::memory_order_relaxed);
        }
      },
      t.scratch, sizeof t.scratch);
  t.draining.store(false, std::memory_order_release);
}

/// After the thread's first sample (which came after a random phase, see
/// first_period) or a hurried one (hurry_next_sample), its sampler takes the
/// period in force, and restarts if it stopped after that sample. In a quiet
/// run, that first sample is also the last one the thread is signalled for.
/// Only from the thread's signal handler: the kernel stops a sampler after
/// its one sample on the way back to the thread, so the handler always comes
/// after that (another thread could restart it too early).
void settle_period(Runtime& rt, ThreadState& t) {
  if (t.regular_period.load(std::memory_order_acquire) || t.perf_fd < 0) return;
  set_period(t.perf_fd, rt.sample_period_ns.load(std::memory_order_relaxed));
  if (t.restart_after_first_sample) {
    t.restart_after_first_sample = false;
    enable(t.perf_fd);
  }
  t.regular_period.store(true, std::memory_order_release);
  if (rt.quiet_sampling) stop_signals(t.perf_fd);
}

/// Timer fallback: the IP from the interrupted context, then return
/// addresses found by walking frame pointers, only while they stay inside
/// this thread's stack and move towards its base (never a wild read).
void handle_timer_sample(Runtime& rt, ThreadState& t, void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  uint64_t ip = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  uint64_t chain[64];
  uint64_t depth = 0;
  uintptr_t fp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RBP]);
  unsigned max_depth = std::min<unsigned>(rt.config.max_callchain, 64);
  while (depth < max_depth && fp >= t.stack_low && fp + 2 * sizeof(uintptr_t) <= t.stack_high && fp % 8 == 0) {
    const auto* frame = reinterpret_cast<const uintptr_t*>(fp);
    uintptr_t next = frame[0];
    uint64_t ret = frame[1];
    if (ret == 0) break;
    chain[depth++] = ret;
    if (next <= fp) break;
    fp = next;
  }
  record_sample(rt, t, ip, chain, depth);
}

void on_sample_signal(int, siginfo_t*, void* context) {
  int saved_errno = errno;
  Runtime* rt = runtime();
  ThreadState* t = current_thread();
  if (rt && t && t->timer_mode) {
    handle_timer_sample(*rt, *t, context);
    rt->ledger.pay_from_signal(t->ledger);
  } else if (rt && t) {
    drain_ring(*rt, *t);
    settle_period(*rt, *t);
    rt->ledger.pay_from_signal(t->ledger);
  }
  errno = saved_errno;
}

}  // namespace
}  // namespace signal_safe

// ---------------------------------------------------------------------------

namespace {
std::atomic<bool> g_perf_refused_warned{false};
std::atomic<bool> g_use_timers{false};  // perf_event refused once: every thread uses timers
std::atomic<bool> g_timer_failed_warned{false};
int g_fd_floor = 0;                     // our descriptors live at or above this

// Ring buffers of exited threads, waiting for the profiler thread to unmap them.
FutexLock g_retired_lock;
std::vector<PerfRing::Mapping> g_retired;

/// Moves a descriptor of ours above the program's range, so that a program
/// with many threads does not run out of low descriptors (select() users
/// need them below 1024) because of us.
int place_high(int fd) {
  if (g_fd_floor <= 0) return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, g_fd_floor);
  if (high < 0) return fd;
  close(fd);
  return high;
}

void record_stack_bounds(ThreadState& t) {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* base = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &base, &size) == 0) {
    t.stack_low = reinterpret_cast<uintptr_t>(base);
    t.stack_high = t.stack_low + size;
  }
  pthread_attr_destroy(&attr);
}

/// Each thread's CPU clock starts at zero, so a fixed first period would never
/// sample the last partial period of a short-lived thread: with thread churn,
/// every thread's final fraction of a period would go unseen. A random first
/// period (1..period ns) makes every instant equally likely to be sampled.
uint64_t first_period(const ThreadState& t, uint64_t period) {
  uint64_t phase = (static_cast<uint64_t>(t.tid) * 0x9E3779B97F4A7C15ull) ^ sys::monotonic_ns();
  return 1 + phase % period;
}

/// A first period shorter than this stops the sampler after its first sample
/// (start_sampling). From 1 ns (the kernel makes that 10 us), a thread was
/// sometimes flooded: its first signal, which sets the regular period, came
/// only after milliseconds, with a sample every ~30 us meanwhile (fork_join:
/// threads with 100+ samples in 3 ms, up to 3,150 samples lost per run, and
/// hundreds outside the scope). Never seen from 20 us.
constexpr uint64_t flood_prone_period_ns = 50'000;

bool start_timer_sampling(ThreadState& t, const Config& config) {
  record_stack_bounds(t);
  sigevent sev;
  std::memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = sample_signal;
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

long perf_event_open(perf_event_attr* attr) {
  long fd = sys::raw_syscall6(SYS_perf_event_open, reinterpret_cast<long>(attr), 0 /* this thread */,
                              -1 /* any cpu */, -1 /* no group */, PERF_FLAG_FD_CLOEXEC);
  return fd;
}
}  // namespace

bool install_sample_handler() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = &signal_safe::on_sample_signal;
  // SA_RESTART: a sample that lands while the thread enters a system call
  // must not make that call fail with EINTR.
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask);  // nothing interrupts the handler (it touches per-thread state)
  return sigaction(sample_signal, &sa, nullptr) == 0;
}

void prepare_sampling() {
  // Room for one descriptor per thread above the program's own range.
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    rlim_t floor = limit.rlim_cur;
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, floor + 65536);
    if (setrlimit(RLIMIT_NOFILE, &limit) == 0) g_fd_floor = static_cast<int>(floor);
  }
}

bool start_sampling(ThreadState& t, const Config& config) {
  if (g_use_timers.load(std::memory_order_relaxed)) return start_timer_sampling(t, config);
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  Runtime* rt = runtime();
  uint64_t period = rt ? rt->sample_period_ns.load(std::memory_order_relaxed) : 0;
  attr.sample_period = first_period(t, period > 0 ? period : config.sample_period_ns);
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN;
  attr.disabled = 1;
  attr.exclude_kernel = 1;  // also keeps samples (and signals) to user mode, so no syscall sees EINTR
  attr.exclude_hv = 1;
  attr.exclude_callchain_kernel = 1;
  // A signal on every sample (O_ASYNC signals each one, whatever the wakeup
  // settings): delays are paid within one period. In a quiet run, only the
  // first sample signals (settle_period), and the ring wakes no one until
  // it is half full, which the profiler thread's drains never let happen.
  attr.wakeup_events = rt && rt->quiet_sampling ? 0 : 1;
  attr.sample_max_stack = static_cast<uint16_t>(config.max_callchain);

  long fd = perf_event_open(&attr);
  if (fd == -EINVAL) {  // kernels before 4.8 reject sample_max_stack
    attr.sample_max_stack = 0;
    fd = perf_event_open(&attr);
  }
  if (fd < 0) {
    // Refused for this process (paranoid level, seccomp, no PMU): fall back for every thread.
    log::warn_once(g_perf_refused_warned,
                   "perf_event_open refused ({}): sampling with CPU-time timers instead (no call chains, so "
                   "samples in code outside the scope are lost)",
                   std::strerror(static_cast<int>(-fd)));
    g_use_timers.store(true, std::memory_order_relaxed);
    return start_timer_sampling(t, config);
  }
  t.perf_fd = place_high(static_cast<int>(fd));
  t.regular_period.store(false, std::memory_order_relaxed);
  t.restart_after_first_sample = attr.sample_period < flood_prone_period_ns;
  // At a shortened period, one sample in `rate` is counted (counted_in_profile):
  // which one must be random too, or every thread would lose its last
  // rate - 1 samples on average (-10% for threads of 2-3 ms).
  t.short_period_samples = static_cast<uint32_t>(sys::monotonic_ns() >> 10);
  if (!t.ring.map(t.perf_fd, config.ring_data_pages)) {
    log::warn_once(g_perf_refused_warned, "cannot map the perf_event ring buffer: {}", std::strerror(errno));
    stop_sampling(t);
    return false;
  }
  f_owner_ex owner{F_OWNER_TID, t.tid};
  if (fcntl(t.perf_fd, F_SETFL, O_ASYNC) != 0 || fcntl(t.perf_fd, F_SETSIG, sample_signal) != 0 ||
      fcntl(t.perf_fd, F_SETOWN_EX, &owner) != 0) {
    log::warn_once(g_perf_refused_warned, "cannot route perf_event signals to threads: {}", std::strerror(errno));
    stop_sampling(t);
    return false;
  }
  // A short first period: enabled for one sample only (the kernel stops the
  // sampler at once, and the signal handler restarts it with the regular
  // period), so a late signal cannot flood the thread. Not for every thread:
  // the restart costs a system call, and the thread's CPU time until the
  // handler runs (~50 us here) goes unsampled.
  if (t.restart_after_first_sample) {
    ioctl(t.perf_fd, PERF_EVENT_IOC_REFRESH, 1);  // one sample
  } else {
    ioctl(t.perf_fd, PERF_EVENT_IOC_ENABLE, 0);
  }
  return true;
}

void stop_sampling(ThreadState& t) {
  if (t.timer_mode) {
    timer_delete(t.timer);
    t.timer_mode = false;
    return;
  }
  if (t.perf_fd < 0) return;
  ioctl(t.perf_fd, PERF_EVENT_IOC_DISABLE, 0);
  Runtime* rt = runtime();
  if (rt && rt->quiet_sampling) {
    // Its last samples, since the profiler thread's last drain. The thread
    // has left the thread list, so the profiler thread cannot be draining it.
    signal_safe::drain_ring(*rt, t);
  }
  PerfRing::Mapping m = t.ring.release();
  if (m.address) {
    FutexGuard guard(g_retired_lock);
    g_retired.push_back(m);
  }
  close(t.perf_fd);  // the event lives on until its mapping is unmapped
  t.perf_fd = -1;
}

void hurry_next_sample(ThreadState& t) {
  if (t.timer_mode || t.perf_fd < 0) return;
  constexpr uint64_t hurried_period_ns = 20'000;
  // The period first, then the flag: the handler resets the period only
  // after it sees the flag cleared, so it can never leave the short period
  // in place with the flag saying regular.
  if (signal_safe::set_period(t.perf_fd, hurried_period_ns)) t.regular_period.store(false, std::memory_order_release);
}

uint64_t set_sample_period(Runtime& rt, uint64_t period) {
  // Timer-mode threads keep the configured period (their timers would need rearming).
  if (g_use_timers.load(std::memory_order_relaxed)) period = rt.config.sample_period_ns;
  if (rt.sample_period_ns.exchange(period, std::memory_order_relaxed) == period) return period;
  for_each_thread([&](ThreadState& t) {
    if (!t.timer_mode && t.perf_fd >= 0) signal_safe::set_period(t.perf_fd, period);
  });
  return period;
}

void drain_quiet_rings(Runtime& rt) {
  if (!rt.quiet_sampling) return;
  for_each_thread([&](ThreadState& t) {
    if (!t.timer_mode && t.perf_fd >= 0) signal_safe::drain_ring(rt, t);
  });
}

uint64_t quiet_drain_interval_ns(const Config& config) {
  // The longest record: header, IP, callchain length, the callchain with its
  // PERF_CONTEXT_USER marker.
  uint64_t longest_record = sizeof(perf_event_header) + sizeof(uint64_t) * (3 + config.max_callchain);
  uint64_t ring_bytes = static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) * config.ring_data_pages;
  uint64_t samples_that_fit = std::max<uint64_t>(2, ring_bytes / longest_record);
  return config.sample_period_ns * (samples_that_fit / 2);
}

void unmap_retired_rings() {
  std::vector<PerfRing::Mapping> retired;
  {
    FutexGuard guard(g_retired_lock);
    retired.swap(g_retired);
  }
  for (const auto& m : retired) munmap(m.address, m.size);
}

void forget_inherited_sampler(ThreadState& t) {
  t.timer_mode = false;  // POSIX timers are not inherited by a forked child
  if (t.perf_fd < 0) return;
  int fd = t.perf_fd;
  t.perf_fd = -1;
  t.ring.unmap();
  close(fd);
}

}  // namespace coz
