#include "sample_policy.h"

#include <algorithm>

namespace coz::sample_policy {

unsigned ring_pages_for(uint64_t records, uint64_t page_size) {
  unsigned pages = 1;
  while (pages * page_size < records * longest_record) pages *= 2;
  return pages;
}

unsigned ring_data_pages(bool unsignalled, const Memory& memory) {
  if (memory.memlock_limited) return ring_pages_for(unsignalled ? 7 : 3, memory.page_size);
  return ring_pages_for(unsignalled ? 31 : 15, memory.page_size);
}

namespace {
/// Sample periods a ring of `data_pages` holds per drain.
uint64_t periods_per_drain(unsigned data_pages, const Memory& memory) {
  uint64_t ring_bytes = memory.page_size * data_pages;
  uint64_t samples_that_fit = std::max<uint64_t>(2, ring_bytes / longest_record);
  return std::max<uint64_t>(1, samples_that_fit / unsignalled_drains_per_ring);
}
}  // namespace

uint64_t periods_per_unsignalled_drain(const Memory& memory) {
  return periods_per_drain(ring_data_pages(true, memory), memory);
}

uint64_t unsignalled_period_ns(uint64_t period_ns, const Memory& memory) {
  uint64_t per_drain = period_ns * periods_per_unsignalled_drain(memory);
  uint64_t weight = std::max<uint64_t>(1, (min_unsignalled_drain_ns + per_drain - 1) / per_drain);
  return period_ns * weight;
}

uint64_t quiet_drain_interval_ns(uint64_t period_ns, const Memory& memory) {
  // Such rings fill at unsignalled_period_ns: a quiet run's samplers never
  // change their period, and the kernel-time sampler keeps its own.
  return unsignalled_period_ns(period_ns, memory) * periods_per_unsignalled_drain(memory);
}

uint64_t kernel_period_ns(uint64_t period_ns, const Memory& memory) {
  return unsignalled_period_ns(period_ns, memory) * kernel_period_multiple;
}

unsigned cpu_ring_data_pages(const Memory& memory, unsigned cpus) {
  if (memory.memlock_limited) return 2 * ring_data_pages(true, memory);
  return ring_pages_for(cpus > 64 ? 62 : 125, memory.page_size);
}

uint64_t cpu_ring_drain_interval_ns(uint64_t kernel_period_ns, const Memory& memory, unsigned cpus) {
  return kernel_period_ns * periods_per_drain(cpu_ring_data_pages(memory, cpus), memory);
}

SwitchVerdict switch_verdict(const SwitchStretch& stretch, SwitchRates rates) {
  if (stretch.cpu_ns < switch_check_min_cpu_ns) return SwitchVerdict::KeepEvent;
  auto minus = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };  // never below 0
  const uint64_t switches = minus(stretch.switches, stretch.delay_sleeps);
  const uint64_t voluntary = minus(stretch.voluntary, stretch.delay_sleeps);
  // A lock's hand-offs: a waiter woken as the mutex is released often finds
  // it taken again by a thread that was running, and sleeps again
  // (lock_contention's workers: 2-3 voluntary switches per wait). They must
  // also be a share of all its switches: a thread preempted thousands of
  // times a second for each wait it makes (memcached's workers on Linux
  // 6.18) pays for the preemptions, whatever its few waits were.
  const bool lock_hand_offs = stretch.lock_waits > 0 && stretch.lock_waits * 4 >= voluntary &&
                              stretch.lock_waits * lock_wait_share_of_switches >= switches;
  if (lock_hand_offs) return SwitchVerdict::KeepEvent;
  // count / (cpu_ns / 1e9) > rate, without overflow for any count a thread reaches.
  auto per_cpu_second_above = [&](uint64_t count, uint64_t rate) {
    return rate != 0 && static_cast<double>(count) * 1e9 > static_cast<double>(rate) * static_cast<double>(stretch.cpu_ns);
  };
  auto above = [&](uint64_t rate) { return per_cpu_second_above(switches, rate); };
  if (above(rates.any)) return SwitchVerdict::MoveToTimer;
  // Switched often but hardly ever waiting: preempted, handing nothing to
  // the program's other threads for the tick to read late.
  const bool rarely_waits = !per_cpu_second_above(voluntary, rare_waits_per_cpu_second);
  if (above(rates.hardly_waiting) && rarely_waits) return SwitchVerdict::MoveToTimer;
  if (!above(rates.outside)) return SwitchVerdict::KeepEvent;
  const bool mostly_outside = stretch.outside_waits > 0 && stretch.outside_waits * 2 >= voluntary &&
                              stretch.outside_waits >= 3 * (stretch.program_waits + stretch.lock_waits);
  return mostly_outside ? SwitchVerdict::MoveToWholeCpu : SwitchVerdict::SortWaits;
}

uint64_t affordable_period_ns(uint64_t requested_ns, uint64_t expiry_ns, uint64_t ceiling_ns,
                              unsigned delay_sampling_rate) {
  const uint64_t rate = std::max(1u, delay_sampling_rate);
  uint64_t period = requested_ns;
  while (period < ceiling_ns && expiry_ns * max_expiry_share * rate > period) period = std::min(2 * period, ceiling_ns);
  return period;
}

uint64_t cpu_ring_experiment_drain_interval_ns(uint64_t kernel_period_ns) {
  return std::max(kernel_period_ns, min_unsignalled_drain_ns);
}

}  // namespace coz::sample_policy
