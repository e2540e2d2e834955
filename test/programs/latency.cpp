// latency: two server threads each handle requests in a closed loop. A request
// is COZ_BEGIN("request") .. COZ_END("request") around parse_work (1 unit) and
// handle_work (4 units); between requests each thread does background_work
// (1 unit) that is not part of any request. handle_work dominates the request
// latency: speeding it up by s shortens a request by 0.8 s.
//
// 1 unit = 0.2 ms: a request takes 1 ms, a loop 1.2 ms per thread.
// Variants: -DHALVE_HANDLE_WORK (real latency speedup ~40%),
//           -DHALVE_BACKGROUND_WORK (latency ~0%, throughput ~8%).
// Usage: latency [-n REQUESTS] [--exit-status N]; default ~5 s.
// Stderr reports the measured mean request latency (the ground truth).
#include <coz.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

constexpr uint64_t kUnitSteps = kStepsPerMs / 5;  // 0.2 ms
#ifdef HALVE_BACKGROUND_WORK
constexpr uint64_t kBackgroundSteps = kUnitSteps / 2;
#else
constexpr uint64_t kBackgroundSteps = kUnitSteps;
#endif
constexpr uint64_t kParseSteps = kUnitSteps;
#ifdef HALVE_HANDLE_WORK
constexpr uint64_t kHandleSteps = 2 * kUnitSteps;
#else
constexpr uint64_t kHandleSteps = 4 * kUnitSteps;
#endif
constexpr uint64_t kDefaultRequests = 8'300;  // 2 threads x 1.2 ms per request: ~5 s
constexpr int kServers = 2;

volatile uint64_t g_sink = 0;

__attribute__((noinline)) uint64_t background_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 27)) * 0x9e3779b97f4a7c15ULL + i;  // @line:background_work
  return x;
}

__attribute__((noinline)) uint64_t parse_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:parse_work
  return x;
}

__attribute__((noinline)) uint64_t handle_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:handle_work
  return x;
}

struct Totals {
  std::atomic<uint64_t> next_request{0};
  std::atomic<uint64_t> checksum{0};     // sum of per-request results: order-independent
  std::atomic<uint64_t> latency_ns{0};   // summed request latencies
};

void server(Totals& totals, uint64_t requests) {
  uint64_t background = 0;
  for (;;) {
    const uint64_t request = totals.next_request.fetch_add(1, std::memory_order_relaxed);
    if (request >= requests) break;
    background = background_work(background + request, kBackgroundSteps);
    const auto start = std::chrono::steady_clock::now();
    COZ_BEGIN("request");  // @line:request_begin
    const uint64_t parsed = parse_work(request, kParseSteps);
    const uint64_t response = handle_work(parsed, kHandleSteps);
    COZ_END("request");  // @line:request_end
    const auto stop = std::chrono::steady_clock::now();
    totals.latency_ns.fetch_add(
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start).count()),
        std::memory_order_relaxed);
    totals.checksum.fetch_add(response, std::memory_order_relaxed);
  }
  g_sink = background;
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultRequests);
  const coz_programs::Stopwatch stopwatch;

  Totals totals;
  std::vector<std::thread> servers;
  for (int i = 0; i < kServers; ++i) servers.emplace_back(server, std::ref(totals), args.n);
  for (std::thread& t : servers) t.join();

  std::printf("latency requests=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(totals.checksum.load()));
  const double mean_ms = args.n == 0 ? 0.0 : totals.latency_ns.load() / 1e6 / static_cast<double>(args.n);
  std::fprintf(stderr, "latency: elapsed=%.3f s mean_latency=%.4f ms\n", stopwatch.seconds(), mean_ms);
  return args.exit_status;
}
