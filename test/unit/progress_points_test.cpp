// Progress points: counters by name and kind, and the in-flight count noted
// at each delay credit (what Little's law subtracts from the in-flight time).
#include "progress_points.h"

#include <gtest/gtest.h>

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

// Our header's visits go to stripes, one cache line each, by thread;
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
  const auto* striped = reinterpret_cast<const coz_striped_counter_t*>(counter);
  int used = 0;
  for (const coz_counter_stripe_t& stripe : striped->stripes) used += stripe.count > 0 ? 1 : 0;
  EXPECT_GE(used, 2) << "8 threads on one stripe: the hash of their thread pointers spreads nothing";
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
