#include "breakpoints.h"

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include <cstring>

#include "descriptors.h"
#include "file_line.h"
#include "runtime.h"
#include "sys.h"
#include "thread_registry.h"

namespace coz {
namespace {

/// "FILE:LINE" -> the line's first address.
uintptr_t resolve(Runtime& rt, const std::string& spec, std::string& error) {
  auto where = parse_file_line(spec);
  if (!where) {
    error = spec + ": expected FILE:LINE";
    return 0;
  }
  SourceLine* line = rt.lines.find_line(where->file, where->line);
  uintptr_t address = line ? rt.lines.first_address(line) : 0;
  if (!address) error = spec + ": no code at that line in the binaries in scope";
  return address;
}

bool add(Runtime& rt, const std::string& spec, coz_counter_t* counter, std::string& error) {
  Breakpoints& bps = rt.breakpoints;
  if (bps.count == max_breakpoints) {
    error = "at most 4 lines can be counted with --progress and --latency (the CPU has 4 debug registers)";
    return false;
  }
  uintptr_t address = resolve(rt, spec, error);
  if (!address) return false;
  bps.address[bps.count] = address;
  bps.counter[bps.count] = counter;
  bps.count++;
  return true;
}

uint64_t read_count(int fd) {
  uint64_t value = 0;
  return sys::read(fd, &value, sizeof value) == static_cast<ssize_t>(sizeof value) ? value : 0;
}

}  // namespace

bool resolve_breakpoints(Runtime& rt, std::string& error) {
  for (const auto& spec : rt.config.progress_lines) {
    ProgressPoint& p = rt.points.add(spec, ProgressPoint::Kind::Throughput);
    if (!add(rt, spec, p.begin->abi(), error)) return false;
  }
  for (size_t i = 0; i + 1 < rt.config.latency_lines.size(); i += 2) {
    const std::string& begin = rt.config.latency_lines[i];
    const std::string& end = rt.config.latency_lines[i + 1];
    ProgressPoint& p = rt.points.add(begin + ".." + end, ProgressPoint::Kind::Latency);
    rt.breakpoints.has_latency = true;
    if (!add(rt, begin, p.begin->abi(), error) || !add(rt, end, p.end->abi(), error)) return false;
  }
  return true;
}

bool open_thread_breakpoints(const Breakpoints& bps, ThreadState& t, std::string& error) {
  for (int i = 0; i < bps.count; ++i) {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_BREAKPOINT;
    attr.bp_type = HW_BREAKPOINT_X;
    attr.bp_addr = bps.address[i];
    attr.bp_len = sizeof(long);
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    long fd = sys::raw_syscall6(SYS_perf_event_open, reinterpret_cast<long>(&attr), 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
      error = std::string("hardware breakpoints are unavailable (") + std::strerror(static_cast<int>(-fd)) +
              "): --progress and --latency need them";
      return false;
    }
    // Read by the profiler thread while the thread lives: out of the program's reach (descriptors.h).
    t.breakpoint_fd[i] = descriptors::adopt(static_cast<int>(fd));
  }
  return true;
}

void close_thread_breakpoints(Breakpoints& bps, ThreadState& t) {
  for (int i = 0; i < bps.count; ++i) {
    if (t.breakpoint_fd[i] < 0) continue;
    bps.exited[i].fetch_add(read_count(t.breakpoint_fd[i]), std::memory_order_relaxed);
    descriptors::close_own(t.breakpoint_fd[i]);
    t.breakpoint_fd[i] = -1;
  }
}

void forget_thread_breakpoints(ThreadState& t) {
  for (int& fd : t.breakpoint_fd) {
    descriptors::close_own(fd);
    fd = -1;
  }
}

bool claim_breakpoint_trap(Breakpoints& bps, const siginfo_t* info, void* context) {
  if (info->si_code != TRAP_BRKPT && info->si_code != TRAP_HWBKPT) return false;
  auto* uc = static_cast<ucontext_t*>(context);
  const auto ip = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  for (int i = 0; i < bps.count; ++i) {
    if (bps.address[i] != ip) continue;
    bps.trapped[i].fetch_add(1, std::memory_order_relaxed);
    constexpr greg_t resume_flag = 1 << 16;  // X86_EFLAGS_RF: the instruction's own breakpoint does not fire again
    uc->uc_mcontext.gregs[REG_EFL] |= resume_flag;
    return true;
  }
  return false;
}

void refresh_breakpoint_counters(Runtime& rt) {
  Breakpoints& bps = rt.breakpoints;
  if (bps.count == 0) return;
  uint64_t totals[max_breakpoints];
  for (int i = 0; i < bps.count; ++i) {
    totals[i] = bps.exited[i].load(std::memory_order_relaxed) + bps.trapped[i].load(std::memory_order_relaxed);
  }
  for_each_thread([&](ThreadState& t) {
    for (int i = 0; i < bps.count; ++i) {
      if (t.breakpoint_fd[i] >= 0) totals[i] += read_count(t.breakpoint_fd[i]);
    }
  });
  for (int i = 0; i < bps.count; ++i) __atomic_store_n(&bps.counter[i]->count, totals[i], __ATOMIC_RELAXED);
}

}  // namespace coz
