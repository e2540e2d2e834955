// Progress points: counters by name and kind, and the in-flight count noted
// at each delay credit (what Little's law subtracts from the in-flight time).
#include "progress_points.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace coz
