// Raw system calls and clocks for the runtime's own use.
//
// libcoz.so exports wrappers for libc functions (nanosleep, syscall, ...), so
// a plain call to them from inside the runtime would re-enter our own
// wrappers. The runtime calls the kernel directly instead. Everything here is
// async-signal-safe.
#pragma once

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#include <time.h>

#include <cerrno>
#include <cstdint>

namespace coz::sys {

inline long raw_syscall6(long n, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0,
                         long a6 = 0) {
  long ret;
  register long r10 __asm__("r10") = a4;
  register long r8 __asm__("r8") = a5;
  register long r9 __asm__("r9") = a6;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;  // -errno on failure, as the kernel returns it
}

/// read(2) and write(2) for the runtime's own files (the profile, /proc,
/// stderr): libcoz.so interposes read and write, and the runtime's I/O is
/// not the program's. -1 and errno on failure, as libc's.
inline ssize_t read(int fd, void* buf, size_t count) {
  long ret = raw_syscall6(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(count));
  if (ret < 0) {
    errno = static_cast<int>(-ret);
    return -1;
  }
  return ret;
}

inline ssize_t write(int fd, const void* buf, size_t count) {
  long ret = raw_syscall6(SYS_write, fd, reinterpret_cast<long>(buf), static_cast<long>(count));
  if (ret < 0) {
    errno = static_cast<int>(-ret);
    return -1;
  }
  return ret;
}

inline int gettid() { return static_cast<int>(raw_syscall6(SYS_gettid)); }
inline int getpid() { return static_cast<int>(raw_syscall6(SYS_getpid)); }

/// CLOCK_MONOTONIC in ns (vDSO; clock_gettime is not interposed).
inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

/// The CPU time of the whole process (every thread, live or exited), in ns.
inline uint64_t process_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

/// The CPU time of thread `tid` of this process, in ns (0 once it is gone):
/// its CPU-time clock as the kernel numbers it (per thread, CPUCLOCK_SCHED:
/// ~tid << 3 | 6), for a thread the caller has no pthread_t of.
inline uint64_t thread_cpu_ns(int tid) {
  const auto clock = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6);
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

/// The kernel's scheduler tick, in ns (4 ms at HZ=250), the resolution of
/// its coarse clocks; 0 if unknown. CPU-time timers fire only on a tick.
inline uint64_t tick_ns() {
  timespec res{};
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) return 0;
  return static_cast<uint64_t>(res.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(res.tv_nsec);
}

/// Reads a small file (a /proc entry) into `buf`, NUL-terminated: the
/// bytes read (at most size - 1), or -1. Raw open and close: libcoz.so
/// interposes close.
inline ssize_t read_small_file(const char* path, char* buf, size_t size) {
  long fd = raw_syscall6(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(static_cast<int>(fd), buf, size - 1);
  raw_syscall6(SYS_close, fd);
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

/// The machine's CPU time since boot by kind, summed over its CPUs, in ns:
/// the "cpu" line of /proc/stat, which counts in clock ticks (10 ms): good
/// for a run, not for an experiment.
struct MachineCpuTimes {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  /// A vCPU that had work, kept off its core by a hypervisor; 0 on bare metal.
  uint64_t steal = 0;
  /// Busy: everything but idle, iowait and steal (guest time is in user's).
  uint64_t busy() const { return user + nice + system + irq + softirq; }
};

/// Reads them; false where /proc/stat cannot be read or parsed.
inline bool machine_cpu_times(MachineCpuTimes& out) {
  char buf[512];
  if (read_small_file("/proc/stat", buf, sizeof buf) <= 0) return false;
  // "cpu  user nice system idle iowait irq softirq steal ..."
  const char* p = buf;
  if (p[0] != 'c' || p[1] != 'p' || p[2] != 'u' || p[3] != ' ') return false;
  p += 3;
  const long ticks_per_s = sysconf(_SC_CLK_TCK);
  if (ticks_per_s <= 0) return false;
  uint64_t* fields[] = {&out.user, &out.nice, &out.system, &out.idle, &out.iowait, &out.irq, &out.softirq, &out.steal};
  for (uint64_t* field : fields) {
    while (*p == ' ') ++p;
    if (*p < '0' || *p > '9') return false;
    uint64_t ticks = 0;
    while (*p >= '0' && *p <= '9') ticks = ticks * 10 + static_cast<uint64_t>(*p++ - '0');
    *field = ticks * (1'000'000'000u / static_cast<uint64_t>(ticks_per_s));
  }
  return true;
}

/// The time a hypervisor has taken from this machine's CPUs since boot
/// (MachineCpuTimes::steal); 0 on bare metal or where unknown.
inline uint64_t machine_steal_ns() {
  MachineCpuTimes times;
  return machine_cpu_times(times) ? times.steal : 0;
}

/// Sleeps about `ns` (one call; a signal may cut it short) and returns the
/// time that really passed, measured on CLOCK_MONOTONIC.
inline uint64_t sleep_ns(uint64_t ns) {
  uint64_t start = monotonic_ns();
  timespec ts{static_cast<time_t>(ns / 1'000'000'000u), static_cast<long>(ns % 1'000'000'000u)};
  raw_syscall6(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, reinterpret_cast<long>(&ts), 0);
  return monotonic_ns() - start;
}

/// The longest single sleep of a delay payment. A thread that slept 3 ms in
/// one go then ran ~14% slower for its next 0.5 ms of CPU than one that
/// never slept (1 ms: 1.5%; 3 ms in 0.5 ms slices: no loss; here, a VM:
/// a vCPU idle past the host's polling window is descheduled, and on bare
/// metal a long idle reaches deep C-states). The loss is progress the paused
/// thread never makes up, so it biased every high speedup of a line that
/// keeps another core busy: hot_no_effect's spinner, truly without effect,
/// read -8% at 90-100%, where a paused thread pays several ms at a time;
/// -5% in 0.5 ms slices, -4% in 0.2 ms ones. Much of the rest, -9% to -21%
/// in a Firecracker VM, was the sleeps' kernel time sampled: handlers now
/// pay with their sampler paused (pay_from_handler in sampler.cpp).
constexpr uint64_t max_sleep_slice_ns = 200'000;

/// Where the sleep slice that starts at `now` ends, for a payment due to end
/// at `end`: at most max_sleep_slice_ns later, never past `end`.
constexpr uint64_t sleep_slice_end(uint64_t now, uint64_t end) {
  return now + max_sleep_slice_ns < end ? now + max_sleep_slice_ns : end;
}

/// Sleeps about `ns` with the thread's timer slack at 1 ns for the call,
/// in slices of at most max_sleep_slice_ns ending at absolute times (their
/// lateness does not add up), and returns the time that really passed. A
/// signal ends it early. For delay payments: with the default slack (50 us)
/// a 0.5 ms payment ended ~90 us late here (~25 us with 1 ns), and a late
/// thread arrives late at locks and queues, which shrinks every virtual
/// speedup. The program's own slack is restored.
///
/// The time that passed counts the slack's getting and setting too (three
/// system calls, a few us in a VM): the thread made no progress then either.
inline uint64_t tight_sleep_ns(uint64_t ns) {
  const uint64_t start = monotonic_ns(), end = start + ns;
  long slack = raw_syscall6(SYS_prctl, PR_GET_TIMERSLACK);
  bool set = slack > 1 && raw_syscall6(SYS_prctl, PR_SET_TIMERSLACK, 1) == 0;
  for (uint64_t now = monotonic_ns(); now < end; now = monotonic_ns()) {
    const uint64_t until = sleep_slice_end(now, end);
    timespec ts{static_cast<time_t>(until / 1'000'000'000u), static_cast<long>(until % 1'000'000'000u)};
    if (raw_syscall6(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, reinterpret_cast<long>(&ts), 0) != 0) break;
  }
  if (set) raw_syscall6(SYS_prctl, PR_SET_TIMERSLACK, slack);
  return monotonic_ns() - start;
}

}  // namespace coz::sys
