#include "progress_points.h"

namespace coz {

ProgressPoint& ProgressPoints::find_or_add(std::string_view name, ProgressPoint::Kind kind) {
  for (auto& p : points_) {
    if (p.kind == kind && p.name == name) return p;
  }
  auto& p = points_.emplace_back();
  p.name = std::string{name};
  p.kind = kind;
  if (shared_) {
    if (SharedPoint* entry = shared_->find_or_claim(name, kind)) {
      p.begin = &entry->begin;
      p.end = &entry->end;
    }
  }
  if (kind == ProgressPoint::Kind::Latency) {  // one writer: under lock_
    p.latencies = std::make_unique<LatencyHistogram>();
    p.next_latency.store(latency_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    latency_.store(&p, std::memory_order_release);
  }
  return p;
}

coz_counter_t* ProgressPoints::get_counter(int type, const char* plain_name) {
  if (!plain_name) return nullptr;
  const std::string name = plain_name + program_suffix_;
  FutexGuard guard(lock_);
  switch (type) {
    case COZ_COUNTER_TYPE_THROUGHPUT:
      return find_or_add(name, ProgressPoint::Kind::Throughput).begin->abi();
    case COZ_COUNTER_TYPE_BEGIN:
      return find_or_add(name, ProgressPoint::Kind::Latency).begin->abi();
    case COZ_COUNTER_TYPE_END:
      return find_or_add(name, ProgressPoint::Kind::Latency).end->abi();
    default:
      return nullptr;
  }
}

void ProgressPoints::import_shared() {
  if (!shared_) return;
  FutexGuard guard(lock_);
  for (SharedPoint& entry : shared_->entries) {
    if (entry.state.load(std::memory_order_acquire) != SharedPoint::Ready) continue;
    find_or_add(entry.name, static_cast<ProgressPoint::Kind>(entry.kind));
  }
}

SharedPoint* SharedPoints::find_or_claim(std::string_view name, ProgressPoint::Kind kind) {
  if (name.size() >= SharedPoint::name_size) return nullptr;
  const auto wanted_kind = static_cast<uint32_t>(kind);
  for (SharedPoint& entry : entries) {
    uint32_t state = entry.state.load(std::memory_order_acquire);
    if (state == SharedPoint::Free) {
      uint32_t expected = SharedPoint::Free;
      if (entry.state.compare_exchange_strong(expected, SharedPoint::Claiming, std::memory_order_acq_rel)) {
        entry.kind = wanted_kind;
        name.copy(entry.name, name.size());
        entry.name[name.size()] = '\0';
        entry.state.store(SharedPoint::Ready, std::memory_order_release);
        return &entry;
      }
      state = expected;
    }
    // Another process is writing this entry's name: it is ready in a few
    // stores, unless that process died between them (then the entry is lost).
    for (int spins = 0; state == SharedPoint::Claiming && spins < 1'000'000; ++spins) {
      state = entry.state.load(std::memory_order_acquire);
    }
    if (state != SharedPoint::Ready) continue;
    if (entry.kind == wanted_kind && name == entry.name) return &entry;
  }
  return nullptr;
}

ProgressPoint& ProgressPoints::add(std::string_view plain_name, ProgressPoint::Kind kind) {
  const std::string name = std::string(plain_name) + program_suffix_;
  FutexGuard guard(lock_);
  return find_or_add(name, kind);
}

}  // namespace coz
