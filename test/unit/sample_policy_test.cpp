// The runtime's sampling policy (sample_policy.h): ring sizes, the period of
// the samplers no signal drains, and the counting of samples taken at a
// shortened period.
#include "sample_policy.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace coz::sample_policy {
namespace {

constexpr uint64_t us = 1'000;
constexpr uint64_t ms = 1'000'000;
const Memory root{4096, false};
const Memory limited{4096, true};

TEST(SamplePolicy, RingsHoldTheirRecordsInAPowerOfTwoOfPages) {
  EXPECT_EQ(ring_pages_for(1, 4096), 2u) << "one record is a little over a page";
  for (uint64_t records : {1, 3, 7, 15, 31}) {
    const unsigned pages = ring_pages_for(records, 4096);
    EXPECT_EQ(pages & (pages - 1), 0u) << records;
    EXPECT_GE(pages * 4096, records * longest_record) << records;
    EXPECT_LT((pages / 2) * 4096, records * longest_record) << records << ": the smallest that fits";
  }
  EXPECT_EQ(ring_data_pages(false, root), 16u);  // 64 KiB
  EXPECT_EQ(ring_data_pages(true, root), 32u);   // 128 KiB
  EXPECT_EQ(ring_data_pages(false, limited), 4u);
  EXPECT_EQ(ring_data_pages(true, limited), 8u);
}

TEST(SamplePolicy, ARingNoSignalDrainsNeverFillsBetweenDrains) {
  for (const Memory& memory : {root, limited}) {
    const uint64_t per_drain = periods_per_unsignalled_drain(memory);
    const uint64_t fit = memory.page_size * ring_data_pages(true, memory) / longest_record;
    EXPECT_GE(per_drain, 1u);
    // Room for every drain to come late: 8 drains per fill, or one per
    // record where the ring holds fewer (7 under a locked-memory limit).
    EXPECT_GE(fit / per_drain, std::min<uint64_t>(unsignalled_drains_per_ring, fit));
  }
}

TEST(SamplePolicy, TheProfilerThreadDrainsAtMostEveryMillisecond) {
  for (const Memory& memory : {root, limited}) {
    for (uint64_t period : {10 * us, 20 * us, 50 * us, 100 * us, 500 * us, 1 * ms, 10 * ms}) {
      const uint64_t slow = unsignalled_period_ns(period, memory);
      EXPECT_EQ(slow % period, 0u) << period << ": each of its samples stands for whole periods";
      EXPECT_GE(slow, period);
      EXPECT_GE(quiet_drain_interval_ns(period, memory), min_unsignalled_drain_ns) << period;
      const uint64_t weight = slow / period;
      if (weight > 1) {  // no slower than it must be: one period less would drain too often
        EXPECT_LT((weight - 1) * period * periods_per_unsignalled_drain(memory), min_unsignalled_drain_ns) << period;
      }
    }
  }
  EXPECT_EQ(unsignalled_period_ns(1 * ms, root), 1 * ms) << "the default period is kept";
}

TEST(SamplePolicy, EachCpusKernelTimeRingIsDrainedLessOftenThanAThreadsRing) {
  for (unsigned cpus : {1u, 2u, 64u, 65u, 256u}) {
    const unsigned pages = cpu_ring_data_pages(root, cpus);
    EXPECT_EQ(pages & (pages - 1), 0u) << cpus;
    EXPECT_GE(pages, 2 * ring_data_pages(true, root)) << cpus;
    EXPECT_LE(uint64_t{pages} * 4096 * std::min(cpus, 128u), 32u << 20) << cpus << " CPUs: 32 MiB in all at most";
    const uint64_t fit = 4096 * pages / longest_record;
    const uint64_t interval = cpu_ring_drain_interval_ns(1 * ms, root, cpus);
    EXPECT_GE(interval, quiet_drain_interval_ns(1 * ms, root)) << cpus;
    // One sample per period of kernel time at most: the ring takes
    // unsignalled_drains_per_ring drains to fill, as a thread's does.
    EXPECT_GE(fit * ms / interval, unsignalled_drains_per_ring) << cpus;
  }
  EXPECT_EQ(cpu_ring_data_pages(root, 2), 128u);  // 512 KiB
  EXPECT_GE(cpu_ring_drain_interval_ns(1 * ms, root, 2), 15 * ms) << "not every 3 ms, as for a thread's ring";
  EXPECT_EQ(cpu_ring_data_pages(limited, 2), 2 * ring_data_pages(true, limited)) << "as before under a limit";
  EXPECT_GE(cpu_ring_drain_interval_ns(1 * ms, limited, 2), quiet_drain_interval_ns(1 * ms, limited));
}

// During an experiment the per-CPU rings are drained as often as they can
// take a sample (their delays are credited when drained): 4 ms at the
// default period, not the 60 ms it takes them to fill; never more often
// than the profiler thread may wake for them.
TEST(SamplePolicy, CpuRingsAreDrainedAtTheirPeriodDuringExperiments) {
  for (uint64_t period : {10 * us, 100 * us, 1 * ms, 10 * ms}) {
    const uint64_t kernel = kernel_period_ns(period, root);
    const uint64_t during = cpu_ring_experiment_drain_interval_ns(kernel);
    EXPECT_EQ(during, std::max(kernel, min_unsignalled_drain_ns)) << period;
    EXPECT_LE(during, cpu_ring_drain_interval_ns(kernel, root, 2)) << period;
  }
  EXPECT_EQ(cpu_ring_experiment_drain_interval_ns(kernel_period_ns(1 * ms, root)), 4 * ms);
  EXPECT_EQ(cpu_ring_experiment_drain_interval_ns(100 * us), min_unsignalled_drain_ns);
}

namespace {
constexpr SwitchRates default_rates{.any = 15'000, .outside = 2'000, .hardly_waiting = 2'000};

/// `switches` voluntary switches in 32 ms of CPU time, `lock_waits` of them
/// a mutex's hand-offs and `delay_sleeps` the runtime's; no wait sorted.
bool prefers(uint64_t switches, uint64_t lock_waits = 0, uint64_t delay_sleeps = 0, uint64_t cpu_ns = 32 * ms,
             SwitchRates rates = default_rates) {
  return switch_verdict(SwitchStretch{.switches = switches, .voluntary = switches, .lock_waits = lock_waits,
                                      .delay_sleeps = delay_sleeps, .cpu_ns = cpu_ns},
                        rates) == SwitchVerdict::MoveToTimer;
}

/// `switches` voluntary switches in 32 ms of CPU time, of which the thread
/// found `outside` waits only the outside could end and `program` waits the
/// program could, and `lock_waits` a mutex's hand-offs.
SwitchVerdict sorted(uint64_t switches, uint64_t outside, uint64_t program, uint64_t lock_waits = 0,
                     SwitchRates rates = default_rates) {
  return switch_verdict(SwitchStretch{.switches = switches, .voluntary = switches, .lock_waits = lock_waits,
                                      .outside_waits = outside, .program_waits = program, .cpu_ns = 32 * ms},
                        rates);
}
}  // namespace

TEST(SamplePolicy, ThreadsThatSwitchOftenPreferCpuTimers) {
  // memcached's workers under load: ~30,000 switches per second of CPU time.
  EXPECT_TRUE(prefers(960));
  // The bench programs: 900 to 10,400; nghttpd's event loops 3,400-5,200.
  EXPECT_FALSE(prefers(333));
  EXPECT_FALSE(prefers(29));
  // At the threshold itself, not above it.
  EXPECT_FALSE(prefers(480));
  EXPECT_TRUE(prefers(481));
  // Involuntary switches cost the event as much: they count.
  EXPECT_EQ(switch_verdict(SwitchStretch{.switches = 960, .voluntary = 0, .cpu_ns = 32 * ms}, default_rates),
            SwitchVerdict::MoveToTimer);
  // Too little CPU time to tell; and never where both rates are 0.
  EXPECT_FALSE(prefers(1'000, 0, 0, 10 * ms));
  EXPECT_FALSE(prefers(1'000'000, 0, 0, 32 * ms, {}));
  // No overflow at a long-lived thread's counts.
  EXPECT_TRUE(prefers(uint64_t{1} << 40, 0, 0, uint64_t{1} << 50, {.any = 1}));
}

TEST(SamplePolicy, ThreadsWokenFromOutsideMoveAtALowerRate) {
  // nghttpd's event loops: ~4,000 switches per CPU-second, nearly all of
  // them epoll_waits that only its clients' sockets end.
  EXPECT_EQ(sorted(130, 120, 0), SwitchVerdict::MoveToWholeCpu);
  // Until it has sorted its waits, a thread above the lower rate sorts them.
  EXPECT_EQ(sorted(130, 0, 0), SwitchVerdict::SortWaits);
  // eventfd_pool's workers: their waits are the program's hand-offs.
  EXPECT_EQ(sorted(300, 0, 280), SwitchVerdict::SortWaits);
  // Under the lower rate nothing moves, or sorts; above the higher one,
  // whatever woke it.
  EXPECT_EQ(sorted(60, 60, 0), SwitchVerdict::KeepEvent);
  EXPECT_EQ(sorted(481, 0, 481), SwitchVerdict::MoveToTimer);
  // Above the higher rate, woken from outside or not, the tick's timer
  // samples it, not the whole-CPU events (memcached's workers: they cost it more).
  EXPECT_EQ(sorted(481, 481, 0), SwitchVerdict::MoveToTimer);
  // The outside's waits must be three times the program's...
  EXPECT_EQ(sorted(136, 101, 34), SwitchVerdict::SortWaits);
  EXPECT_EQ(sorted(136, 102, 34), SwitchVerdict::MoveToWholeCpu);
  // ...and at least half of its voluntary switches: the rest may be waits
  // that were never sorted (a write to a full pipe, a futex through syscall).
  EXPECT_EQ(sorted(130, 64, 0), SwitchVerdict::SortWaits);
  EXPECT_EQ(sorted(130, 65, 0), SwitchVerdict::MoveToWholeCpu);
  // A lock's hand-offs count for the program, and a quarter of them keep the event.
  EXPECT_EQ(sorted(130, 92, 0, 31), SwitchVerdict::SortWaits);
  EXPECT_EQ(sorted(130, 93, 0, 31), SwitchVerdict::MoveToWholeCpu);
  EXPECT_EQ(sorted(130, 100, 0, 33), SwitchVerdict::KeepEvent);
  // No lower rate: only the higher one moves a thread.
  EXPECT_EQ(sorted(130, 130, 0, 0, {.any = 15'000}), SwitchVerdict::KeepEvent);
}

TEST(SamplePolicy, TheProgramsOwnSwitchesDecideNotTheRuntimes) {
  // Switches that are a contended mutex's hand-offs keep the event, however
  // many: its lock holds are shorter than the timer's tick. A waiter may
  // sleep several times per wait (lock_contention: 2-3), so a quarter of
  // the voluntary switches is enough to tell.
  EXPECT_FALSE(prefers(960, 240));
  EXPECT_FALSE(prefers(960, 900));
  EXPECT_TRUE(prefers(960, 239));
  // The runtime's sleeps paying a delay are not the program's switches:
  // 300 of the program's own (9,400 per CPU-second) stay on the event...
  EXPECT_FALSE(prefers(900, 0, 600));
  EXPECT_TRUE(prefers(1'200, 0, 600));
  // ...and a lock's share is of the program's voluntary switches.
  EXPECT_FALSE(prefers(1'200, 150, 600));
  EXPECT_TRUE(prefers(1'200, 149, 600));
  // More sleeps than switches counted (a sleep too short to block): none left.
  EXPECT_FALSE(prefers(100, 0, 600));
}

TEST(SamplePolicy, LockWaitsKeepTheEventOnlyAsAShareOfAllSwitches) {
  auto verdict = [](uint64_t switches, uint64_t voluntary, uint64_t lock_waits, uint64_t outside = 0) {
    return switch_verdict(SwitchStretch{.switches = switches, .voluntary = voluntary, .lock_waits = lock_waits,
                                        .outside_waits = outside, .cpu_ns = 32 * ms},
                          default_rates);
  };
  // memcached's workers on Linux 6.18, preempted for the clients they wake:
  // one lock wait among their 3 voluntary switches does not keep them.
  EXPECT_EQ(verdict(960, 3, 1), SwitchVerdict::MoveToTimer);
  EXPECT_EQ(verdict(384, 3, 1), SwitchVerdict::MoveToTimer);
  // One switch in 32 a lock wait, a quarter of the voluntary ones: kept.
  EXPECT_EQ(verdict(960, 120, 30), SwitchVerdict::KeepEvent);
  EXPECT_EQ(verdict(961, 120, 30), SwitchVerdict::MoveToTimer);
  // lock_contention's workers beside two busy loops: ~225 switches, 155
  // voluntary, 50-75 lock waits; preempted three times as often, still kept.
  EXPECT_EQ(verdict(225, 155, 50), SwitchVerdict::KeepEvent);
  EXPECT_EQ(verdict(675, 155, 50), SwitchVerdict::KeepEvent);
  // The preemptions decide nothing else: a thread that waits sorts what
  // waits it makes, as any other...
  EXPECT_EQ(verdict(384, 9, 0), SwitchVerdict::SortWaits);
  EXPECT_EQ(verdict(384, 9, 0, 5), SwitchVerdict::MoveToWholeCpu);
}

TEST(SamplePolicy, ThreadsThatHardlyWaitMoveToTheirTimersAboveTheLowerRate) {
  auto verdict = [](uint64_t switches, uint64_t voluntary, uint64_t outside = 0, uint64_t cpu_ns = 32 * ms) {
    return switch_verdict(SwitchStretch{.switches = switches, .voluntary = voluntary, .outside_waits = outside,
                                        .cpu_ns = cpu_ns},
                          default_rates);
  };
  // memcached's workers under load: ~12,000 preemptions per CPU-second,
  // a voluntary switch or none in a look. Sorting their few waits decided
  // nothing; the tick reads a thread right that hands nothing on.
  EXPECT_EQ(verdict(384, 0), SwitchVerdict::MoveToTimer);
  EXPECT_EQ(verdict(384, 1, 1), SwitchVerdict::MoveToTimer);
  // Up to one voluntary switch per 4-ms tick of its CPU time; past it, the
  // waits are sorted as any thread's.
  EXPECT_EQ(verdict(384, 8), SwitchVerdict::MoveToTimer);
  EXPECT_EQ(verdict(384, 8, 4), SwitchVerdict::MoveToTimer);
  EXPECT_EQ(verdict(384, 9), SwitchVerdict::SortWaits);
  EXPECT_EQ(verdict(768, 16, 0, 64 * ms), SwitchVerdict::MoveToTimer);
  EXPECT_EQ(verdict(768, 17, 0, 64 * ms), SwitchVerdict::SortWaits);
  // Under the lower rate, a busy thread's time slices move nothing.
  EXPECT_EQ(verdict(64, 0), SwitchVerdict::KeepEvent);
  // Where no whole-CPU event can sample it, still to its timer; with no
  // lower rate at all, only the higher one moves a thread.
  const SwitchStretch preempted{.switches = 384, .voluntary = 0, .cpu_ns = 32 * ms};
  EXPECT_EQ(switch_verdict(preempted, {.any = 15'000, .hardly_waiting = 2'000}), SwitchVerdict::MoveToTimer);
  EXPECT_EQ(switch_verdict(preempted, {.any = 15'000}), SwitchVerdict::KeepEvent);
}

TEST(SamplePolicy, KernelTimeIsSampledAtAMultipleOfTheUnsignalledPeriod) {
  for (const Memory& memory : {root, limited}) {
    for (uint64_t period : {10 * us, 100 * us, 1 * ms, 10 * ms}) {
      const uint64_t kernel = kernel_period_ns(period, memory);
      EXPECT_EQ(kernel, kernel_period_multiple * unsignalled_period_ns(period, memory)) << period;
      EXPECT_EQ(kernel % period, 0u) << period << ": each sample stands for whole periods";
    }
  }
  EXPECT_EQ(kernel_period_ns(1 * ms, root), 4 * ms);
}

TEST(SamplePolicy, APeriodIsLengthenedUntilTheTimersExpiryIsAQuarterOfIt) {
  // Bare metal: ~1 us an expiry; 10 us is kept (5 us during experiments).
  EXPECT_EQ(affordable_period_ns(10 * us, 1 * us, 1 * ms, 2), 10 * us);
  EXPECT_EQ(affordable_period_ns(10 * us, 1'250, 1 * ms, 2), 10 * us);
  EXPECT_EQ(affordable_period_ns(10 * us, 1'251, 1 * ms, 2), 20 * us);
  EXPECT_EQ(affordable_period_ns(10 * us, 2'500, 1 * ms, 1), 10 * us);
  // A Firecracker VM: ~15 us an expiry, 10 us becomes 160 us (80 us in experiments).
  EXPECT_EQ(affordable_period_ns(10 * us, 15 * us, 1 * ms, 2), 160 * us);
  // Never past the ceiling, and a period at or above it is kept.
  EXPECT_EQ(affordable_period_ns(10 * us, 1 * ms, 100 * us, 2), 100 * us);
  EXPECT_EQ(affordable_period_ns(30 * us, 1 * ms, 100 * us, 2), 100 * us);
  EXPECT_EQ(affordable_period_ns(1 * ms, 1 * ms, 100 * us, 2), 1 * ms);
}

TEST(SamplePolicy, AShortenedPeriodSamplesThatManyTimesFaster) {
  EXPECT_EQ(short_period_rate(1 * ms, 1 * ms), 1u);
  EXPECT_EQ(short_period_rate(1 * ms, 500 * us), 2u);
  EXPECT_EQ(short_period_rate(1 * ms, 250 * us), 4u);
  EXPECT_EQ(short_period_rate(1 * ms, 2 * ms), 1u) << "never slower than configured";
  EXPECT_EQ(short_period_rate(1 * ms, 0), 1u) << "no period set yet";
}

TEST(SamplePolicy, OneSampleInRateIsCounted) {
  for (uint64_t rate : {1, 2, 4}) {
    for (uint64_t start : {0, 1, 7}) {  // threads start at a random count
      uint32_t counter = static_cast<uint32_t>(start);
      int counted = 0;
      for (int i = 0; i < 400; ++i) counted += counted_in_profile(rate, counter);
      EXPECT_EQ(counted, static_cast<int>(400 / rate)) << "rate " << rate << ", start " << start;
    }
  }
}

}  // namespace
}  // namespace coz::sample_policy
