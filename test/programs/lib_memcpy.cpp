// lib_memcpy: pipeline.cpp's structure (producer -> bounded queue ->
// consumer, one COZ_PROGRESS_NAMED("item consumed") per consumed item), but
// the consumer's work is all inside glibc: its marked line is a loop of
// memcpy calls of a size the compiler cannot see (g_copy_bytes, 128 KiB),
// ping-ponging between two buffers that stay in the core's L2 cache. Every
// sample of the consumer's work lands in libc's memcpy (an ifunc choice such
// as __memmove_avx_unaligned_erms), which is compiled without frame pointers:
// only an unwinder that walks libc's CFI finds the line that called it.
//
// The consumer's per-item work is ~3x the producer's, so it bounds
// throughput: speeding copy_work up by s helps by s (until it meets the
// producer's rate at s = 2/3); speeding produce_work up does nothing.
//
// Per item: produce_work 0.15 ms (in-scope arithmetic), copy_work ~0.45 ms
// (kCopies memcpy calls of 128 KiB).
// Variants: -DHALVE_COPY_WORK (half the memcpy calls: real speedup ~50%),
// -DHALVE_PRODUCE_WORK (~0%). Ground truth: test/integration/library_time_test.cpp.
// Usage: lib_memcpy [-n ITEMS] [--exit-status N]; default ~3.6 s.
#include <coz.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
#ifdef HALVE_COPY_WORK
constexpr int kCopies = 72;
#else
constexpr int kCopies = 144;  // x 128 KiB: ~0.45 ms on the reference machine
#endif
constexpr uint64_t kDefaultItems = 8'000;  // 0.45 ms per item: ~3.6 s
constexpr size_t kQueueCapacity = 16;

volatile uint64_t g_seed = 0x1234;
// A runtime value: GCC cannot inline or specialize the memcpy calls.
volatile size_t g_copy_bytes = 128 * 1024;

__attribute__((noinline)) uint64_t produce_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:produce_work
  return x;
}

// Each copy reads what the previous one wrote, so no call is dead.
__attribute__((noinline)) uint64_t copy_work(unsigned char* a, unsigned char* b, size_t bytes, uint64_t item) {
  std::memcpy(a, &item, sizeof item);
  for (int k = 0; k < kCopies; ++k) std::memcpy(k % 2 ? a : b, k % 2 ? b : a, bytes);  // @line:copy_work
  uint64_t out;
  std::memcpy(&out, kCopies % 2 ? b : a, sizeof out);
  return out ^ a[bytes - 1];
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

  // Both buffers in one page-aligned block, b half a page past a 4 KiB
  // boundary: copies between buffers whose addresses are a few bytes apart
  // modulo 4 KiB run ~10x slower (4K aliasing in `rep movsb`), and two
  // separate 128 KiB mallocs land wherever the heap's history puts them (a
  // preloaded runtime's allocations moved them 16 bytes apart: 8.5x slower).
  const size_t bytes = g_copy_bytes;
  auto* block = static_cast<unsigned char*>(std::aligned_alloc(4096, 2 * bytes + 4096));
  if (block == nullptr) return 1;
  unsigned char* a = block;
  unsigned char* b = block + bytes + 2048;
  for (size_t i = 0; i < bytes; ++i) a[i] = static_cast<unsigned char>(i * 131);

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
    checksum ^= copy_work(a, b, bytes, queue.pop());
    COZ_PROGRESS_NAMED("item consumed");  // @line:item_consumed
  }
  producer.join();

  std::printf("lib_memcpy items=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(checksum));
  std::fprintf(stderr, "lib_memcpy: elapsed=%.3f s\n", stopwatch.seconds());
  std::free(block);
  return args.exit_status;
}
