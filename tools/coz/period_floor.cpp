#include "period_floor.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/core.h>

#include "config.h"
#include "sample_policy.h"
#include "sys.h"

namespace coz::cli {
namespace {

/// Periods from 1 ms up are not measured: the default's expiry is a small
/// share of it even where an expiry is dear (~1.7% at 15 us).
constexpr uint64_t unmeasured_from_ns = 1'000'000;

/// The period the expiry's cost is measured at: long enough that the timer
/// cannot take all of it where an expiry costs less (a period shorter than
/// the expiry would read about the period, whatever the expiry costs).
constexpr uint64_t measured_period_ns = 50'000;

/// CPU time of a fixed loop of ~2 ms (~40 expiries at measured_period_ns):
/// the least of three runs.
uint64_t least_loop_cpu_ns(int perf_fd) {
  constexpr uint64_t steps = 1'200'000;
  volatile uint64_t sink = 0;
  const int tid = sys::gettid();
  uint64_t least = UINT64_MAX;
  for (int run = 0; run < 3; ++run) {
    if (perf_fd >= 0) ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0);
    const uint64_t start = sys::thread_cpu_ns(tid);
    uint64_t x = 1;
    for (uint64_t i = 0; i < steps; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;
    sink = x;
    least = std::min(least, sys::thread_cpu_ns(tid) - start);
    if (perf_fd >= 0) ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
  }
  (void)sink;
  return least;
}

/// What one expiry of this thread's task clock costs it, in ns of its CPU
/// time; nothing where perf_event is refused (the runtime says why when the
/// program starts). The same event as the samplers', without a ring or a
/// signal: the timer's own cost.
std::optional<uint64_t> expiry_cost_ns() {
  constexpr uint64_t period_ns = measured_period_ns;
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = period_ns;
  attr.disabled = 1;
  attr.exclude_hv = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) return std::nullopt;
  const uint64_t plain = least_loop_cpu_ns(-1);
  const uint64_t sampled = least_loop_cpu_ns(fd);
  close(fd);
  if (sampled <= plain) return 0;
  // Expiries in the sampled run: its CPU time (the expiries' included) over the period.
  const uint64_t expiries = std::max<uint64_t>(1, sampled / period_ns);
  return (sampled - plain) / expiries;
}

std::string duration_text(uint64_t ns) {
  if (ns % 1'000'000 == 0) return fmt::format("{}ms", ns / 1'000'000);
  if (ns % 1'000 == 0) return fmt::format("{}us", ns / 1'000);
  return fmt::format("{}ns", ns);
}

}  // namespace

uint64_t affordable_period(uint64_t requested_ns, std::string& note) {
  if (requested_ns >= unmeasured_from_ns) return requested_ns;
  const std::optional<uint64_t> expiry = expiry_cost_ns();
  if (!expiry) return requested_ns;
  const uint64_t period =
      sample_policy::affordable_period_ns(requested_ns, *expiry, unmeasured_from_ns, Config{}.delay_sampling_rate);
  if (period != requested_ns) {
    note = fmt::format(
        "--period {}: each expiry of the task clock's timer costs the program ~{} us of CPU time on this machine "
        "(a virtual machine?), so sampling that often would mostly sample the timer itself: sampling every {} instead",
        duration_text(requested_ns), (*expiry + 500) / 1000, duration_text(period));
  }
  return period;
}

}  // namespace coz::cli
