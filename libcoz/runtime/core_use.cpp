#include "core_use.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>

#include <cstdio>

#include "descriptors.h"
#include "sys.h"
#include "thread_registry.h"

namespace coz {
namespace {

/// "CPU_NS RUN_DELAY_NS TIMESLICES" from /proc/self/task/TID/schedstat.
bool read_schedstat(int tid, uint64_t& cpu_ns, uint64_t& waiting_ns) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  const long fd = sys::raw_syscall6(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[96];
  const long n = sys::raw_syscall6(SYS_read, fd, reinterpret_cast<long>(buf), sizeof buf - 1);
  sys::raw_syscall6(SYS_close, fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* p = buf;
  uint64_t fields[2] = {0, 0};
  for (uint64_t& field : fields) {
    while (*p == ' ') ++p;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') field = field * 10 + static_cast<uint64_t>(*p++ - '0');
  }
  cpu_ns = fields[0];
  waiting_ns = fields[1];
  return true;
}

}  // namespace

void snapshot_core_use(CoreUseSnapshot& out) {
  static size_t rotation = 0;  // the profiler thread's: which subset of a crowd is read next
  out.count = 0;
  out.scale = 1;
  out.taken_ns = sys::monotonic_ns();
  if (!descriptors::usable_here()) return;
  int tids[CoreUseSnapshot::max_threads];
  size_t listed = 0, total = 0;
  {
    FutexGuard guard(thread_list_lock());
    total = static_cast<size_t>(thread_list_end() - thread_list_begin());
    const size_t first = total > CoreUseSnapshot::max_threads ? rotation++ % total : 0;
    for (size_t i = 0; i < total && listed < CoreUseSnapshot::max_threads; ++i)
      tids[listed++] = thread_list_begin()[(first + i) % total]->tid;
  }
  for (size_t i = 0; i < listed; ++i) {
    CoreUseSnapshot::Entry& e = out.entries[out.count];
    e.tid = tids[i];
    if (read_schedstat(e.tid, e.cpu_ns, e.waiting_ns)) ++out.count;
  }
  if (out.count > 0) out.scale = static_cast<double>(total) / static_cast<double>(listed);
}

CoreUse core_use_between(const CoreUseSnapshot& begin, const CoreUseSnapshot& end) {
  CoreUse use;
  const uint64_t wall = end.taken_ns > begin.taken_ns ? end.taken_ns - begin.taken_ns : 0;
  if (begin.count == 0 || end.count == 0 || wall == 0) return use;
  double cpu = 0, waiting = 0;
  for (size_t i = 0; i < end.count; ++i) {
    const CoreUseSnapshot::Entry& e = end.entries[i];
    for (size_t j = 0; j < begin.count; ++j) {
      const CoreUseSnapshot::Entry& b = begin.entries[j];
      if (b.tid != e.tid) continue;
      if (e.cpu_ns >= b.cpu_ns) cpu += static_cast<double>(e.cpu_ns - b.cpu_ns);
      if (e.waiting_ns >= b.waiting_ns) waiting += static_cast<double>(e.waiting_ns - b.waiting_ns);
      break;
    }
  }
  use.cores_busy = cpu * begin.scale / static_cast<double>(wall);
  use.waiting_for_core = waiting * begin.scale / static_cast<double>(wall);
  return use;
}

int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace coz
