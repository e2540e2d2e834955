// space_lock: threads that each repeat a round of work outside one shared
// std::mutex, then work inside it; a COZ_PROGRESS per round.
//
// Parameters: threads=1..16, outside=US and critical=US (work per round),
// seconds, warmup. Marked lines: outside, critical.
#include <coz.h>

#include <mutex>

#include "space.h"

namespace {

SPACE_WORK(outside_work)   // @line:outside
SPACE_WORK(critical_work)  // @line:critical

}  // namespace

int main(int argc, char** argv) {
  space::Params params(argc, argv);
  const double seconds = params.number("seconds", 3);
  const double warmup = params.number("warmup", 0.3);
  const int thread_count = params.count("threads", 4, 1, 16);
  const uint64_t outside_steps = params.steps("outside", "outside", 100);
  const uint64_t critical_steps = params.steps("critical", "critical", 100);
  params.done();

  std::mutex mutex;
  uint64_t shared = 0x1234;  // the state the critical section guards
  std::atomic<bool> stop{false};
  std::vector<space::Counter> rounds(static_cast<size_t>(thread_count));
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      uint64_t x = uint64_t(t) + 1;
      while (!stop.load(std::memory_order_relaxed)) {
        x = outside_work(x, outside_steps);
        {
          std::lock_guard lock(mutex);
          shared = critical_work(shared ^ x, critical_steps);
        }
        rounds[size_t(t)].add();
        COZ_PROGRESS_NAMED("round");
      }
    });
  }

  space::measure_window(params.program(), warmup, seconds, stop, [&] { return space::sum(rounds); });
  for (std::thread& t : threads) t.join();
  std::printf("checksum=%016llx\n", static_cast<unsigned long long>(shared));
  return 0;
}
