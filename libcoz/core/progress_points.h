// The program's progress points: counters handed out through the Coz ABI
// (_coz_get_counter) and read by the profiler thread around each experiment.
#pragma once

#include <coz.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "futex_lock.h"
#include "request_latency.h"

namespace coz {

/// A point's counter (coz_striped_counter_t, include/coz.h): the Coz ABI's
/// count, which code built against Coz's header increments and the
/// hardware breakpoints set, and the stripes our header's macros increment.
struct alignas(64) ProgressCounter {
  coz_striped_counter_t striped{};

  ProgressCounter() { striped.head.backoff = COZ_COUNTER_STRIPED; }
  ProgressCounter(const ProgressCounter&) = delete;
  ProgressCounter& operator=(const ProgressCounter&) = delete;

  /// What _coz_get_counter hands out.
  coz_counter_t* abi() { return &striped.head; }
  /// Every visit so far. Each part only grows, so a sum read while visits
  /// go on lies between the totals before and after the read.
  uint64_t total() const {
    uint64_t sum = __atomic_load_n(&striped.head.count, __ATOMIC_RELAXED);
    for (const coz_counter_stripe_t& s : striped.stripes) sum += __atomic_load_n(&s.count, __ATOMIC_RELAXED);
    return sum;
  }
};

struct ProgressPoint {
  enum class Kind { Throughput, Latency };

  std::string name;
  Kind kind = Kind::Throughput;
  ProgressCounter own_begin;  // the counts, unless the point is shared (SharedPoints)
  ProgressCounter own_end;
  ProgressCounter* begin = &own_begin;  // throughput: visits; latency: COZ_BEGIN visits
  ProgressCounter* end = &own_end;      // latency: COZ_END visits

  // Latency: each request's own latency, for the percentiles (request_latency.h).
  std::unique_ptr<LatencyHistogram> latencies;

  // Latency: (begins - ends) x delay ns, summed at every delay credit (in
  // the sampled thread's signal handler). See Profiler::poll_in_flight.
  std::atomic<uint64_t> in_flight_at_credits{0};
  // The next latency point (ProgressPoints' lock-free list for signal handlers).
  std::atomic<ProgressPoint*> next_latency{nullptr};

  // Profiler-thread bookkeeping for the running experiment.
  uint64_t begin_at_start = 0;
  uint64_t end_at_start = 0;
  uint64_t in_flight_at_credits_start = 0;
  double in_flight_wall_sum = 0;  // sum of (begins - ends) x wall ns, over polls

  // Visit rate over all experiments so far, to size the next experiment.
  uint64_t total_visits = 0;
  uint64_t total_ns = 0;

  uint64_t begins() const { return begin->total(); }
  uint64_t ends() const { return end->total(); }
};

/// The points of every process of a `coz run --system` run, in memory they
/// all share: one counter per name, whichever process counts it, so that the
/// process running the experiment reads the progress of all. A fixed table,
/// each entry claimed once and never freed; entries are written whole before
/// they are marked ready.
struct SharedPoint {
  static constexpr size_t name_size = 120;
  enum State : uint32_t { Free, Claiming, Ready };
  std::atomic<uint32_t> state{Free};
  uint32_t kind = 0;  // ProgressPoint::Kind
  char name[name_size] = {};
  ProgressCounter begin;
  ProgressCounter end;
};

struct SharedPoints {
  static constexpr size_t capacity = 64;
  SharedPoint entries[capacity];

  /// The entry for (name, kind), claimed if new; nullptr when the table is
  /// full or the name too long to share. Lock-free; any process.
  SharedPoint* find_or_claim(std::string_view name, ProgressPoint::Kind kind);
};

class ProgressPoints {
 public:
  /// The counter for (type, name); created on first use. `name` is copied
  /// (callers such as the Rust crate pass a temporary string). Returns
  /// nullptr for an unknown type.
  coz_counter_t* get_counter(int type, const char* name);

  /// Adds a point that counts from outside the program (e.g. the end-to-end point).
  ProgressPoint& add(std::string_view name, ProgressPoint::Kind kind);

  /// From now on, points count in `shared` (at start-up, before any counter
  /// is handed out; `coz run --system`), and each new point's name ends
  /// with `program_suffix` (" [PROGRAM]", as line names do): a point is
  /// shared by the processes of one program, never merged with another
  /// program's point of the same name.
  void share(SharedPoints* shared, std::string program_suffix) {
    shared_ = shared;
    program_suffix_ = std::move(program_suffix);
  }
  /// Adds every point another process of the run has created, so that
  /// for_each sees the progress of all of them. Profiler thread.
  void import_shared();

  /// Calls f(ProgressPoint&) for every point, under the registry lock.
  template <typename F>
  void for_each(F&& f) {
    FutexGuard guard(lock_);
    for (auto& p : points_) f(p);
  }

  /// Calls f(ProgressPoint&) for every latency point without locking: for
  /// signal handlers. Points are never removed and never move, so they form
  /// a list, each published whole before it is linked in: every latency
  /// point is here, however many (a fixed table of 64 left the others
  /// without delay-credit bookkeeping).
  template <typename F>
  void for_each_latency_lock_free(F&& f) {
    for (ProgressPoint* p = latency_.load(std::memory_order_acquire); p;
         p = p->next_latency.load(std::memory_order_acquire)) {
      f(*p);
    }
  }

  /// A thread was just credited `delay_ns` (sampled in the selected line):
  /// notes how many requests of each latency point are in flight now.
  /// Async-signal-safe.
  void note_delay_credit(uint64_t delay_ns) {
    for_each_latency_lock_free([&](ProgressPoint& p) {
      uint64_t b = p.begins(), e = p.ends();
      if (b > e) p.in_flight_at_credits.fetch_add((b - e) * delay_ns, std::memory_order_relaxed);
    });
  }

  /// The latency point whose begin or end counter `counter` is; nullptr for
  /// any other (lock-free: the runtime's request records look it up).
  ProgressPoint* latency_point_of(const coz_counter_t* counter) {
    ProgressPoint* found = nullptr;
    for_each_latency_lock_free([&](ProgressPoint& p) {
      if (!found && (p.begin->abi() == counter || p.end->abi() == counter)) found = &p;
    });
    return found;
  }

  /// Whether any latency point exists (lock-free).
  bool has_latency() const { return latency_.load(std::memory_order_acquire) != nullptr; }

  size_t size() {
    FutexGuard guard(lock_);
    return points_.size();
  }

  /// The registry's lock, for the runtime's fork handlers (runtime.cpp),
  /// which hold every lock of the runtime across fork().
  FutexLock& lock() { return lock_; }

 private:
  ProgressPoint& find_or_add(std::string_view name, ProgressPoint::Kind kind);

  FutexLock lock_;
  std::deque<ProgressPoint> points_;  // deque: counters never move
  std::atomic<ProgressPoint*> latency_{nullptr};  // the latency points, newest first
  SharedPoints* shared_ = nullptr;
  std::string program_suffix_;
};

}  // namespace coz
