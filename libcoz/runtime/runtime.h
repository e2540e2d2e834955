// The runtime's shared state, created once when libcoz.so is loaded and never
// destroyed (threads may still take samples while the process exits).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "breakpoints.h"
#include "config.h"
#include "conventional.h"
#include "delay.h"
#include "line_map.h"
#include "object_frames.h"
#include "profile_writer.h"
#include "progress_points.h"
#include "request_latency.h"
#include "futex_lock.h"
#include "sys.h"
#include "system_shared.h"
#include "wake_board.h"

namespace coz {

/// What the sampling path needs to know about the experiment in progress.
struct ExperimentState {
  std::atomic<SourceLine*> selected{nullptr};      // null between experiments
  std::atomic<uint64_t> selected_samples{0};
  /// The experiment requests are measured in (request_latency.h): a new
  /// number as each begins, 0 from just before it ends until the next.
  std::atomic<uint64_t> request_window{0};
};

struct SamplingStats {
  std::atomic<uint64_t> samples{0};
  std::atomic<uint64_t> unattributed{0};  // no frame of the walked stack in scope
  std::atomic<uint64_t> kernel_samples{0};       // part of `samples`: in system calls (start_kernel_sampling)
  std::atomic<uint64_t> unattributed_kernel{0};  // part of `unattributed`: in system calls
  std::atomic<uint64_t> lost{0};          // dropped by the kernel (ring full)
  std::atomic<uint64_t> lost_kernel{0};   // part of `lost`: of the kernel-time sampler
  /// Counted samples by why their stack walk ended (UnwindStop); Outermost
  /// also counts walks that found as many in-scope frames as a stack keeps.
  std::atomic<uint64_t> unwind_stops[5] = {};
  /// Threads that left their trap event, switching too often for it
  /// (sample_policy::switch_verdict): for a CPU-time timer's samples, or for
  /// the whole-CPU events' (woken mostly from outside).
  std::atomic<uint64_t> threads_on_timers{0};
  std::atomic<uint64_t> threads_on_whole_cpu{0};

  /// Counted samples attributed to an in-scope line.
  uint64_t in_scope() const {
    uint64_t all = samples.load(std::memory_order_relaxed);
    return all - std::min(all, unattributed.load(std::memory_order_relaxed));
  }

  /// Every count back to zero (a forked child's counts start afresh).
  void reset() {
    for (auto* count : {&samples, &unattributed, &kernel_samples, &unattributed_kernel, &lost, &lost_kernel}) {
      count->store(0, std::memory_order_relaxed);
    }
    for (auto& count : unwind_stops) count.store(0, std::memory_order_relaxed);
    threads_on_timers.store(0, std::memory_order_relaxed);
    threads_on_whole_cpu.store(0, std::memory_order_relaxed);
  }
};

struct Runtime {
  Config config;
  LineMap lines;
  /// Every loaded object's call-frame information, for the sampling path's
  /// stack walks; extended with the line map, under lines_lock.
  ObjectFrames frames;
  /// Adding an object (dlopen, any thread) vs walking every line (profiler
  /// thread): a deque's iterators do not survive push_back. Lookups need no
  /// lock: lines never move, and find() reads a published table.
  FutexLock lines_lock;
  DelayLedger ledger{&sys::tight_sleep_ns};
  ProgressPoints points;
  ProfileWriter writer;
  ExperimentState experiment;
  SamplingStats stats;
  Breakpoints breakpoints;  // --progress / --latency lines
  StackTable stacks;
  BlockedTable blocked;
  WakeBoard wakes;  // wakes through descriptors and signals, for the woken to claim
  KeyedRequests keyed_requests;  // COZ_BEGIN_KEY's requests in flight (runtime/requests.h)
  /// `coz run --system`: what every process of the run shares (the ledger's
  /// counts, the progress points and the board of wakes between processes
  /// live there); nullptr otherwise.
  SystemShared* system = nullptr;
  ProcessSlot* system_slot = nullptr;  // this process's, in `system`
  std::atomic<SourceLine*> fixed_line{nullptr};  // set late when its library is dlopen'ed
  /// The period threads sample at now: config.sample_period_ns, or a
  /// fraction of it while an experiment inserts delays (set_sample_period).
  std::atomic<uint64_t> sample_period_ns{0};
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC at start-up
  uint64_t start_steal_ns = 0;  // sys::machine_steal_ns() at start-up
  bool sampling_enabled = true;
  /// Threads are sampled and no experiment of this run can insert delays
  /// (--fixed-speedup 0), so no sample needs handling at once: perf_event
  /// threads take no signal per sample, and the profiler thread drains their
  /// rings (drain_unsignalled_rings). Decided once sampling_enabled is final:
  /// with nothing sampled there is no ring to drain.
  bool quiet_sampling = false;
};

namespace detail {
// Set once the runtime is ready (runtime.cpp). Inline, as runtime() is on
// every wrapper's path.
inline std::atomic<Runtime*> g_runtime{nullptr};
}  // namespace detail

/// The runtime, once it is ready to take samples; nullptr before that, or if
/// profiling is off in this process. Async-signal-safe.
inline Runtime* runtime() { return detail::g_runtime.load(std::memory_order_acquire); }

/// After dlopen: maps the newly loaded objects that are in scope.
void on_library_loaded();

}  // namespace coz
