#include "core_use.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>

#include <atomic>
#include <cstdio>

#include "descriptors.h"
#include "sys.h"
#include "thread_registry.h"

namespace coz {
namespace {

/// How many threads hold a schedstat file (ThreadState::schedstat_fd).
/// Atomic: a thread opens its own as it starts, and closes it as it leaves,
/// outside the registry's lock.
std::atomic<size_t> g_open_files{0};

/// At most this many files open at once (above the program's descriptors,
/// which they take none of, but under a limit the runtime cannot raise they
/// count against it). A crowd beyond it is read through the threads that
/// hold one.
constexpr size_t max_open_files = 2 * CoreUseSnapshot::max_threads;

/// The second field of "CPU_NS RUN_DELAY_NS TIMESLICES".
bool parse_run_delay(const char* p, uint64_t& waiting_ns) {
  uint64_t fields[2] = {0, 0};
  for (uint64_t& field : fields) {
    while (*p == ' ') ++p;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') field = field * 10 + static_cast<uint64_t>(*p++ - '0');
  }
  waiting_ns = fields[1];
  return true;
}

/// Opens thread `t`'s schedstat file and moves it above the program's
/// descriptors (descriptors::adopt): by the thread itself as it starts, or
/// under thread_list_lock. False past max_open_files or if /proc refuses.
bool open_schedstat(ThreadState& t) {
  if (t.schedstat_fd >= 0) return true;
  if (g_open_files.fetch_add(1, std::memory_order_relaxed) >= max_open_files) {
    g_open_files.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", t.tid);
  const long fd = sys::raw_syscall6(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) t.schedstat_fd = descriptors::adopt(static_cast<int>(fd));
  if (t.schedstat_fd >= 0) return true;
  g_open_files.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

/// The run delay of thread `t` from its schedstat file, under thread_list_lock.
/// Each thread's file is opened once, at its start (open_core_use_file), and
/// re-read from offset 0; here only for a thread that had none (a forked
/// child's, one past max_open_files at its start).
///
/// In a descriptor table of the runtime's own (docs/descriptors.md) no
/// number is the program's, and a thread that exits could not close a file
/// of that table: each read opens and closes its file there.
bool read_run_delay(ThreadState& t, uint64_t& waiting_ns) {
  if (descriptors::own_table()) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", t.tid);
    char buf[96];
    return sys::read_small_file(path, buf, sizeof buf) > 0 && parse_run_delay(buf, waiting_ns);
  }
  if (!open_schedstat(t)) return false;
  char buf[96];
  const long n = sys::raw_syscall6(SYS_pread64, t.schedstat_fd, reinterpret_cast<long>(buf), sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  return parse_run_delay(buf, waiting_ns);
}

}  // namespace

void snapshot_core_use(CoreUseSnapshot& out) {
  static size_t rotation = 0;  // the profiler thread's: which subset of a crowd is read next
  out.count = 0;
  out.scale = 1;
  if (!descriptors::usable_here()) return;
  LockedThreadList threads;
  out.taken_ns = sys::monotonic_ns();
  const size_t total = threads.size();
  const size_t first = total > CoreUseSnapshot::max_threads ? rotation++ % total : 0;
  for (size_t i = 0; i < total && out.count < CoreUseSnapshot::max_threads; ++i) {
    ThreadState& t = *threads.begin()[(first + i) % total];
    CoreUseSnapshot::Entry& e = out.entries[out.count];
    e.tid = t.tid;
    if (read_run_delay(t, e.waiting_ns)) ++out.count;
  }
  if (out.count > 0) out.scale = static_cast<double>(total) / static_cast<double>(out.count);
}

void snapshot_core_use_again(const CoreUseSnapshot& begin, CoreUseSnapshot& out) {
  out.count = 0;
  out.scale = begin.scale;
  if (!descriptors::usable_here()) return;
  LockedThreadList threads;
  out.taken_ns = sys::monotonic_ns();
  for (ThreadState* thread : threads) {
    ThreadState& t = *thread;
    if (t.schedstat_fd < 0) continue;
    for (size_t j = 0; j < begin.count; ++j) {
      if (begin.entries[j].tid != t.tid) continue;
      CoreUseSnapshot::Entry& e = out.entries[out.count];
      e.tid = t.tid;
      if (read_run_delay(t, e.waiting_ns)) ++out.count;
      break;
    }
  }
}

void open_core_use_file(ThreadState& t) {
  if (!descriptors::own_table()) open_schedstat(t);
}

void close_core_use_file(ThreadState& t) {
  if (t.schedstat_fd < 0) return;
  descriptors::close_own(t.schedstat_fd);
  t.schedstat_fd = -1;
  g_open_files.fetch_sub(1, std::memory_order_relaxed);
}


double waiting_for_core_between(const CoreUseSnapshot& begin, const CoreUseSnapshot& end) {
  const uint64_t wall = end.taken_ns > begin.taken_ns ? end.taken_ns - begin.taken_ns : 0;
  if (begin.count == 0 || end.count == 0 || wall == 0) return -1;
  double waiting = 0;
  for (size_t i = 0; i < end.count; ++i) {
    const CoreUseSnapshot::Entry& e = end.entries[i];
    for (size_t j = 0; j < begin.count; ++j) {
      const CoreUseSnapshot::Entry& b = begin.entries[j];
      if (b.tid != e.tid) continue;
      if (e.waiting_ns >= b.waiting_ns) waiting += static_cast<double>(e.waiting_ns - b.waiting_ns);
      break;
    }
  }
  return waiting * begin.scale / static_cast<double>(wall);
}

int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace coz
