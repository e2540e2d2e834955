// Tests of experiment_window.h: what a progress point's records say about
// one experiment, from its counters as the program and the delay credits
// moved them.
#include <gtest/gtest.h>

#include "experiment_window.h"

namespace coz {
namespace {

constexpr uint64_t ms = 1'000'000;

/// n visits, as the header's macros count them.
void visit(ProgressCounter& c, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) _coz_count_visit(c.abi());
}

/// A latency point's window with one request in flight, polled once after `wall_ns`.
void one_in_flight(ProgressPoint& p, double wall_ns) {
  p.kind = ProgressPoint::Kind::Latency;
  open_window(p);
  visit(*p.begin, 1);
  poll_window(p, wall_ns);
}

TEST(ExperimentWindow, EffectiveDurationIsWallTimeLessPauses) {
  EXPECT_EQ(effective_duration(50 * ms, 20 * ms), 30 * ms);
  EXPECT_EQ(effective_duration(50 * ms, 50 * ms), 0u);
  EXPECT_EQ(effective_duration(50 * ms, 60 * ms), 0u) << "pauses counted past the end: nothing left";
}

TEST(ExperimentWindow, ThroughputCountsTheVisitsSinceItOpened) {
  ProgressPoint p;
  p.name = "requests";
  visit(*p.begin, 100);  // before the experiment
  open_window(p);
  visit(*p.begin, 42);
  poll_window(p, 5.0 * ms);  // a throughput point has nothing in flight
  PointResult r = close_window(p, 30 * ms, 50 * ms);
  EXPECT_EQ(r.name, "requests");
  EXPECT_FALSE(r.latency);
  EXPECT_EQ(r.delta, 42u);
  EXPECT_EQ(p.in_flight_wall_sum, 0.0);
  // The visit rate that sizes later experiments is over wall time.
  EXPECT_EQ(p.total_visits, 42u);
  EXPECT_EQ(p.total_ns, 50 * ms);
}

TEST(ExperimentWindow, LatencyCountsArrivalsDeparturesAndWhatIsInFlight) {
  ProgressPoint p;
  p.kind = ProgressPoint::Kind::Latency;
  visit(*p.begin, 10);
  visit(*p.end, 8);  // 2 in flight before the experiment
  open_window(p);
  visit(*p.begin, 5);
  visit(*p.end, 4);
  PointResult r = close_window(p, 40 * ms, 40 * ms);
  EXPECT_TRUE(r.latency);
  EXPECT_EQ(r.arrivals, 5u);
  EXPECT_EQ(r.departures, 4u);
  EXPECT_EQ(r.difference, 3) << "in flight at the end, counted from the start of the run";
}

TEST(ExperimentWindow, MeanInFlightIsOverEffectiveTimeLessWhatThePausesHeld) {
  ProgressPoint p;
  p.kind = ProgressPoint::Kind::Latency;
  open_window(p);
  visit(*p.begin, 4);  // 4 in flight for the whole experiment
  poll_window(p, 50.0 * ms);
  // Pauses of 10 ms in all were credited while 4 requests were in flight:
  // that time does not exist in the sped-up program.
  p.in_flight_at_credits.fetch_add(4 * 10 * ms);
  PointResult r = close_window(p, 40 * ms, 50 * ms);
  EXPECT_DOUBLE_EQ(r.mean_in_flight, 4.0);  // (4 x 50 - 4 x 10) ms / 40 ms
}

TEST(ExperimentWindow, CreditsOutsideTheWindowDoNotCount) {
  ProgressPoint p;
  p.kind = ProgressPoint::Kind::Latency;
  p.in_flight_at_credits = 7 * ms;  // an earlier experiment's
  p.in_flight_wall_sum = 123.0;     // likewise
  open_window(p);
  EXPECT_EQ(p.in_flight_wall_sum, 0.0);
  visit(*p.begin, 1);
  poll_window(p, 20.0 * ms);
  PointResult r = close_window(p, 20 * ms, 20 * ms);
  EXPECT_DOUBLE_EQ(r.mean_in_flight, 1.0);
}

TEST(ExperimentWindow, NoEffectiveTimeLeavesTheMeanUnknown) {
  ProgressPoint p;
  one_in_flight(p, 5.0 * ms);
  EXPECT_LT(close_window(p, 0, 5 * ms).mean_in_flight, 0.0);
}

TEST(ExperimentWindow, MoreCreditedThanPolledIsZeroNotNegative) {
  ProgressPoint p;
  one_in_flight(p, 1.0 * ms);
  p.in_flight_at_credits.fetch_add(5 * ms);  // polls are coarse: the credits saw more
  EXPECT_DOUBLE_EQ(close_window(p, 10 * ms, 10 * ms).mean_in_flight, 0.0);
}

}  // namespace
}  // namespace coz
