// space_pipeline: 2-4 stages, one thread each, joined by bounded queues
// (a mutex and two condition variables each). Stage 0 makes items, each
// later stage takes one from the queue before it, works, and passes it on;
// the last stage counts a COZ_PROGRESS per item.
//
// Parameters: stages=2..4, capacity=1..1024 (items per queue), stageK=US
// (work per item of stage K, microseconds), seconds, warmup.
// Marked lines: stage0 .. stage3 (those of the stages that exist).
#include <coz.h>

#include <condition_variable>
#include <deque>
#include <mutex>

#include "space.h"

namespace {

SPACE_WORK(stage0_work)  // @line:stage0
SPACE_WORK(stage1_work)  // @line:stage1
SPACE_WORK(stage2_work)  // @line:stage2
SPACE_WORK(stage3_work)  // @line:stage3

using WorkFn = uint64_t (*)(uint64_t, uint64_t);
constexpr WorkFn kStageWork[] = {stage0_work, stage1_work, stage2_work, stage3_work};

struct Item {
  uint64_t value;
  bool last;  // the stage that takes it winds down after passing it on
};

class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity) {}

  void push(Item item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_; });
    items_.push_back(item);
    lock.unlock();
    not_empty_.notify_one();
  }

  Item pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty(); });
    const Item item = items_.front();
    items_.pop_front();
    lock.unlock();
    not_full_.notify_one();
    return item;
  }

 private:
  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<Item> items_;
};

}  // namespace

int main(int argc, char** argv) {
  space::Params params(argc, argv);
  const double seconds = params.number("seconds", 3);
  const double warmup = params.number("warmup", 0.3);
  const int stages = params.count("stages", 2, 2, 4);
  const int capacity = params.count("capacity", 16, 1, 1024);
  std::vector<uint64_t> steps;
  for (int k = 0; k < stages; ++k)
    steps.push_back(params.steps("stage" + std::to_string(k), "stage" + std::to_string(k), 100));
  params.done();

  std::deque<BoundedQueue> queues;  // queues[k] joins stage k and k + 1
  for (int k = 0; k + 1 < stages; ++k) queues.emplace_back(size_t(capacity));
  std::atomic<bool> stop{false};
  space::Counter done;
  std::atomic<uint64_t> checksum{0};

  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    uint64_t x = 0x1234;
    for (bool last = false; !last;) {
      last = stop.load(std::memory_order_relaxed);
      x = kStageWork[0](x, steps[0]);
      queues[0].push({x, last});
    }
  });
  for (int k = 1; k < stages; ++k) {
    threads.emplace_back([&, k] {
      const bool final_stage = k + 1 == stages;
      uint64_t sum = 0;
      for (bool last = false; !last;) {
        const Item item = queues[k - 1].pop();
        last = item.last;
        const uint64_t x = kStageWork[k](item.value, steps[k]);
        if (final_stage) {
          sum ^= x;
          done.add();
          COZ_PROGRESS_NAMED("item");  // @line:item_counted
        } else {
          queues[k].push({x, last});
        }
      }
      if (final_stage) checksum = sum;
    });
  }

  space::measure_window(params.program(), warmup, seconds, stop, [&] { return done.n.load(); });
  for (std::thread& t : threads) t.join();
  std::printf("checksum=%016llx\n", static_cast<unsigned long long>(checksum.load()));
  return 0;
}
