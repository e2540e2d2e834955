#include "experiment_window.h"

#include <algorithm>

namespace coz {

void open_window(ProgressPoint& p) {
  p.begin_at_start = p.begins();
  p.end_at_start = p.ends();
  p.in_flight_at_credits_start = p.in_flight_at_credits.load(std::memory_order_relaxed);
  p.in_flight_wall_sum = 0;
  if (p.latencies) p.latencies->open();
}

void poll_window(ProgressPoint& p, double wall_ns) {
  if (p.kind != ProgressPoint::Kind::Latency) return;
  const int64_t in_flight = static_cast<int64_t>(p.begins()) - static_cast<int64_t>(p.ends());
  p.in_flight_wall_sum += static_cast<double>(std::max<int64_t>(in_flight, 0)) * wall_ns;
}

PointResult close_window(ProgressPoint& p, uint64_t effective_ns, uint64_t wall_ns) {
  PointResult r;
  r.name = p.name;
  const uint64_t begins = p.begins() - p.begin_at_start;
  if (p.kind == ProgressPoint::Kind::Throughput) {
    r.delta = begins;
  } else {
    r.latency = true;
    r.arrivals = begins;
    r.departures = p.ends() - p.end_at_start;
    r.difference = static_cast<int64_t>(p.begins()) - static_cast<int64_t>(p.ends());
    if (effective_ns > 0) {
      const uint64_t at_credits = p.in_flight_at_credits.load(std::memory_order_relaxed) - p.in_flight_at_credits_start;
      const double sum = std::max(0.0, p.in_flight_wall_sum - static_cast<double>(at_credits));
      r.mean_in_flight = sum / static_cast<double>(effective_ns);
    }
    if (p.latencies) r.latencies = p.latencies->since_open();
  }
  p.total_visits += begins;
  p.total_ns += wall_ns;
  return r;
}

}  // namespace coz
