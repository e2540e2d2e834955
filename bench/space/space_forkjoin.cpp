// space_forkjoin: persistent workers meet at a pthread barrier twice a
// round. Between the barriers worker 0 does part a and every other worker
// part b (all at once); after the second barrier worker 0 alone does the
// serial part (the join: merging results) and counts a COZ_PROGRESS, while
// the others wait at the next round's first barrier.
//
// Parameters: workers=2..16, part_a=US, part_b=US, serial=US (work per
// round), seconds, warmup. Marked lines: part_a, part_b, serial.
#include <coz.h>
#include <pthread.h>

#include "space.h"

namespace {

SPACE_WORK(part_a_work)  // @line:part_a
SPACE_WORK(part_b_work)  // @line:part_b
SPACE_WORK(serial_work)  // @line:serial

}  // namespace

int main(int argc, char** argv) {
  space::Params params(argc, argv);
  const double seconds = params.number("seconds", 3);
  const double warmup = params.number("warmup", 0.3);
  const int workers = params.count("workers", 2, 2, 16);
  const uint64_t a_steps = params.steps("part_a", "part_a", 100);
  const uint64_t b_steps = params.steps("part_b", "part_b", 100);
  const uint64_t serial_steps = params.steps("serial", "serial", 10);
  params.done();

  pthread_barrier_t start, finish;
  pthread_barrier_init(&start, nullptr, unsigned(workers));
  pthread_barrier_init(&finish, nullptr, unsigned(workers));
  std::atomic<bool> stop{false};
  bool running = true;  // written by worker 0 before the start barrier, read by all after it
  space::Counter rounds;
  std::vector<uint64_t> results(size_t(workers), 0);
  uint64_t merged = 0x1234;

  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      for (;;) {
        if (w == 0) running = !stop.load(std::memory_order_relaxed);
        pthread_barrier_wait(&start);
        if (!running) return;
        const uint64_t seed = merged + uint64_t(w);
        results[size_t(w)] = w == 0 ? part_a_work(seed, a_steps) : part_b_work(seed, b_steps);
        pthread_barrier_wait(&finish);
        if (w != 0) continue;
        uint64_t x = merged;
        for (uint64_t r : results) x ^= r;
        merged = serial_work(x, serial_steps);
        rounds.add();
        COZ_PROGRESS_NAMED("round");
      }
    });
  }

  space::measure_window(params.program(), warmup, seconds, stop, [&] { return rounds.n.load(); });
  for (std::thread& t : threads) t.join();
  pthread_barrier_destroy(&start);
  pthread_barrier_destroy(&finish);
  std::printf("checksum=%016llx\n", static_cast<unsigned long long>(merged));
  return 0;
}
