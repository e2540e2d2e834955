#include "progress_points.h"

namespace coz {

ProgressPoint& ProgressPoints::find_or_add(std::string_view name, ProgressPoint::Kind kind) {
  for (auto& p : points_) {
    if (p.kind == kind && p.name == name) return p;
  }
  auto& p = points_.emplace_back();
  p.name = std::string{name};
  p.kind = kind;
  if (kind == ProgressPoint::Kind::Latency) {  // one writer: under lock_
    p.next_latency.store(latency_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    latency_.store(&p, std::memory_order_release);
  }
  return p;
}

coz_counter_t* ProgressPoints::get_counter(int type, const char* name) {
  if (!name) return nullptr;
  FutexGuard guard(lock_);
  switch (type) {
    case COZ_COUNTER_TYPE_THROUGHPUT:
      return find_or_add(name, ProgressPoint::Kind::Throughput).begin.abi();
    case COZ_COUNTER_TYPE_BEGIN:
      return find_or_add(name, ProgressPoint::Kind::Latency).begin.abi();
    case COZ_COUNTER_TYPE_END:
      return find_or_add(name, ProgressPoint::Kind::Latency).end.abi();
    default:
      return nullptr;
  }
}

ProgressPoint& ProgressPoints::add(std::string_view name, ProgressPoint::Kind kind) {
  FutexGuard guard(lock_);
  return find_or_add(name, kind);
}

}  // namespace coz
