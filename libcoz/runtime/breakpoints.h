// Progress points on unmodified programs (`coz run --progress FILE:LINE`,
// `--latency BEGIN END`): a hardware execute breakpoint per line and per
// thread, in counting mode (no signal per visit), summed by the profiler
// into ordinary progress-point counters.
#pragma once

#include <signal.h>

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
  std::atomic<uint64_t> trapped[max_breakpoints] = {};  // visits that came as a SIGTRAP (claim_breakpoint_trap)
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

/// Signal handler, for a SIGTRAP not raised by the runtime's samplers: true
/// if it is a hit of one of the breakpoints that the kernel sent to the
/// thread instead of counting it. In a VM the debug exception of a hit now
/// and then shows an empty DR6 (no breakpoint named): the kernel takes it
/// for an ICEBP and sends SIGTRAP (TRAP_BRKPT at the breakpoint's address),
/// which ended the program in 2-5 runs of 15 (robustness_test, stop 56). The
/// hit is counted and the instruction resumed past its breakpoint (the
/// resume flag, RF, in the context sigreturn restores).
bool claim_breakpoint_trap(Breakpoints& bps, const siginfo_t* info, void* context);

/// Profiler thread: sets each point's counter to the visits so far.
void refresh_breakpoint_counters(Runtime& rt);

}  // namespace coz
