// Progress points on unmodified programs (`coz run --progress FILE:LINE`,
// `--latency BEGIN END`): a hardware execute breakpoint per line and per
// thread, in counting mode (no signal per visit), summed by the profiler
// into ordinary progress-point counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "progress_points.h"

namespace coz {

struct Runtime;
struct ThreadState;

/// x86-64 has four debug registers per thread.
constexpr int max_breakpoints = 4;

struct Breakpoints {
  int count = 0;
  bool has_latency = false;  // the in-flight average needs counts between experiment ends too
  uintptr_t address[max_breakpoints] = {};
  coz_counter_t* counter[max_breakpoints] = {};       // the point counter each one feeds
  std::atomic<uint64_t> exited[max_breakpoints] = {};  // visits by threads that have exited
};

/// Resolves COZ_PROGRESS_LINES / COZ_LATENCY_LINES to addresses and creates
/// their progress points. False with `error` for a line without code or too
/// many lines.
bool resolve_breakpoints(Runtime& rt, std::string& error);

/// Opens the calling thread's breakpoints. False if the kernel refuses them.
bool open_thread_breakpoints(const Breakpoints& bps, ThreadState& t, std::string& error);
/// At thread exit: keeps the thread's counts and closes its breakpoints.
void close_thread_breakpoints(Breakpoints& bps, ThreadState& t);
/// In a forked child: the inherited descriptors count the parent's thread.
void forget_thread_breakpoints(ThreadState& t);

/// Profiler thread: sets each point's counter to the visits so far.
void refresh_breakpoint_counters(Runtime& rt);

}  // namespace coz
