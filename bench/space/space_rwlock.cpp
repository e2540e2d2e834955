// space_rwlock: threads that each repeat a round of work outside one shared
// pthread reader-writer lock, then a read under the lock shared or, one
// round in `write_every`, a write under it held alone; a COZ_PROGRESS per
// round.
//
// Parameters: threads=1..16, write_every=1..1000, outside=US, read=US,
// write=US (work per round of each kind), seconds, warmup. Marked lines:
// outside, read, write.
#include <coz.h>
#include <pthread.h>

#include "space.h"

namespace {

SPACE_WORK(outside_work)  // @line:outside
SPACE_WORK(read_work)     // @line:read
SPACE_WORK(write_work)    // @line:write

}  // namespace

int main(int argc, char** argv) {
  space::Params params(argc, argv);
  const double seconds = params.number("seconds", 3);
  const double warmup = params.number("warmup", 0.3);
  const int thread_count = params.count("threads", 4, 1, 16);
  const int write_every = params.count("write_every", 4, 1, 1000);
  const uint64_t outside_steps = params.steps("outside", "outside", 50);
  const uint64_t read_steps = params.steps("read", "read", 50);
  const uint64_t write_steps = params.steps("write", "write", 50);
  params.done();

  pthread_rwlock_t lock;
  pthread_rwlock_init(&lock, nullptr);
  std::atomic<uint64_t> shared{0x1234};  // written under the write lock, read under either
  std::atomic<bool> stop{false};
  std::vector<space::Counter> rounds(static_cast<size_t>(thread_count));
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      uint64_t x = uint64_t(t) + 1;
      // Threads start at different phases so that writes are spread out.
      for (uint64_t round = uint64_t(t); !stop.load(std::memory_order_relaxed); ++round) {
        x = outside_work(x, outside_steps);
        if (round % uint64_t(write_every) == 0) {
          pthread_rwlock_wrlock(&lock);
          shared.store(write_work(shared.load(std::memory_order_relaxed) ^ x, write_steps), std::memory_order_relaxed);
        } else {
          pthread_rwlock_rdlock(&lock);
          x = read_work(shared.load(std::memory_order_relaxed) ^ x, read_steps);
        }
        pthread_rwlock_unlock(&lock);
        rounds[size_t(t)].add();
        COZ_PROGRESS_NAMED("round");
      }
    });
  }

  space::measure_window(params.program(), warmup, seconds, stop, [&] { return space::sum(rounds); });
  for (std::thread& t : threads) t.join();
  pthread_rwlock_destroy(&lock);
  std::printf("checksum=%016llx\n", static_cast<unsigned long long>(shared.load()));
  return 0;
}
