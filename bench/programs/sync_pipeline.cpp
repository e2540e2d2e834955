// sync_pipeline: a producer and a consumer that meet ~15,000 times a second
// through a std::mutex and two std::condition_variables around a queue of 4
// items: per item, two lock/unlock pairs, a notify each, and a condition wait
// whenever one side runs ahead (the producer, being faster, waits on a full
// queue most of the time). The overhead table's program for the cost of the
// synchronisation wrappers themselves (issue #15): the other programs
// synchronise once per 0.2-1 ms of work, this one every ~65 us.
//
// Per item: produce_work 30 us, consume_work 50 us nominal (~65 us measured on
// the 2-core VM; the consumer bounds the rate).
// Usage: sync_pipeline [-n ITEMS] [--exit-status N]; default ~5 s.
#include <coz.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

constexpr uint64_t kProduceSteps = kStepsPerMs * 30 / 1000;
constexpr uint64_t kConsumeSteps = kStepsPerMs * 50 / 1000;
constexpr uint64_t kDefaultItems = 80'000;  // ~5.4 s
constexpr size_t kCapacity = 4;

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t produce_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:produce_work
  return x;
}

__attribute__((noinline)) uint64_t consume_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:consume_work
  return x;
}

struct Queue {
  std::mutex mutex;
  std::condition_variable not_empty, not_full;
  std::deque<uint64_t> items;
};

void produce(Queue& q, uint64_t n) {
  uint64_t x = g_seed;
  for (uint64_t i = 0; i < n; ++i) {
    x = produce_work(x, kProduceSteps);
    std::unique_lock lock(q.mutex);
    q.not_full.wait(lock, [&] { return q.items.size() < kCapacity; });
    q.items.push_back(x);
    lock.unlock();
    q.not_empty.notify_one();
  }
}

uint64_t consume(Queue& q, uint64_t n) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) {
    std::unique_lock lock(q.mutex);
    q.not_empty.wait(lock, [&] { return !q.items.empty(); });
    uint64_t item = q.items.front();
    q.items.pop_front();
    lock.unlock();
    q.not_full.notify_one();
    sum += consume_work(item, kConsumeSteps);
    COZ_PROGRESS_NAMED("item consumed");
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultItems);
  const coz_programs::Stopwatch stopwatch;
  Queue q;
  std::thread producer(produce, std::ref(q), args.n);
  const uint64_t sum = consume(q, args.n);
  producer.join();
  const double elapsed = stopwatch.seconds();
  std::printf("sync_pipeline items=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(sum));
  std::fprintf(stderr, "sync_pipeline: elapsed=%.3f s (%.0f items/s)\n", elapsed, double(args.n) / elapsed);
  return args.exit_status;
}
