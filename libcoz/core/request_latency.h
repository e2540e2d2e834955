// Each request's own latency, for a latency point's percentiles (issue #53,
// docs/analysis.md section 13). A request begins and ends at the point's
// COZ_BEGIN and COZ_END on one thread, or at COZ_BEGIN_KEY and COZ_END_KEY
// with the same key on any. One that began and ended within the same experiment is
// recorded, at its latency in the virtually sped-up program: its wall time
// less the delays inserted meanwhile (the ledger's global count moved by
// them, as an experiment's effective duration does). One that spans two
// experiments is not: it ran partly at another speedup. The analysis
// corrects for the longer requests that spanning leaves out more often.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

#include "futex_lock.h"
#include "latency_buckets.h"

namespace coz {

/// Where and when a request began: the experiment window it began in
/// (ExperimentState::request_window; 0 between experiments), its wall
/// clock and the ledger's global count then.
struct RequestStart {
  uint64_t window = 0;
  uint64_t begin_ns = 0;
  uint64_t begin_global = 0;
};

/// Its latency in the virtually sped-up program, ended at `end_ns` with the
/// global count at `end_global` (0 if the delays exceed its wall time). The
/// global count, not the ending thread's own: both are lumps of a sample
/// period's delay, and a request shorter than a period gets a whole lump or
/// none; the thread's own lumps are half as frequent as the global ones on
/// two busy threads, and read tail_latency's common line further off (the
/// median +18% for +46%, against +57% with the global count; bench/tail).
inline uint64_t virtual_latency(const RequestStart& start, uint64_t end_ns, uint64_t end_global) {
  const uint64_t wall = end_ns > start.begin_ns ? end_ns - start.begin_ns : 0;
  const uint64_t paused = end_global > start.begin_global ? end_global - start.begin_global : 0;
  return wall > paused ? wall - paused : 0;
}

/// A latency point's requests, counted by bucket. Any thread records; the
/// profiler thread opens a window as an experiment begins and reads what
/// was recorded since as it ends.
class LatencyHistogram {
 public:
  void record(uint64_t ns) { counts_[latency::bucket_of(ns)].fetch_add(1, std::memory_order_relaxed); }
  void open();
  /// The requests recorded since open(), non-empty buckets only.
  latency::Counts since_open() const;

 private:
  std::array<std::atomic<uint64_t>, latency::bucket_count> counts_{};
  std::array<uint64_t, latency::bucket_count> at_open_{};
};

/// One thread's requests in flight, by point: a begin and the next end of
/// the same point on the thread are one request. A few points at a time;
/// a begin of a fifth replaces the oldest. Lock-free (a breakpoint's trap
/// handler may record here).
struct ThreadRequests {
  static constexpr int slots = 4;
  struct Slot {
    const void* point = nullptr;
    RequestStart start;
  };
  Slot slot[slots];

  void begin(const void* point, const RequestStart& start);
  /// The point's begin, taken out; nullopt when there is none.
  std::optional<RequestStart> end(const void* point);
};

/// Requests that move between threads, by (point, key). A fixed table in
/// 64 stripes, each under a lock of its own; an entry is free once its
/// window has passed, so the table holds only the current experiment's
/// requests in flight. A begin that finds its stripe full is dropped
/// (counted): its request goes unmeasured, nothing else.
class KeyedRequests {
 public:
  static constexpr size_t stripes = 64;
  static constexpr size_t per_stripe = 256;

  void begin(const void* point, uint64_t key, const RequestStart& start);
  /// The begin of (point, key) in `window`, taken out; nullopt when there is none.
  std::optional<RequestStart> end(const void* point, uint64_t key, uint64_t window);
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    const void* point = nullptr;
    uint64_t key = 0;
    RequestStart start;  // free when start.window is 0 or not the window being begun in
  };
  struct alignas(64) Stripe {
    FutexLock lock;
    std::array<Entry, per_stripe> entries{};
  };
  static size_t hash(const void* point, uint64_t key);
  /// Visits the entries of (point, key)'s probe sequence in order, under its
  /// stripe's lock, until `visit` returns true; whether one did.
  template <typename Visit>
  bool probe(const void* point, uint64_t key, Visit&& visit);

  std::array<Stripe, stripes> stripes_{};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace coz
