#include "descriptors.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <new>

#include "futex_lock.h"
#include "log.h"
#include "sys.h"

namespace coz::descriptors {
namespace {

// Which numbers are the runtime's: a two-level bitmap, so that a look-up
// (every close the program makes) is a few loads and no lock. 1024 chunks
// of 64 Ki numbers cover every descriptor below 64 Mi (fs.nr_open is 1 Mi
// by default); a descriptor beyond that is placed, but not protected.
constexpr unsigned fds_per_chunk = 1u << 16;
constexpr unsigned chunk_count = 1024;
constexpr unsigned words_per_chunk = fds_per_chunk / 64;

std::atomic<std::atomic<uint64_t>*> g_chunks[chunk_count];  // allocated on first use, never freed
// Below the lowest number ever registered nothing is the runtime's: the
// look-up of almost every close the program makes ends there.
std::atomic<long> g_lowest{LONG_MAX};
std::atomic<long> g_highest{-1};
FutexLock g_lock;  // adopt(): the limit's raise and restore, chunk allocation

/// How far above the soft limit the limit is raised for a moment: room for
/// the runtime's descriptors (one per thread), which F_DUPFD packs right
/// above the limit.
constexpr rlim_t room_above = 65536;
/// Without such room: how far below the limit the runtime's descriptors go
/// at most (the program's lowest-first allocations reach them last).
constexpr rlim_t depth_below = 256;

std::atomic<bool> g_no_room_noted{false};

/// Fewer numbers than this above the limit, and the runtime's samplers (one
/// per thread) would soon go below it.
constexpr rlim_t room_wanted = 64;
/// Below this limit (the usual soft one: a user who sets a smaller one
/// means the program to live within it), the runtime's descriptors below
/// it would be a share of the program's worth keeping, even at the price of
/// timer sampling (decide_table). From it up, only a program that uses
/// nearly all of its numbers reaches them, at the top.
constexpr rlim_t own_table_below = 1024;
std::atomic<bool> g_own_table{false};
thread_local bool tls_own_table = false;  // initial-exec: read in any thread, at any time

// Raw system calls: libcoz.so interposes fcntl and close.
long nofile_limit(const rlimit* set, rlimit* old) {
  return sys::raw_syscall6(SYS_prlimit64, 0, RLIMIT_NOFILE, reinterpret_cast<long>(set), reinterpret_cast<long>(old));
}
int dup_at_least(int fd, rlim_t floor) {
  return static_cast<int>(sys::raw_syscall6(SYS_fcntl, fd, F_DUPFD_CLOEXEC, static_cast<long>(floor)));
}
void raw_close(int fd) { sys::raw_syscall6(SYS_close, fd); }

bool same(const rlimit& a, const rlimit& b) { return a.rlim_cur == b.rlim_cur && a.rlim_max == b.rlim_max; }

/// A copy of `fd` at the lowest free number at or above the soft limit, the
/// limit raised just for the F_DUPFD (with the hard one, where the hard one
/// is no higher and the process may raise it: CAP_SYS_RESOURCE); -1 if
/// there is no such room.
int dup_above_limit(int fd, const rlimit& limit) {
  // A hard limit the process may not raise stays so: each thread's start
  // would otherwise try twice more, in vain (containers without
  // CAP_SYS_RESOURCE, whose soft limit is often the hard one).
  static rlimit refused{0, 0};  // under g_lock
  if (limit.rlim_cur >= limit.rlim_max && same(limit, refused)) return -1;
  bool raised_once = false;
  for (rlim_t room : {room_above, rlim_t{1024}}) {  // fs.nr_open caps a raised hard limit
    rlimit raised = limit;
    raised.rlim_cur = std::min(limit.rlim_max, limit.rlim_cur + room);
    if (raised.rlim_cur <= limit.rlim_cur) raised.rlim_cur = raised.rlim_max = limit.rlim_cur + room;
    if (nofile_limit(&raised, nullptr) != 0) continue;
    raised_once = true;
    int high = dup_at_least(fd, limit.rlim_cur);
    // The program's limit again; if a thread of the program set one of its
    // own in this instant, that one is put back.
    rlimit now;
    if (nofile_limit(&limit, &now) == 0 && !same(now, raised)) nofile_limit(&now, nullptr);
    if (high >= 0) return high;
  }
  if (!raised_once && limit.rlim_cur >= limit.rlim_max) refused = limit;
  return -1;
}

int place(int fd) {
  rlimit limit;
  if (nofile_limit(nullptr, &limit) != 0 || limit.rlim_cur >= static_cast<rlim_t>(INT_MAX)) return fd;
  if (static_cast<rlim_t>(fd) >= limit.rlim_cur) return fd;
  int placed = dup_above_limit(fd, limit);
  if (placed < 0) {
    placed = dup_at_least(fd, limit.rlim_cur - std::min(limit.rlim_cur / 2, depth_below));
    if (!g_no_room_noted.exchange(true)) {
      log::info("no room above the descriptor limit ({}, the hard limit too): the runtime's descriptors count "
                "against the program's",
                limit.rlim_cur);
    }
    if (placed >= 0 && placed < fd) {
      raw_close(placed);
      placed = -1;
    }
  }
  if (placed < 0) return fd;
  raw_close(fd);
  return placed;
}

std::atomic<uint64_t>* chunk_of(long fd) {
  if (fd < 0 || static_cast<unsigned long>(fd) / fds_per_chunk >= chunk_count) return nullptr;
  return g_chunks[fd / fds_per_chunk].load(std::memory_order_acquire);
}

uint64_t bit_of(long fd) { return uint64_t{1} << (fd % 64); }
std::atomic<uint64_t>& word_of(std::atomic<uint64_t>* chunk, long fd) { return chunk[(fd % fds_per_chunk) / 64]; }

/// Under g_lock.
void remember(int fd) {
  if (fd < 0 || static_cast<unsigned>(fd) / fds_per_chunk >= chunk_count) return;
  std::atomic<uint64_t>* chunk = chunk_of(fd);
  if (!chunk) {
    chunk = new (std::nothrow) std::atomic<uint64_t>[words_per_chunk]();
    if (!chunk) return;
    g_chunks[fd / fds_per_chunk].store(chunk, std::memory_order_release);
  }
  // The bounds first: a look-up that sees the bit also passes them.
  if (fd < g_lowest.load(std::memory_order_relaxed)) g_lowest.store(fd, std::memory_order_release);
  if (fd > g_highest.load(std::memory_order_relaxed)) g_highest.store(fd, std::memory_order_release);
  word_of(chunk, fd).fetch_or(bit_of(fd), std::memory_order_release);
}

}  // namespace

bool decide_table(unsigned long& soft) {
  rlimit limit;
  if (nofile_limit(nullptr, &limit) != 0) return false;
  soft = limit.rlim_cur;
  if (limit.rlim_cur >= own_table_below) return false;
  if (limit.rlim_max > limit.rlim_cur && limit.rlim_max - limit.rlim_cur >= room_wanted) return false;
  // May the hard limit go up for a moment (CAP_SYS_RESOURCE)? Then there is
  // room. (Here the hard limit is below the raised one.)
  const rlimit raised{limit.rlim_cur + room_wanted, limit.rlim_cur + room_wanted};
  if (nofile_limit(&raised, nullptr) == 0) {
    nofile_limit(&limit, nullptr);
    return false;
  }
  g_own_table.store(true, std::memory_order_release);
  return true;
}

bool own_table() { return g_own_table.load(std::memory_order_acquire); }

bool in_own_table() { return tls_own_table; }

bool enter_own_table() {
  if (sys::raw_syscall6(SYS_unshare, CLONE_FILES) != 0) {
    g_own_table.store(false, std::memory_order_release);
    log::info("cannot have a descriptor table of the runtime's own (unshare refused): its descriptors count "
              "against the program's limit");
    return false;
  }
  // Copies of the program's descriptors: a pipe's end kept here would never
  // let its reader see the end. stderr stays, for the runtime's messages.
  sys::raw_syscall6(SYS_close_range, 0, 1, 0);
  sys::raw_syscall6(SYS_close_range, 3, ~0U, 0);
  // 0 and 1 read and write nothing, rather than taking the runtime's files
  // (a stray write to stdout would land in the profile).
  for (int fd = 0; fd <= 1; ++fd) {
    long opened = sys::raw_syscall6(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/dev/null"), O_RDWR | O_CLOEXEC);
    if (opened >= 0 && opened != fd) raw_close(static_cast<int>(opened));
  }
  tls_own_table = true;
  return true;
}

int adopt(int fd) {
  if (fd < 0 || in_own_table()) return fd;
  FutexGuard guard(g_lock);
  int placed = place(fd);
  remember(placed);
  return placed;
}

void close_own(int fd) {
  if (fd < 0) return;
  if (in_own_table()) return raw_close(fd);
  if (std::atomic<uint64_t>* chunk = chunk_of(fd)) word_of(chunk, fd).fetch_and(~bit_of(fd), std::memory_order_release);
  raw_close(fd);
}

bool is_runtime(int fd) {
  if (fd < g_lowest.load(std::memory_order_acquire)) return false;
  std::atomic<uint64_t>* chunk = chunk_of(fd);
  return chunk && (word_of(chunk, fd).load(std::memory_order_acquire) & bit_of(fd)) != 0;
}

int next_runtime(unsigned from, unsigned to) {
  long fd = std::max<long>(from, g_lowest.load(std::memory_order_acquire));
  const long last = std::min<long>(to, g_highest.load(std::memory_order_acquire));
  while (fd <= last) {
    std::atomic<uint64_t>* chunk = chunk_of(fd);
    if (!chunk) {
      fd = (fd / fds_per_chunk + 1) * fds_per_chunk;
      continue;
    }
    uint64_t bits = word_of(chunk, fd).load(std::memory_order_acquire) >> (fd % 64);
    if (bits != 0) {
      long found = fd + __builtin_ctzll(bits);
      return found <= last ? static_cast<int>(found) : -1;
    }
    fd = (fd | 63) + 1;
  }
  return -1;
}

int close_range_except_runtime(unsigned first, unsigned last, int flags) {
  auto close_range = [&](long from, long to) {
    long ret = sys::raw_syscall6(SYS_close_range, from, to, flags);
    if (ret < 0) errno = static_cast<int>(-ret);
    return ret < 0 ? -1 : 0;
  };
  if (first > last) return close_range(first, last);  // the kernel's EINVAL
  long from = first;
  while (from <= static_cast<long>(last)) {
    int ours = next_runtime(static_cast<unsigned>(from), last);
    long to = ours < 0 ? static_cast<long>(last) : ours - 1L;
    if (to >= from && close_range(from, to) != 0) return -1;
    if (ours < 0) break;
    from = ours + 1L;
  }
  return 0;
}

FutexLock& lock() { return g_lock; }

}  // namespace coz::descriptors
