#include "requests.h"

#include "runtime.h"
#include "thread_registry.h"

namespace coz {

void note_request(const coz_counter_t* counter, int type, uint64_t key, bool keyed) {
  Runtime* rt = runtime();
  // `coz run --system`: requests are not measured (the process running an
  // experiment reads its own points' histograms only, and a key's begin and
  // end may be in two processes).
  if (!rt || rt->system) return;
  const bool begin = type == COZ_COUNTER_TYPE_BEGIN;
  if (!begin && type != COZ_COUNTER_TYPE_END) return;
  const uint64_t window = rt->experiment.request_window.load(std::memory_order_acquire);
  // Between experiments nothing that begins or ends can be measured; only an
  // unkeyed begin is kept, to replace its thread's older one.
  if (window == 0 && (keyed || !begin)) return;
  ProgressPoint* point = rt->points.latency_point_of(counter);
  if (!point || !point->latencies) return;
  ThreadState* thread = current_thread();
  if (!keyed && !thread) return;  // a thread the runtime never registered
  if (begin) {
    const RequestStart start{window, sys::monotonic_ns(), rt->ledger.global()};
    if (keyed) rt->keyed_requests.begin(point, key, start);
    else thread->requests.begin(point, start);
    return;
  }
  const std::optional<RequestStart> start =
      keyed ? rt->keyed_requests.end(point, key, window) : thread->requests.end(point);
  if (!start || start->window != window) return;  // began before this experiment
  point->latencies->record(virtual_latency(*start, sys::monotonic_ns(), rt->ledger.global()));
}

}  // namespace coz

extern "C" __attribute__((visibility("default"))) void _coz_request(coz_counter_t* counter, int type, uint64_t key,
                                                                    int keyed) {
  coz::note_request(counter, type, key, keyed != 0);
}
