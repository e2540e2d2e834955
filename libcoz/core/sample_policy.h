// How often samples are taken and how much ring holds them: the sampling
// policy of the runtime (libcoz/runtime/sampler.cpp), as functions of the
// configured period, the page size and whether a locked-memory limit
// applies, so that it can be tested without perf_event.
//
// Two kinds of rings: one drained by its thread's signal at every sample,
// and one that no signal drains (a quiet run's, or one that also takes
// kernel-time samples), which the profiler thread drains. The second kind
// must not fill between two drains, and the profiler thread must not wake
// for it more often than every min_unsignalled_drain_ns: at a short
// period, its samplers run at a multiple of the period instead, and each of
// their samples stands for that many periods.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>

#include "config.h"

namespace coz::sample_policy {

/// The longest sample record: header, IP, ABI, 3 registers, the stack's
/// size, the stack, and how much of it was copied.
constexpr uint64_t longest_record = sizeof(perf_event_header) + 7 * sizeof(uint64_t) + Config::stack_sample_bytes;

/// Drains per fill of a ring no signal drains. Its drains came up to 4x
/// late here: sleeps overshooting by 1-3 ms in this virtual machine, and the
/// munmap of a retired ring taking 1-6 ms. At 2, kernel-time rings lost
/// 3-22 samples in 1 run of scale in 8.
constexpr uint64_t unsignalled_drains_per_ring = 8;

/// The profiler thread drains the rings no signal drains at most this
/// often. It runs at real-time priority: at --period 10us it woke every 30
/// us for them and took the CPU from the program (a 40 ms program took 3 to
/// 66 s, and the threads' own drains, skipped while it held their rings,
/// lost millions of samples).
constexpr uint64_t min_unsignalled_drain_ns = 1'000'000;

/// What the rings are made of.
struct Memory {
  uint64_t page_size = 4096;
  /// The kernel counts the rings against a locked-memory limit (a user
  /// without CAP_IPC_LOCK; root has none).
  bool memlock_limited = false;
};

/// Data pages (a power of two) for a ring that holds `records` of the longest kind.
unsigned ring_pages_for(uint64_t records, uint64_t page_size);

/// Data pages per thread. A thread signalled per sample drains its ring at
/// each one: room for 15 records rides out late signals and a hurried
/// period (7 lost ~0.5% of the samples of short threads). A ring that no
/// signal drains holds 31. At 4 KiB of stack per sample, 64 or 128 KiB per
/// thread. Under a locked-memory limit, 3 and 7 (16 and 32 KiB): with the
/// larger rings, a user's ~9 MB ran out at 130 threads (two rings per
/// thread then).
unsigned ring_data_pages(bool unsignalled, const Memory& memory);

/// Sample periods a ring no signal drains holds per drain of the profiler
/// thread (unsignalled_drains_per_ring drains per fill; one per record
/// where the ring holds fewer records, as under a locked-memory limit).
uint64_t periods_per_unsignalled_drain(const Memory& memory);

/// The period of the samplers whose rings no signal drains: the configured
/// one, or the smallest multiple of it whose rings need draining at most
/// every min_unsignalled_drain_ns. Each of their samples stands for
/// unsignalled_period_ns / period configured periods.
uint64_t unsignalled_period_ns(uint64_t period_ns, const Memory& memory);

/// How often the profiler thread drains those rings.
uint64_t quiet_drain_interval_ns(uint64_t period_ns, const Memory& memory);

/// The kernel-time samplers take a sample per this many of their periods
/// (unsignalled_period_ns), each standing for that many more. Their event
/// is a task-clock like the user-time one: its timer fires at every period
/// of the thread's CPU time, in user mode too, where the sample is dropped.
/// In this virtual machine each timer costs the thread ~8 us (an empty
/// ring sampler at 100 us: +7.7% on two spinning threads), so at the same
/// period the kernel-time event doubled the timer cost of sampling for a
/// share of samples that is small in most programs (spinner, 1 ms: -1.0%
/// without it).
constexpr uint64_t kernel_period_multiple = 4;

/// The period of the kernel-time samplers.
uint64_t kernel_period_ns(uint64_t period_ns, const Memory& memory);

/// Data pages of each CPU's kernel-time ring (cpu_rings.h). There is one
/// per CPU, not one per thread, so it can hold more: 125 records (512 KiB),
/// or 62 beyond 64 CPUs (32 MiB in all on 64 or 128 CPUs). The profiler thread woke
/// every 3 ms for rings of 63 records (as often as for a thread's ring,
/// which holds half): ~330 times a second, each wake at real-time priority
/// taking a core from the program (mutex_crowd's lock holder, whose 63
/// waiters then slept: +70% context switches). Under a locked-memory
/// limit, twice a thread's ring, as before.
unsigned cpu_ring_data_pages(const Memory& memory, unsigned cpus);

/// How often the profiler thread drains the per-CPU rings, whose samplers
/// take a sample per `kernel_period_ns` of a CPU's time in the kernel at
/// most: unsignalled_drains_per_ring drains per fill, as for a thread's.
uint64_t cpu_ring_drain_interval_ns(uint64_t kernel_period_ns, const Memory& memory, unsigned cpus);
/// How often during an experiment: at every period of their samplers (no
/// sooner than min_unsignalled_drain_ns), since a kernel-time sample
/// credits its delay only when it is drained (unsignalled_drain_interval_ns
/// in sampler.cpp says what slower and faster drains did).
uint64_t cpu_ring_experiment_drain_interval_ns(uint64_t kernel_period_ns);

/// A thread sampled by a trap event asks how often it switches once per
/// this many of its samples (a getrusage in the handler: ~1 us per 32 ms).
constexpr uint32_t switch_check_samples = 32;

/// Whether a thread that switched `switches` times in `cpu_ns` of its CPU
/// time should trade its trap event for a CPU-time timer. The kernel
/// schedules a thread's perf_event out and in at every switch, its timer
/// cancelled and restarted, and in a virtual machine each costs ~2 us: on
/// memcached under load (~30,000 switches per CPU-second in its workers)
/// the traps cost 12-25% of the throughput, CPU-time timers ~4%. A timer is
/// checked on the scheduler's tick: nothing at a switch, but a sample only
/// every tick (4 ms at HZ=250), which reads low on threads that live or
/// hold locks for less than a few ticks (timer_sampling_caveat) and is
/// right on long-lived servers' threads (memcached's get line at 50%, its
/// workers on timers: +14.5% to +15.3% against +12.1% real, traps +17.5%
/// to +19.0%, per process). Above `rate` switches per second of CPU time
/// (0: never) the event costs the thread ~3% or more of it; the bench
/// programs switch 900 to 10,400 times per CPU-second, and keep their traps
/// but for three threads that block often on little CPU time (fork_join's
/// main, eventfd_pool's dispatcher, one of sync_pipeline's). Never on less
/// than switch_check_min_cpu_ns: a short stretch says little.
bool prefers_cpu_timer(uint64_t switches, uint64_t cpu_ns, uint64_t rate);

/// The least CPU time a look at a thread's switches covers; a look that
/// comes sooner (32 samples at a period shortened for an experiment) waits
/// for the next one.
constexpr uint64_t switch_check_min_cpu_ns = 20'000'000;

/// How many times faster than the configured period user-time samplers
/// sample at `current_ns` (an experiment that inserts delays shortens it).
/// Inline: every sample asks, on the sampling path.
inline uint64_t short_period_rate(uint64_t configured_ns, uint64_t current_ns) {
  if (current_ns == 0 || current_ns >= configured_ns) return 1;
  return configured_ns / current_ns;
}

/// Whether a thread's next sample at that rate enters the profile's counts:
/// one in `rate`, so that every count in the profile stays one per
/// configured period of CPU time, whenever it was taken. `counter` is the
/// thread's own (ThreadState::short_period_samples).
inline bool counted_in_profile(uint64_t rate, uint32_t& counter) { return rate == 1 || ++counter % rate == 0; }

}  // namespace coz::sample_policy
