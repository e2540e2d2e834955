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

/// How often during an experiment the profiler thread drains the
/// whole-CPU rings (sampler.cpp, g_whole_cpu), whose samples credit their
/// delays when drained: every 4 ms, as late as the tick that a CPU-time
/// timer's samples came on, which read as right as the traps for the
/// threads that move (woken from outside: nghttpd's loops, memcached's
/// workers). Not at every period, as the kernel-time rings are: each drain
/// wakes the profiler thread at real-time priority, which takes a core from
/// the program; drained every 1 ms, nghttpd's sampling alone cost +3.5%
/// (traps +5.3%).
constexpr uint64_t whole_cpu_experiment_drain_ns = 4'000'000;

/// The shortest sampling period a machine affords, from `requested_ns`
/// doubled until one expiry of the task clock's timer, costing `expiry_ns`
/// of the sampled thread's CPU time, takes at most 1/max_expiry_share of
/// the period in force during experiments (the period over
/// `delay_sampling_rate`, Config); never lengthened past `ceiling_ns` (a
/// period at or above it is kept). The kernel counts that cost in the
/// thread's CPU time, so a timer that costs about its period restarts as
/// soon as it ends: in a Firecracker VM (Linux 6.18, AMD EPYC) each expiry
/// took ~15 us, and a two-thread program of 40 ms of CPU time took 1-13 s at
/// --period 10us, 0.1 s at 1 ms (tools/coz/period_floor.cpp measures it).
constexpr uint64_t max_expiry_share = 4;
uint64_t affordable_period_ns(uint64_t requested_ns, uint64_t expiry_ns, uint64_t ceiling_ns,
                              unsigned delay_sampling_rate);

/// A thread sampled by a trap event asks how often it switches once per
/// this many of its samples (a getrusage in the handler: ~1 us per 32 ms).
constexpr uint32_t switch_check_samples = 32;

/// What a thread did between two looks at it (ThreadState): its context
/// switches, the voluntary ones among them, how many of those were waits
/// for a mutex another thread held, and how many were the runtime's own
/// sleeps paying a delay, in `cpu_ns` of its CPU time. While it sorts its
/// waits (SwitchVerdict::SortWaits), also how many of the waits it blocked
/// in only something outside the program could end (wake_origin.h: a TCP
/// client of a server, a terminal), and how many a thread of the program
/// could (a pipe, an eventfd, a condition variable).
struct SwitchStretch {
  uint64_t switches = 0;
  uint64_t voluntary = 0;
  uint64_t lock_waits = 0;
  uint64_t delay_sleeps = 0;
  uint64_t outside_waits = 0;
  uint64_t program_waits = 0;
  uint64_t cpu_ns = 0;
};

/// A wait that lasted less did not block (the call returned at once, a
/// switch and a wake-up take longer): a thread sorting its waits does not
/// count it.
constexpr uint64_t blocked_wait_min_ns = 5'000;

/// A thread's lock waits keep it on its trap event only when at least one
/// in this many of its switches is one. lock_contention's workers: 1 in 1.6
/// (median look) plain, 1 in 3.3 beside two busy loops (the preemptions
/// grow with the machine's load), 1 in 8 in their sparsest look of either;
/// memcached's workers on Linux 6.18, which
/// the scheduler preempts for the clients they wake: 1 in several hundred
/// (one lock wait among 1-10 voluntary switches and ~400 preemptions in
/// a 32-ms look), which kept a worker on its event at stop 43's start, at
/// +14% of its throughput against +2.5% with every thread on its timer.
constexpr uint64_t lock_wait_share_of_switches = 32;

/// A thread above the `hardly_waiting` rate that makes at most this many
/// voluntary switches per second of its CPU time (one per 4-ms tick at
/// HZ=250, Debian's) is preempted, not handing work on: it moves to its
/// timer, whoever woke it (switch_verdict). memcached's workers under load
/// on Linux 6.18: ~12,000 preemptions per CPU-second and ~15 voluntary
/// switches; their few waits, sorted, decided nothing in most looks, and a
/// worker left on its trap event paid at every preemption.
constexpr uint64_t rare_waits_per_cpu_second = 250;

