// Progress points: counters by name and kind, and the in-flight count noted
// at each delay credit (what Little's law subtracts from the in-flight time).
#include "progress_points.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <string>
#include <thread>
#include <vector>

namespace coz {
namespace {

TEST(ProgressPoints, OneCounterPerNameAndKind) {
  ProgressPoints points;
  coz_counter_t* a = points.get_counter(COZ_COUNTER_TYPE_THROUGHPUT, "done");
  EXPECT_EQ(a, points.get_counter(COZ_COUNTER_TYPE_THROUGHPUT, "done"));
  coz_counter_t* begin = points.get_counter(COZ_COUNTER_TYPE_BEGIN, "request");
  coz_counter_t* end = points.get_counter(COZ_COUNTER_TYPE_END, "request");
  EXPECT_NE(begin, end);
  EXPECT_NE(a, begin);
  EXPECT_EQ(points.get_counter(99, "x"), nullptr);
  EXPECT_EQ(points.size(), 2u);
}

TEST(ProgressPoints, DelayCreditNotesRequestsInFlight) {
  ProgressPoints points;
  coz_counter_t* begin = points.get_counter(COZ_COUNTER_TYPE_BEGIN, "request");
  coz_counter_t* end = points.get_counter(COZ_COUNTER_TYPE_END, "request");
  points.get_counter(COZ_COUNTER_TYPE_THROUGHPUT, "done");
  begin->count = 5;
  end->count = 2;  // three in flight
  points.note_delay_credit(1000);
  end->count = 5;  // none in flight
  points.note_delay_credit(1000);
  uint64_t noted = 0;
  int latency_points = 0;
  points.for_each_latency_lock_free([&](ProgressPoint& p) {
    ++latency_points;
    noted += p.in_flight_at_credits.load();
  });
  EXPECT_EQ(latency_points, 1) << "throughput points have nothing in flight";
  EXPECT_EQ(noted, 3000u);
}

// Our header's visits go to stripes, one cache line each, by CPU;
// code built against Coz's header increments the single count, and the
// hardware breakpoints set it. A point counts all three.
TEST(ProgressPoints, AllVisitsCountWhereverTheyWereCounted) {
  ProgressPoints points;
  coz_counter_t* counter = points.get_counter(COZ_COUNTER_TYPE_THROUGHPUT, "done");
  ASSERT_EQ(counter->backoff, COZ_COUNTER_STRIPED) << "the header must know it may stripe";
  constexpr int threads = 8, visits = 100'000;
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      for (int v = 0; v < visits; ++v) _coz_count_visit(counter);
    });
  }
  for (std::thread& w : workers) w.join();
  __atomic_add_fetch(&counter->count, 7, __ATOMIC_RELAXED);  // Coz's header, or a breakpoint
  uint64_t total = 0;
  points.for_each([&](ProgressPoint& p) { total = p.begins(); });
  EXPECT_EQ(total, uint64_t{threads} * visits + 7);
  EXPECT_LT(counter->count, 8u) << "the header's visits went to the stripes";
}

/// The CPUs this process may run on.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// A thread counts in the stripe of the CPU it runs on, so that a stripe's
// cache line stays on one core; where the C library registers no rseq area,
// in the stripe its thread pointer hashes to.
TEST(ProgressPoints, AThreadCountsInItsCpusStripe) {
  ProgressPoints points;
  coz_counter_t* counter = points.get_counter(COZ_COUNTER_TYPE_THROUGHPUT, "done");
  const auto* striped = reinterpret_cast<const coz_striped_counter_t*>(counter);
  std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  if (cpus.size() > COZ_COUNTER_STRIPES) cpus.resize(COZ_COUNTER_STRIPES);
  for (int cpu : cpus) {
    size_t stripe = 0;
    bool rseq_registered = false;
    std::thread pinned([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
      stripe = _coz_stripe();
      rseq_registered = &_coz_rseq_offset != nullptr &&
                        *reinterpret_cast<const int32_t*>(static_cast<char*>(__builtin_thread_pointer()) + _coz_rseq_offset + 4) >= 0;
      for (int v = 0; v < 1000; ++v) _coz_count_visit(counter);
    });
    pinned.join();
    EXPECT_EQ(striped->stripes[stripe].count % 1000, 0u);
    if (rseq_registered) {
      EXPECT_EQ(stripe, static_cast<size_t>(cpu) % COZ_COUNTER_STRIPES) << "on CPU " << cpu;
    }
  }
  uint64_t counted = 0;
  for (const coz_counter_stripe_t& s : striped->stripes) counted += s.count;
  EXPECT_EQ(counted, 1000u * cpus.size());
}

// A counter that is not striped (Coz's runtime leaves backoff 0) counts
// visits in its single count, as Coz's header does.
TEST(ProgressPoints, AnUnstripedCounterCountsInItsSingleCount) {
  coz_counter_t plain{};
  for (int v = 0; v < 10; ++v) _coz_count_visit(&plain);
  EXPECT_EQ(plain.count, 10u);
}

// Every latency point gets its in-flight count noted at each delay credit,
// however many there are: a fixed table of 64 left the others out, and
// their mean in flight (Little's law) then counted the removed time.
TEST(ProgressPoints, EveryLatencyPointIsCredited) {
  ProgressPoints points;
  constexpr int count = 200;
  for (int i = 0; i < count; ++i) {
    std::string name = "request" + std::to_string(i);
    points.get_counter(COZ_COUNTER_TYPE_BEGIN, name.c_str())->count = 1;  // one in flight each
    points.get_counter(COZ_COUNTER_TYPE_END, name.c_str());
  }
  points.note_delay_credit(1000);
  int credited = 0, listed = 0;
  points.for_each_latency_lock_free([&](ProgressPoint& p) {
    ++listed;
    credited += p.in_flight_at_credits.load() == 1000 ? 1 : 0;
  });
  EXPECT_EQ(listed, count);
  EXPECT_EQ(credited, count);
  EXPECT_TRUE(points.has_latency());
}

}  // namespace
}  // namespace coz
