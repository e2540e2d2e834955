// pipeline: producer -> bounded queue -> consumer, one COZ_PROGRESS_NAMED per
// consumed item. The consumer's per-item work is 3x the producer's, so the
// consumer bounds throughput: speeding its loop up by s helps by s (until it
// meets the producer's rate at s = 2/3); speeding the producer up does nothing
// (it already waits on a full queue most of the time).
//
// Per item: produce_work 0.15 ms, consume_work 0.45 ms.
// Variants: -DHALVE_CONSUME_WORK (real speedup ~50%), -DHALVE_PRODUCE_WORK (~0%).
// Usage: pipeline [-n ITEMS] [--exit-status N]; default ~5 s.
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

#ifdef HALVE_PRODUCE_WORK
constexpr uint64_t kProduceSteps = kStepsPerMs * 15 / 200;
#else
constexpr uint64_t kProduceSteps = kStepsPerMs * 15 / 100;
#endif
#ifdef HALVE_CONSUME_WORK
constexpr uint64_t kConsumeSteps = kStepsPerMs * 45 / 200;
#else
constexpr uint64_t kConsumeSteps = kStepsPerMs * 45 / 100;
#endif
constexpr uint64_t kDefaultItems = 11'000;  // 0.45 ms per item: ~5 s
constexpr size_t kQueueCapacity = 16;

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t produce_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:produce_work
  return x;
}

__attribute__((noinline)) uint64_t consume_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:consume_work
  return x;
}

class BoundedQueue {
 public:
  void push(uint64_t item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() < kQueueCapacity; });
    items_.push_back(item);
    lock.unlock();
    not_empty_.notify_one();
  }

  uint64_t pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty(); });
    const uint64_t item = items_.front();
    items_.pop_front();
    lock.unlock();
    not_full_.notify_one();
    return item;
  }

 private:
  std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<uint64_t> items_;
};

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultItems);
  const coz_programs::Stopwatch stopwatch;

  BoundedQueue queue;
  std::thread producer([&] {
    uint64_t x = g_seed;
    for (uint64_t i = 0; i < args.n; ++i) {
      x = produce_work(x, kProduceSteps);
      queue.push(x);
    }
  });

  uint64_t checksum = 0;
  for (uint64_t i = 0; i < args.n; ++i) {
    checksum ^= consume_work(queue.pop(), kConsumeSteps);
    COZ_PROGRESS_NAMED("item consumed");  // @line:item_consumed
  }
  producer.join();

  std::printf("pipeline items=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(checksum));
  std::fprintf(stderr, "pipeline: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