/// Context switches per second of CPU time above which a thread leaves its
/// trap event (0: never): `any` whatever woke it, `outside` when mostly
/// something outside the program did (0 where no whole-CPU event can
/// sample it), `hardly_waiting` when it hardly ever waits
/// (rare_waits_per_cpu_second).
struct SwitchRates {
  uint64_t any = 0;
  uint64_t outside = 0;
  uint64_t hardly_waiting = 0;
};

/// What a look at a thread's switches decides (switch_verdict).
enum class SwitchVerdict {
  KeepEvent,
  /// Above the `outside` rate, but who ends its waits is not known yet: the
  /// thread sorts the waits it blocks in by who could end them until the
  /// next look (a descriptor's kind, looked up once: ~0.1-0.2 us a wait).
  SortWaits,
  /// Above the `any` rate: a CPU-time timer samples it, on the tick.
  MoveToTimer,
  /// Above the `outside` rate, its waits mostly the outside's: the
  /// whole-CPU events sample it (sampler.cpp, g_whole_cpu), and a CPU-time
  /// timer pays its delays.
  MoveToWholeCpu,
};

/// Whether a thread should leave its trap event, and for what, from what
/// its program made it do in `stretch` (the delay sleeps are the
/// profiler's, not the program's: during an experiment they would count).
///
/// The kernel schedules a thread's perf_event out and in at every switch,
/// its timer cancelled and restarted, and in a virtual machine a restart
/// before the next tick reprograms the local timer (an exit to the
/// hypervisor): two threads passing a byte through pipes on one core took
/// 6.2 us a turn plain, 9.4 us with a trap event at 100 ms, 15.5 us at 1 ms,
/// so ~4.5 us a switch at the default period. memcached's workers under
/// load switch ~30,000 times per CPU-second: the traps cost its throughput
/// 12-25%, CPU-time timers ~4%. nghttpd's event loops switch 3,400-5,200
/// times: +5.5% on traps, +0.9% on timers.
///
/// A timer is checked on the scheduler's tick: nothing at a switch, but a
/// sample only at a tick (4 ms at HZ=250), crediting several periods'
/// delays at once. That reads low wherever the line runs for less than a
/// tick between hand-offs to other threads of the program: eventfd_pool's
/// workers (0.6 ms tasks, 4,000-15,000 switches per CPU-second) read +37.4%
/// on timers, +47.7% on traps, for +48.8% real; lock_contention's 0.75 ms
/// holds +35.5% for ~50%. It is right where the work comes from outside
/// (memcached's get line at 50%, its workers on timers: +14.5% to +15.3%
/// against +12.1% real, traps +17.5% to +19.0%, per process): no thread of
/// the program waits on the delays a sample credits late. Hence two rates:
/// `rates.any`, above the pools' and below the servers', whoever wakes the
/// thread; and `rates.outside`, below the event loops', for a thread that
/// sorted its waits and found at least half of its voluntary switches, and
/// three times as many as the program's, were waits only the outside could
/// end. Those are sampled by whole-CPU events, as finely as by their traps
/// (the tick's samples slowed the experiments' answers on nghttpd,
/// Config::timer_switch_rate_outside). Those that move at `any` stay on the
/// tick, measured right there (memcached's workers); on whole-CPU events
/// too, memcached's sendmsg line overtook its injected get line (re-tested
/// +17.5% against +4.6% on the tick, on Linux 6.1), and its measured
/// slowdown bears that ranking out (bench/real/memcached.py, "send
/// slower"). So does a thread above `hardly_waiting` that hardly waits
/// (rare_waits_per_cpu_second): its lines run a tick and more between its
/// waits, where the tick reads them right, and every preemption costs its
/// event. A thread whose switches are mostly a lock's hand-offs keeps
/// its event at any rate: a quarter of its voluntary switches, and one in
/// lock_wait_share_of_switches of all of them. Never on less than
/// switch_check_min_cpu_ns: a short stretch says little.
SwitchVerdict switch_verdict(const SwitchStretch& stretch, SwitchRates rates);

/// A thread leaves its trap event for good, so only when this many looks
/// in a row say it should (the last one says for what). One look covers
/// 32 samples: lock_contention's workers beside two busy loops made, in
/// one look in ~50, 5-7 voluntary switches per lock wait instead of 2-3
/// (a waiter woken, the mutex taken again, asleep again), and a single
/// look moved 1-2 of its 4 workers per run at COZ_TIMER_SWITCH_RATE=1;
/// no worker had two such looks in a row.
constexpr uint32_t looks_before_a_move = 2;

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
