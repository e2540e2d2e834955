#include "cpu_rings.h"

#include <asm/perf_regs.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "sys.h"

namespace coz {

namespace {
perf_event_attr attributes(const CpuRings::Settings& settings) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = settings.period_ns;
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  attr.sample_regs_user = (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP);
  attr.sample_stack_user = settings.stack_bytes;
  attr.exclude_user = !settings.user;
  attr.exclude_kernel = !settings.kernel;
  attr.exclude_hv = 1;
  attr.wakeup_events = 0;   // nobody waits on them: the profiler thread drains on its clock
  if (settings.whole_cpu) {
    // A task-clock counts a task's time; a CPU's is the cpu-clock's.
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.exclude_idle = 1;
    return attr;  // an exec unmaps the ring, which ends the event
  }
  attr.inherit = 1;
  attr.inherit_thread = 1;  // threads, not forked children: a child opens its own
  attr.remove_on_exec = 1;  // an exec'd image is a new program, with its own runtime
  return attr;
}

long open_event(const perf_event_attr& attr, bool whole_cpu, long cpu) {
  const long pid = whole_cpu ? -1 /* every process */ : 0 /* this thread */;
  return syscall(SYS_perf_event_open, &attr, pid, cpu, -1 /* no group */, PERF_FLAG_FD_CLOEXEC);
}

void close_fd(int fd) { sys::raw_syscall6(SYS_close, fd); }
}  // namespace

bool CpuRings::open(const Settings& settings) {
  perf_event_attr attr = attributes(settings);
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  auto give_up = [&](int error) {
    close();
    errno = error;
    return false;
  };
  for (long cpu = 0; cpu < cpus; ++cpu) {
    long fd = open_event(attr, settings.whole_cpu, cpu);
    if (fd < 0) {
      if (errno == ENODEV) continue;  // an offline CPU
      return give_up(errno);
    }
    fds_.push_back(static_cast<int>(fd));
    auto ring = std::make_unique<PerfRing>();
    if (!ring->map(fds_.back(), settings.data_pages)) return give_up(errno);
    rings_.push_back(std::move(ring));
  }
  if (rings_.empty()) return give_up(ENODEV);
  return true;
}

bool whole_cpu_events_allowed() {
  CpuRings::Settings settings;
  settings.whole_cpu = true;
  settings.kernel = true;  // as the runtime opens them (sampler.cpp, open_whole_cpu_rings)
  perf_event_attr attr = attributes(settings);
  attr.disabled = 1;
  const long fd = open_event(attr, true, 0);
  if (fd < 0) return false;
  close_fd(static_cast<int>(fd));
  return true;
}

void CpuRings::disable() {
  // The ioctl on the event that was opened reaches its inherited copies too.
  for (int fd : fds_) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
}

void CpuRings::close_descriptors() {
  for (int fd : fds_) close_fd(fd);
  fds_.clear();
}

void CpuRings::close() {
  rings_.clear();  // unmaps
  close_descriptors();
}

void CpuRings::forget() {
  for (auto& ring : rings_) ring->release();  // the child has no such mapping
  rings_.clear();
  close_descriptors();  // the child's references only: the parent's events live on
}

}  // namespace coz
