// space_pool: a dispatcher prepares tasks and feeds a pool of workers
// through a ring of `capacity` slots counted by two POSIX semaphores (free
// slots, queued tasks); the workers take tasks under a mutex, run them, and
// count a COZ_PROGRESS per task.
//
// Parameters: workers=1..16, capacity=1..1024, dispatch=US (work per task
// of the dispatcher), task=US (a worker's work per task), seconds, warmup.
// Marked lines: dispatch, task.
#include <coz.h>
#include <semaphore.h>

#include <mutex>

#include "space.h"

namespace {

SPACE_WORK(dispatch_work)  // @line:dispatch
SPACE_WORK(task_work)      // @line:task

struct Task {
  uint64_t value;
  bool last;  // the worker that takes it winds down
};

class TaskRing {
 public:
  explicit TaskRing(size_t capacity) : slots_(capacity) {
    sem_init(&free_, 0, unsigned(capacity));
    sem_init(&queued_, 0, 0);
  }
  ~TaskRing() {
    sem_destroy(&free_);
    sem_destroy(&queued_);
  }

  void push(Task task) {  // one dispatcher: the tail needs no lock
    while (sem_wait(&free_) != 0) {}
    slots_[tail_++ % slots_.size()] = task;
    sem_post(&queued_);
  }

  Task pop() {
    while (sem_wait(&queued_) != 0) {}
    Task task;
    {
      std::lock_guard lock(head_mutex_);
      task = slots_[head_++ % slots_.size()];
    }
    sem_post(&free_);
    return task;
  }

 private:
  std::vector<Task> slots_;
  size_t tail_ = 0;
  size_t head_ = 0;
  std::mutex head_mutex_;
  sem_t free_;
  sem_t queued_;
};

}  // namespace

int main(int argc, char** argv) {
  space::Params params(argc, argv);
  const double seconds = params.number("seconds", 3);
  const double warmup = params.number("warmup", 0.3);
  const int workers = params.count("workers", 2, 1, 16);
  const int capacity = params.count("capacity", 16, 1, 1024);
  const uint64_t dispatch_steps = params.steps("dispatch", "dispatch", 20);
  const uint64_t task_steps = params.steps("task", "task", 100);
  params.done();

  TaskRing ring{size_t(capacity)};
  std::atomic<bool> stop{false};
  std::vector<space::Counter> tasks(static_cast<size_t>(workers));
  std::atomic<uint64_t> checksum{0};

  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    uint64_t x = 0x1234;
    while (!stop.load(std::memory_order_relaxed)) {
      x = dispatch_work(x, dispatch_steps);
      ring.push({x, false});
    }
    for (int w = 0; w < workers; ++w) ring.push({0, true});
  });
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      uint64_t sum = 0;
      for (Task t = ring.pop(); !t.last; t = ring.pop()) {
        sum ^= task_work(t.value, task_steps);
        tasks[size_t(w)].add();
        COZ_PROGRESS_NAMED("task");
      }
      checksum ^= sum;
    });
  }

  space::measure_window(params.program(), warmup, seconds, stop, [&] { return space::sum(tasks); });
  for (std::thread& t : threads) t.join();
  std::printf("checksum=%016llx\n", static_cast<unsigned long long>(checksum.load()));
  return 0;
}
