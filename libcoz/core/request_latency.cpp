#include "request_latency.h"

namespace coz {

void LatencyHistogram::open() {
  for (size_t b = 0; b < counts_.size(); ++b) at_open_[b] = counts_[b].load(std::memory_order_relaxed);
}

latency::Counts LatencyHistogram::since_open() const {
  latency::Counts out;
  for (size_t b = 0; b < counts_.size(); ++b) {
    const uint64_t now = counts_[b].load(std::memory_order_relaxed);
    if (now > at_open_[b]) out.emplace_back(static_cast<uint32_t>(b), now - at_open_[b]);
  }
  return out;
}

void ThreadRequests::begin(const void* point, const RequestStart& start) {
  Slot* chosen = nullptr;
  for (Slot& s : slot) {
    if (s.point == point) {  // a begin without its end: the request was abandoned
      chosen = &s;
      break;
    }
    if (!chosen && (s.point == nullptr || s.start.window != start.window)) chosen = &s;
  }
  if (!chosen) {  // four points in flight on this thread in this window: the oldest goes
    chosen = &slot[0];
    for (Slot& s : slot) {
      if (s.start.begin_ns < chosen->start.begin_ns) chosen = &s;
    }
  }
  chosen->point = point;
  chosen->start = start;
}

std::optional<RequestStart> ThreadRequests::end(const void* point) {
  for (Slot& s : slot) {
    if (s.point != point) continue;
    s.point = nullptr;
    return s.start;
  }
  return std::nullopt;
}

size_t KeyedRequests::hash(const void* point, uint64_t key) {
  uint64_t h = (reinterpret_cast<uintptr_t>(point) >> 6) ^ key;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return static_cast<size_t>(h);
}

template <typename Visit>
bool KeyedRequests::probe(const void* point, uint64_t key, Visit&& visit) {
  const size_t h = hash(point, key);
  Stripe& stripe = stripes_[h % stripes];
  const size_t first = (h / stripes) % per_stripe;
  FutexGuard guard(stripe.lock);
  for (size_t i = 0; i < per_stripe; ++i) {
    if (visit(stripe.entries[(first + i) % per_stripe])) return true;
  }
  return false;
}

void KeyedRequests::begin(const void* point, uint64_t key, const RequestStart& start) {
  // The first entry not in use in this window. A key begun again before its
  // end (an abandoned request) is not looked for: its older entry, if it
  // comes first, pairs with the end, and frees with the window.
  const bool placed = probe(point, key, [&](Entry& e) {
    if (e.start.window != 0 && e.start.window == start.window) return false;
    e.point = point;
    e.key = key;
    e.start = start;
    return true;
  });
  if (!placed) dropped_.fetch_add(1, std::memory_order_relaxed);
}

std::optional<RequestStart> KeyedRequests::end(const void* point, uint64_t key, uint64_t window) {
  std::optional<RequestStart> found;
  probe(point, key, [&](Entry& e) {
    if (e.point == nullptr) return true;  // never used: no entry of this key lies further on
    if (e.point != point || e.key != key || e.start.window != window) return false;
    found = e.start;
    e.start.window = 0;  // free; `point` stays set, so later probes go on past it
    return true;
  });
  return found;
}

}  // namespace coz
