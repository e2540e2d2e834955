// The sampler's two halves: sampler.cpp starts, moves and stops each
// thread's samplers and drains the rings no signal drains; sample_handler.cpp
// is the signal side (the sample handler and what it calls). What they share
// is here. Internal to libcoz/runtime.
#pragma once

#include <linux/perf_event.h>
#include <signal.h>

#include <atomic>
#include <cstdint>

namespace coz {

struct Runtime;
struct ThreadState;
struct UnwindFrame;

/// How many configured periods a kernel-time sample stands for
/// (sample_policy::kernel_period_ns); set by start_process_sampling, before
/// any sampler starts.
extern std::atomic<uint64_t> g_kernel_weight;

/// Whether each thread's trap event samples its time in the kernel too
/// (choose_trap_sampling): one event, one timer, and no per-CPU rings.
extern std::atomic<bool> g_trap_kernel;

/// Whether the rings of every process's time on each CPU are open
/// (sampler.cpp, g_whole_cpu).
bool whole_cpu_open();

/// What a sample stands for (record_sample).
enum class SampleSource {
  UserTime,     // a sampler of the thread's time, user mode only or both: one configured period
  KernelTime,   // a kernel-time sampler's, at kernel_period_ns: g_kernel_weight periods
  // One period taken inside a system call, tallied as the kernel's: a
  // trap's (g_trap_kernel), or a whole-CPU event's (drain_cpu_rings).
  PeriodInSyscall,
};

namespace sample_handler {

/// Sets a perf_event's sample period (the kernel restarts its countdown);
/// async-signal-safe.
bool set_period(int perf_fd, uint64_t period);
/// Stops the perf_event from signalling its thread on each sample (O_ASYNC off).
void stop_signals(int perf_fd);
/// Records one sample record of a ring (`with_tid`: a per-CPU ring's).
void handle_perf_sample(Runtime& rt, ThreadState& t, const perf_event_header& h, SampleSource source,
                        bool with_tid = false, UnwindFrame* walk = nullptr);
/// Consumes thread `t`'s ring; returns how many samples of its user time it found.
uint32_t drain_ring(Runtime& rt, ThreadState& t);
/// The handler of the sample signals (and of SIGTRAP: trap samplers, breakpoints).
void on_sample_signal(int sig, siginfo_t* info, void* context);
/// The program is Go's: live walks find its goroutines' stacks, through the
/// g in R14 or at `g_tls_offset` from the thread pointer (go_binary.h; 0:
/// unknown). Before any sampler starts.
void set_go_program(int64_t g_tls_offset);

}  // namespace sample_handler
}  // namespace coz
