// Tests of latency_buckets.h and request_latency.h: the buckets a request's
// latency falls in, their text in the profile, and how begins and ends
// pair into requests (per thread, and by key across threads).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "experiment_window.h"
#include "latency_buckets.h"
#include "request_latency.h"

namespace coz {
namespace {

TEST(LatencyBuckets, EveryValueLiesInItsBucketWhoseWidthIsAtMostAThirtySecond) {
  for (uint64_t v : {0ull, 1ull, 31ull, 32ull, 33ull, 63ull, 64ull, 65ull, 1000ull, 999'999ull, 1'000'000ull,
                     123'456'789ull, (1ull << 44) - 1}) {
    const uint32_t b = latency::bucket_of(v);
    ASSERT_LT(b, latency::bucket_count) << v;
    EXPECT_LE(latency::bucket_low(b), v) << v;
    EXPECT_GT(latency::bucket_high(b), v) << v;
    if (v >= 32) {
      EXPECT_LE(static_cast<double>(latency::bucket_high(b) - latency::bucket_low(b)),
                static_cast<double>(latency::bucket_low(b)) / 32.0)
          << v;
    }
  }
}

TEST(LatencyBuckets, BucketsFollowEachOtherWithoutGapsAndTheLastTakesEverythingLonger) {
  for (uint32_t b = 0; b + 1 < latency::bucket_count; ++b) {
    ASSERT_EQ(latency::bucket_high(b), latency::bucket_low(b + 1)) << b;
    ASSERT_EQ(latency::bucket_of(latency::bucket_low(b)), b) << b;
  }
  EXPECT_EQ(latency::bucket_of(1ull << 45), latency::bucket_count - 1);
  EXPECT_EQ(latency::bucket_of((1ull << 45) - 1), latency::bucket_count - 1);
  EXPECT_EQ(latency::bucket_of(UINT64_MAX), latency::bucket_count - 1);
}

TEST(LatencyBuckets, TheProfilesTextReadsBackAndBadTextIsRefused) {
  const latency::Counts counts = {{3, 1}, {500, 17}, {latency::bucket_count - 1, 2}};
  const std::string text = latency::encode(counts);
  EXPECT_EQ(text, "3:1,500:17,1311:2");
  latency::Counts read;
  std::string error;
  ASSERT_TRUE(latency::decode(text, read, error)) << error;
  EXPECT_EQ(read, counts);
  for (const char* bad : {"3", "3:", ":1", "3:1,", "3:1;4:2", "4:1,3:1", "3:1,3:1", "1312:1", "x:1", "3:1 "}) {
    EXPECT_FALSE(latency::decode(bad, read, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  EXPECT_TRUE(latency::decode("", read, error));
  EXPECT_TRUE(read.empty());
}

TEST(RequestLatency, AVirtualLatencyIsTheWallTimeLessTheDelaysInsertedMeanwhile) {
  const RequestStart start{7, 1'000, 500};
  EXPECT_EQ(virtual_latency(start, 11'000, 3'500), 7'000u);
  EXPECT_EQ(virtual_latency(start, 11'000, 500), 10'000u) << "no delay meanwhile";
  EXPECT_EQ(virtual_latency(start, 11'000, 20'000), 0u) << "delays beyond the wall time: nothing left";
}

TEST(RequestLatency, AHistogramWindowHoldsOnlyTheRequestsRecordedSinceItOpened) {
  LatencyHistogram h;
  h.record(1'000);
  h.open();
  h.record(1'000);
  h.record(1'001);
  h.record(5'000'000);
  const latency::Counts since = h.since_open();
  ASSERT_EQ(since.size(), 2u);
  EXPECT_EQ(since[0], std::make_pair(latency::bucket_of(1'000), uint64_t{2}));
  EXPECT_EQ(since[1], std::make_pair(latency::bucket_of(5'000'000), uint64_t{1}));
}

TEST(RequestLatency, AThreadPairsEachBeginWithTheNextEndOfTheSamePoint) {
  ThreadRequests t;
  int a = 0, b = 0;
  t.begin(&a, {1, 100, 0});
  t.begin(&b, {1, 200, 0});
  t.begin(&a, {1, 300, 0});  // a's first request never ended: replaced
  auto end_a = t.end(&a);
  ASSERT_TRUE(end_a);
  EXPECT_EQ(end_a->begin_ns, 300u);
  EXPECT_FALSE(t.end(&a)) << "one end per begin";
  auto end_b = t.end(&b);
  ASSERT_TRUE(end_b);
  EXPECT_EQ(end_b->begin_ns, 200u);
}

TEST(RequestLatency, AThreadWithMorePointsInFlightThanSlotsDropsTheOldest) {
  ThreadRequests t;
  int points[ThreadRequests::slots + 1] = {};
  for (int i = 0; i <= ThreadRequests::slots; ++i) t.begin(&points[i], {1, 100u + static_cast<uint64_t>(i), 0});
  EXPECT_FALSE(t.end(&points[0])) << "the oldest begin made room";
  for (int i = 1; i <= ThreadRequests::slots; ++i) EXPECT_TRUE(t.end(&points[i])) << i;
}

TEST(RequestLatency, KeyedRequestsPairAcrossThreadsWithinTheirWindowOnly) {
  static KeyedRequests table;  // large: not on the stack
  int point = 0, other = 0;
  std::thread([&] {
    for (uint64_t key = 0; key < 1000; ++key) table.begin(&point, key, {5, 1000 + key, 0});
  }).join();
  int paired = 0;
  for (uint64_t key = 0; key < 1000; ++key) {
    auto start = table.end(&point, key, 5);
    if (start && start->begin_ns == 1000 + key) ++paired;
  }
  EXPECT_EQ(paired, 1000);
  EXPECT_EQ(table.dropped(), 0u);
  EXPECT_FALSE(table.end(&point, 3, 5)) << "ended already";
  table.begin(&point, 9, {5, 1, 0});
  EXPECT_FALSE(table.end(&other, 9, 5)) << "another point's key";
  EXPECT_FALSE(table.end(&point, 9, 6)) << "a begin of an earlier window does not pair";
}

TEST(RequestLatency, AFullStripeDropsNewBeginsUntilTheWindowMovesOn) {
  static KeyedRequests table;
  int point = 0;
  const uint64_t n = KeyedRequests::stripes * KeyedRequests::per_stripe + 5000;
  for (uint64_t key = 0; key < n; ++key) table.begin(&point, key, {1, key, 0});
  EXPECT_GE(table.dropped(), 5000u);
  const uint64_t dropped = table.dropped();
  // The next window reuses every entry: the old window's begins are free.
  for (uint64_t key = 0; key < 1000; ++key) table.begin(&point, n + key, {2, key, 0});
  EXPECT_EQ(table.dropped(), dropped);
  for (uint64_t key = 0; key < 1000; ++key) EXPECT_TRUE(table.end(&point, n + key, 2)) << key;
}

TEST(RequestLatency, ALatencyPointsWindowRecordsItsRequestsHistogram) {
  ProgressPoint p;
  p.kind = ProgressPoint::Kind::Latency;
  p.latencies = std::make_unique<LatencyHistogram>();
  p.latencies->record(2'000);  // before the experiment
  open_window(p);
  p.latencies->record(40'000);
  const PointResult r = close_window(p, 30'000'000, 50'000'000);
  ASSERT_EQ(r.latencies.size(), 1u);
  EXPECT_EQ(r.latencies[0].first, latency::bucket_of(40'000));
}

}  // namespace
}  // namespace coz
