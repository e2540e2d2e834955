// lib_stdcxx: pipeline.cpp's structure (producer -> bounded queue ->
// consumer, one COZ_PROGRESS_NAMED("item consumed") per consumed item), with
// the consumer's work all inside libstdc++.so: its marked line hashes long
// strings with std::hash<std::string>, whose inline operator() calls
// std::_Hash_bytes, compiled into libstdc++.so.6 (without frame pointers;
// Debian ships its debug information separately). kHashes hashes of 64 KiB
// strings (4 strings, 256 KiB in all, cycled so they stay in the L2 cache).
//
// The consumer's per-item work is ~3x the producer's: speeding hash_work up
// by s helps by s (up to s = 2/3), speeding produce_work up does nothing.
// Per item: produce_work 0.15 ms, hash_work ~0.45 ms.
// Variants: -DHALVE_HASH_WORK (half the hashes: real speedup ~50%),
// -DHALVE_PRODUCE_WORK (~0%). Ground truth: test/integration/library_time_test.cpp.
// Usage: lib_stdcxx [-n ITEMS] [--exit-status N]; default ~3.6 s.
#include <coz.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

#ifdef HALVE_PRODUCE_WORK
constexpr uint64_t kProduceSteps = kStepsPerMs * 15 / 200;
#else
constexpr uint64_t kProduceSteps = kStepsPerMs * 15 / 100;
#endif
#ifdef HALVE_HASH_WORK
constexpr size_t kHashes = 18;
#else
constexpr size_t kHashes = 36;  // x 64 KiB: ~0.45 ms on the reference machine
#endif
constexpr size_t kStrings = 4;
constexpr size_t kStringBytes = 64 * 1024;
constexpr uint64_t kDefaultItems = 8'000;  // 0.45 ms per item: ~3.6 s
constexpr size_t kQueueCapacity = 16;

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t produce_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:produce_work
  return x;
}

// One character changes per item, so every item's hashes differ.
__attribute__((noinline)) uint64_t hash_work(std::vector<std::string>& strings, uint64_t item) {
  strings[item % kStrings][item % kStringBytes] = static_cast<char>('a' + item % 26);
  uint64_t h = 0;
  for (size_t k = 0; k < kHashes; ++k) h = h * 31 + std::hash<std::string>{}(strings[k % kStrings]);  // @line:hash_work
  return h;
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

  std::vector<std::string> strings(kStrings, std::string(kStringBytes, ' '));
  uint64_t r = g_seed;
  for (std::string& s : strings) {
    for (char& c : s) {
      r = r * 6364136223846793005ULL + 1442695040888963407ULL;
      c = static_cast<char>('a' + (r >> 33) % 26);
    }
  }

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
    checksum ^= hash_work(strings, queue.pop());
    COZ_PROGRESS_NAMED("item consumed");  // @line:item_consumed
  }
  producer.join();

  std::printf("lib_stdcxx items=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(checksum));
  std::fprintf(stderr, "lib_stdcxx: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
