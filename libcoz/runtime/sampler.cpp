#include "sampler.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "log.h"
#include "real.h"

namespace coz {

// ---------------------------------------------------------------------------
// Signal context. Everything in this namespace runs inside the sample signal
// handler: no allocation, no locks that wait, no exceptions, no stdio.
// ---------------------------------------------------------------------------
namespace signal_safe {
namespace {

/// The first in-scope frame: the sampled IP, then each return address - 1
/// (the call instruction, which is on the caller's line).
SourceLine* attribute(const Runtime& rt, uint64_t ip, const uint64_t* chain, uint64_t depth) {
  if (SourceLine* line = rt.lines.find(ip)) return line;
  bool skipped_ip = false;
  for (uint64_t i = 0; i < depth; ++i) {
    uint64_t a = chain[i];
    if (a >= PERF_CONTEXT_MAX) continue;  // context marker (PERF_CONTEXT_USER, ...)
    if (!skipped_ip && a == ip) {         // the chain starts with the IP itself
      skipped_ip = true;
      continue;
    }
    if (SourceLine* line = rt.lines.find(a - 1)) return line;
  }
  return nullptr;
}

void handle_sample(Runtime& rt, ThreadState& t, const perf_event_header& h) {
  // Layout for sample_type = IP | CALLCHAIN: u64 ip; u64 nr; u64 ips[nr].
  const auto* body = reinterpret_cast<const uint64_t*>(&h + 1);
  size_t words = (h.size - sizeof h) / sizeof(uint64_t);
  if (words < 2) return;
  uint64_t ip = body[0];
  uint64_t depth = body[1];
  if (depth > words - 2) depth = words - 2;
  rt.stats.samples.fetch_add(1, std::memory_order_relaxed);

  SourceLine* line = attribute(rt, ip, body + 2, depth);
  if (!line) {
    rt.stats.unattributed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  line->samples.fetch_add(1, std::memory_order_relaxed);

  SourceLine* selected = rt.experiment.selected.load(std::memory_order_acquire);
  if (selected == line) {
    rt.experiment.selected_samples.fetch_add(1, std::memory_order_relaxed);
    rt.ledger.credit_sample(t.ledger);
  } else if (selected == nullptr) {
    // Between experiments, the first sample proposes the next line: lines
    // are thereby chosen in proportion to their samples.
    SourceLine* expected = nullptr;
    rt.experiment.candidate.compare_exchange_strong(expected, line, std::memory_order_relaxed);
  }
}

void on_sample_signal(int, siginfo_t*, void*) {
  int saved_errno = errno;
  Runtime* rt = runtime();
  ThreadState* t = current_thread();
  if (rt && t) {
    t->ring.drain(
        [&](const perf_event_header& h) {
          if (h.type == PERF_RECORD_SAMPLE) {
            handle_sample(*rt, *t, h);
          } else if (h.type == PERF_RECORD_LOST) {
            const auto* body = reinterpret_cast<const uint64_t*>(&h + 1);  // u64 id; u64 lost
            rt->stats.lost.fetch_add(body[1], std::memory_order_relaxed);
          }
        },
        t->scratch, sizeof t->scratch);
    if (!t->regular_period) {
      // The first period was a random phase (see start_sampling); from now on the regular one.
      uint64_t period = rt->config.sample_period_ns;
      sys::raw_syscall6(SYS_ioctl, t->perf_fd, PERF_EVENT_IOC_PERIOD, reinterpret_cast<long>(&period));
      t->regular_period = true;
    }
    rt->ledger.pay_from_signal(t->ledger);
  }
  errno = saved_errno;
}

}  // namespace
}  // namespace signal_safe

// ---------------------------------------------------------------------------

namespace {
std::atomic<bool> g_perf_refused_warned{false};

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

bool start_sampling(ThreadState& t, const Config& config) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  // Each thread's CPU clock starts at zero, so a fixed first period would
  // never sample the last partial period of a short-lived thread: with thread
  // churn, every thread's final fraction of a period would go unseen. A
  // random first period makes every instant equally likely to be sampled.
  uint64_t phase = (static_cast<uint64_t>(t.tid) * 0x9E3779B97F4A7C15ull) ^ sys::monotonic_ns();
  attr.sample_period = 1 + phase % config.sample_period_ns;
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN;
  attr.disabled = 1;
  attr.exclude_kernel = 1;  // also keeps samples (and signals) to user mode, so no syscall sees EINTR
  attr.exclude_hv = 1;
  attr.exclude_callchain_kernel = 1;
  attr.wakeup_events = 1;  // signal on every sample: delays are paid within one period
  attr.sample_max_stack = static_cast<uint16_t>(config.max_callchain);

  long fd = perf_event_open(&attr);
  if (fd == -EINVAL) {  // kernels before 4.8 reject sample_max_stack
    attr.sample_max_stack = 0;
    fd = perf_event_open(&attr);
  }
  if (fd < 0) {
    log::warn_once(g_perf_refused_warned,
                   "perf_event_open refused ({}): no samples will be taken (check "
                   "/proc/sys/kernel/perf_event_paranoid or the container's seccomp profile)",
                   std::strerror(static_cast<int>(-fd)));
    return false;
  }
  t.perf_fd = static_cast<int>(fd);
  t.regular_period = false;
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
  ioctl(t.perf_fd, PERF_EVENT_IOC_ENABLE, 0);
  return true;
}

void stop_sampling(ThreadState& t) {
  if (t.perf_fd < 0) return;
  ioctl(t.perf_fd, PERF_EVENT_IOC_DISABLE, 0);
  forget_inherited_sampler(t);
}

void forget_inherited_sampler(ThreadState& t) {
  if (t.perf_fd < 0) return;
  int fd = t.perf_fd;
  t.perf_fd = -1;
  t.ring.unmap();
  close(fd);
}

}  // namespace coz
