// Unwinding cost: what one sample's stack walk costs, measured in this
// process on real stacks (through glibc's qsort, which has no frame
// pointers, at several depths), for the ways a walk could be done:
//
//   ours, live      the runtime's walk (libcoz/core/unwinder) over the live
//                   stack: what the timer fallback does in its handler
//   ours, copy      the same walk over a 4 KiB copy of the stack's top, the
//                   copy included: what a perf_event sample costs us after
//                   the kernel's own copy (PERF_SAMPLE_STACK_USER)
//   glibc backtrace libgcc's unwinder (.eh_frame_hdr search and CFA
//                   interpretation at every frame, dl_iterate_phdr under the
//                   loader lock): the usual alternative, not signal-safe
//
// Also the table building the runtime does at start-up for every loaded
// object (ObjectFrames::add_loaded).
#include <execinfo.h>
#include <fmt/format.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "config.h"
#include "object_frames.h"
#include "sections.h"
#include "unwinder.h"

namespace coz_bench {
namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
  return v[i];
}

struct Timings {
  std::vector<double> ours_live, ours_copy, backtrace_ns;
  size_t frames_ours = 0, frames_backtrace = 0;
};

coz::ObjectFrames* g_frames = nullptr;
Timings* g_timings = nullptr;
int g_rounds = 0;
bool g_measured = false;

uint64_t g_stack_low = 0, g_stack_high = 0;

/// Times the walks from inside this function (its frame must stay live).
__attribute__((noinline)) void measure_here() {
  static uint8_t copy[coz::Config::stack_sample_bytes];
  coz::UnwindFrame frames[coz::Config::max_unwind_frames];
  void* bt[coz::Config::max_unwind_frames];
  for (int r = 0; r < g_rounds; ++r) {
    coz::UnwindRegisters regs;
    asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(regs.ip), "=r"(regs.sp), "=r"(regs.bp));
    coz::UnwindStop stop;
    uint64_t t0 = now_ns();
    size_t n = coz::unwind(g_frames->tables(), regs, coz::StackMemory::live(g_stack_low, g_stack_high), frames,
                           std::size(frames), stop);
    uint64_t t1 = now_ns();
    size_t size = std::min<uint64_t>(sizeof copy, g_stack_high - regs.sp);
    std::memcpy(copy, reinterpret_cast<const void*>(regs.sp), size);
    size_t n_copy = coz::unwind(g_frames->tables(), regs, coz::StackMemory::copy(regs.sp, copy, size), frames,
                                std::size(frames), stop);
    uint64_t t2 = now_ns();
    int n_bt = backtrace(bt, static_cast<int>(std::size(bt)));
    uint64_t t3 = now_ns();
    g_timings->ours_live.push_back(static_cast<double>(t1 - t0));
    g_timings->ours_copy.push_back(static_cast<double>(t2 - t1));
    g_timings->backtrace_ns.push_back(static_cast<double>(t3 - t2));
    g_timings->frames_ours = std::max(n, n_copy);
    g_timings->frames_backtrace = static_cast<size_t>(n_bt);
  }
}

int compare_and_measure(const void* a, const void* b) {
  if (!g_measured) {
    g_measured = true;
    measure_here();
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

/// `depth` frames of our own, then qsort (libc), then the comparator.
__attribute__((noinline)) int descend(int depth) {
  if (depth > 0) {
    int r = descend(depth - 1);
    asm volatile("" ::: "memory");  // no tail call: every level keeps a frame
    return r + 1;
  }
  int values[32];
  for (int i = 0; i < 32; ++i) values[i] = (i * 7) % 32;
  qsort(values, 32, sizeof values[0], compare_and_measure);
  return values[0];
}

void stack_bounds() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* base = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &base, &size) == 0) {
    g_stack_low = reinterpret_cast<uint64_t>(base);
    g_stack_high = g_stack_low + size;
  }
  pthread_attr_destroy(&attr);
}

std::string ns(double v) { return std::isnan(v) ? "-" : fmt::format("{:.0f}", v); }

}  // namespace

Section measure_unwind(const Config& config) {
  Section section;
  section.title = "Unwinding: the cost of one sample's stack walk";
  section.load_before = load_average();
  progress("unwind: building frame tables and timing walks");

  uint64_t t0 = now_ns();
  auto* frames = new coz::ObjectFrames;  // lives for the process, as in the runtime
  char exe[4096] = {};
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  frames->add_loaded(len > 0 ? std::string(exe, static_cast<size_t>(len)) : "?", "/usr/lib/debug");
  double build_ms = static_cast<double>(now_ns() - t0) / 1e6;
  size_t rows = 0;
  for (const auto& t : frames->tables().tables()) rows += t.rows.size();
  g_frames = frames;
  stack_bounds();

  section.table.header = {"stack (frames walked: ours / backtrace)", "ours, live: median / p99 ns",
                          "ours, 4 KiB copy: median / p99 ns", "glibc backtrace(): median / p99 ns",
                          "backtrace / ours (median)"};
  g_rounds = config.quick ? 2000 : 20000;
  double worst_median = 0;
  for (int depth : {0, 10, 40}) {
    Timings timings;
    g_timings = &timings;
    g_measured = false;
    descend(depth);
    double live = percentile(timings.ours_live, 0.5), copy = percentile(timings.ours_copy, 0.5);
    double bt = percentile(timings.backtrace_ns, 0.5);
    worst_median = std::max(worst_median, copy);
    section.table.rows.push_back(
        {fmt::format("qsort comparator under {} frames of the program ({} / {})", depth, timings.frames_ours,
                     timings.frames_backtrace),
         ns(live) + " / " + ns(percentile(timings.ours_live, 0.99)),
         ns(copy) + " / " + ns(percentile(timings.ours_copy, 0.99)),
         ns(bt) + " / " + ns(percentile(timings.backtrace_ns, 0.99)), fmt::format("{:.1f}x", bt / live)});
  }
  section.load_after = load_average();
  section.notes.push_back(fmt::format(
      "Frame tables for the {} objects loaded in the harness ({} rows, 12 bytes each) built in {:.1f} ms; the "
      "runtime builds the same at start-up for every loaded object (`coz run -v` prints its time).",
      frames->objects(), rows, build_ms));
  section.notes.push_back(
      "Each walk starts inside a qsort comparator and goes to the stack's first frame (_start): qsort's frames "
      "are glibc's, without frame pointers. ours, live = the timer fallback's walk; ours, copy = a 4 KiB copy "
      "of the stack top plus the walk, which is what the runtime does per perf_event sample after the kernel "
      "copied the stack into the ring (the kernel's copy itself shows in the overhead table).");
  section.notes.push_back(
      "glibc backtrace() (libgcc's unwinder) is the usual alternative; it cannot run in a signal handler "
      "(dl_iterate_phdr takes the loader lock; the first call allocates), so it is here for scale only.");
  section.targets.push_back({"one sample's walk (4 KiB copy + walk, median, deepest stack) under 5 us",
                             ns(worst_median) + " ns", pass_miss(worst_median < 5000)});
  return section;
}

}  // namespace coz_bench
