// syscall_write: pipeline.cpp's structure (producer -> bounded queue ->
// consumer, one COZ_PROGRESS_NAMED("item consumed") per consumed item), with
// the consumer's work in the kernel: per item, its marked line writes a 1 MiB
// buffer with one pwrite(2) (a loop on the line, for short writes) over the
// same range of a memfd (a tmpfs file, so no disk: the pages stay in the page
// cache and each write is the kernel copying 1 MiB from the user buffer).
// Almost all of the line's time is in kernel mode; user-mode-only sampling
// sees almost none of it.
//
// Why not a pipe drained by another thread: a pipe's writer and reader hold
// the pipe's mutex for their whole copy, so they take turns (measured on the
// reference machine, 256 KiB writes into a 1 MiB pipe: 80 us per write, of
// which 37 us of writer CPU and 40 us of reader CPU). The reader's copy would
// be on the critical path as much as the write line's, and writing half the
// bytes would halve both: not a speedup of the write line alone.
//
// The consumer's per-item work is ~3x the producer's: speeding write_work up
// by s helps by s (up to s = 2/3), speeding produce_work up does nothing.
// Per item: produce_work 0.035 ms, write_work ~0.13 ms.
// Variants: -DHALVE_WRITE_WORK (writes 512 KiB: real speedup ~50%),
// -DHALVE_PRODUCE_WORK (~0%). Ground truth: test/integration/library_time_test.cpp.
// Usage: syscall_write [-n ITEMS] [--exit-status N]; default ~3.4 s.
#include <coz.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

#ifdef HALVE_PRODUCE_WORK
constexpr uint64_t kProduceSteps = kStepsPerMs * 35 / 2000;
#else
constexpr uint64_t kProduceSteps = kStepsPerMs * 35 / 1000;
#endif
#ifdef HALVE_WRITE_WORK
constexpr size_t kWriteBytes = 512 * 1024;
#else
constexpr size_t kWriteBytes = 1024 * 1024;  // ~0.13 ms in the kernel on the reference machine
#endif
constexpr uint64_t kDefaultItems = 26'000;  // 0.13 ms per item: ~3.4 s
constexpr size_t kQueueCapacity = 16;

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t produce_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:produce_work
  return x;
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "syscall_write: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

// The item goes into the buffer's first bytes, so every write differs.
__attribute__((noinline)) void write_work(int fd, unsigned char* buffer, uint64_t item) {
  std::memcpy(buffer, &item, sizeof item);
  for (size_t done = 0; done < kWriteBytes;) if (ssize_t n = pwrite(fd, buffer + done, kWriteBytes - done, static_cast<off_t>(done)); n > 0) done += static_cast<size_t>(n); else if (errno != EINTR) fail("pwrite");  // @line:write_work
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

  const int fd = memfd_create("syscall_write", 0);
  if (fd < 0) fail("memfd_create");
  std::vector<unsigned char> buffer(kWriteBytes);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<unsigned char>(i * 131);

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
    const uint64_t item = queue.pop();
    write_work(fd, buffer.data(), item);
    checksum = checksum * 31 + item;
    COZ_PROGRESS_NAMED("item consumed");  // @line:item_consumed
  }
  producer.join();

  // What the kernel holds is what was written last.
  uint64_t last = 0;
  if (pread(fd, &last, sizeof last, 0) != static_cast<ssize_t>(sizeof last)) fail("pread");
  close(fd);
  std::printf("syscall_write items=%llu checksum=%016llx last=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(checksum), static_cast<unsigned long long>(last));
  std::fprintf(stderr, "syscall_write: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
