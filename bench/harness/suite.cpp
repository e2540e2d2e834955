#include "suite.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "analysis.h"
#include "coz_report.h"
#include "file_line.h"

namespace coz_bench {

// Designed speedups come from each program's header comment; the harness
// measures the real ones, these are only shown so a reader can spot a
// variant that does not behave as designed.
const std::vector<BenchProgram>& suite() {
  static const std::vector<BenchProgram> programs = {
      {"pipeline", "test/programs/pipeline.cpp", "cond-var queue pipeline", 11'000, 5.0, "elapsed",
       "item consumed",
       {{"consume_work", "pipeline_fast_consume", 0.50, false},
        {"produce_work", "pipeline_fast_produce", 0.0, true}}},
      {"lock_contention", "test/programs/lock_contention.cpp", "one contended mutex", 6'600, 5.0, "elapsed",
       "@iteration_done",
       {{"critical_work", "lock_contention_fast_critical", 0.50, false},
        {"outside_work", "lock_contention_fast_outside", 0.0, true}}},
      {"fork_join", "bench/programs/fork_join.cpp", "fork-join, unequal parts", 1'300, 3.9, "elapsed", "round",
       {{"left_part", "fork_join_fast_left", 1.0 / 3.0, false},
        {"right_part", "fork_join_fast_right", 0.0, true}}},
      {"futex_handoff", "bench/programs/futex_handoff.cpp", "atomic wait/notify (futex) hand-off", 5'000, 4.0,
       "elapsed", "item finished",
       {{"prepare_work", "futex_handoff_fast_prepare", 0.375, false},
        {"finish_work", "futex_handoff_fast_finish", 0.125, false}}},
      {"latency", "test/programs/latency.cpp", "latency (COZ_BEGIN/END)", 8'300, 5.0, "mean_latency", "request",
       {{"handle_work", "latency_fast_handle", 0.40, false},
        {"background_work", "latency_fast_background", 0.0, true}}},
      {"hot_no_effect", "bench/programs/hot_no_effect.cpp", "hottest line off the critical path", 6'600, 4.0,
       "elapsed", "item done",
       {{"refresh_stats", "hot_no_effect_fast_refresh", 0.0, true},
        {"stage_b", "hot_no_effect_fast_stage_b", 1.0 / 6.0, false}}},
      // pipeline's structure, the consumer's line spending its time in a
      // library built without frame pointers (test/programs/lib_*).
      {"lib_memcpy", "test/programs/lib_memcpy.cpp", "pipeline, consumer in glibc memcpy", 8'000, 3.7, "elapsed",
       "item consumed",
       {{"copy_work", "lib_memcpy_fast_copy", 0.50, false},
        {"produce_work", "lib_memcpy_fast_produce", 0.0, true}}},
      {"lib_qsort", "test/programs/lib_qsort.c", "pipeline, consumer in glibc qsort + strcmp", 8'000, 3.6, "elapsed",
       "item consumed",
       {{"sort_work", "lib_qsort_fast_sort", 0.50, false},
        {"produce_work", "lib_qsort_fast_produce", 0.0, true}}},
      {"lib_malloc", "test/programs/lib_malloc.c", "pipeline, consumer in glibc malloc/free", 8'000, 4.1, "elapsed",
       "item consumed",
       {{"churn_work", "lib_malloc_fast_churn", 0.50, false},
        {"produce_work", "lib_malloc_fast_produce", 0.0, true}}},
      {"lib_zlib", "test/programs/lib_zlib.c", "pipeline, consumer in zlib compress2", 8'000, 4.0, "elapsed",
       "item consumed",
       {{"compress_work", "lib_zlib_fast_compress", 0.50, false},
        {"produce_work", "lib_zlib_fast_produce", 0.0, true}}},
      // Threads that wake each other through descriptors (bench/programs).
      {"pipe_rpc", "bench/programs/pipe_rpc.cpp", "request/response over pipes, server in epoll_wait", 6'600, 4.0,
       "elapsed", "reply",
       {{"client_work", "pipe_rpc_fast_client", 1.0 / 3.0, false},
        {"server_work", "pipe_rpc_fast_server", 1.0 / 6.0, false}}},
      {"eventfd_pool", "bench/programs/eventfd_pool.cpp", "thread pool fed through an eventfd", 6'600, 4.0,
       "elapsed", "batch done",
       {{"large_task", "eventfd_pool_fast_large", 0.50, false},
        {"small_task", "eventfd_pool_fast_small", 0.0, true}}},
      {"unix_rpc", "bench/programs/unix_rpc.cpp", "UNIX-socket client/server in one process", 6'600, 4.0,
       "elapsed", "reply",
       {{"server_handle", "unix_rpc_fast_handle", 1.0 / 3.0, false},
        {"server_log", "unix_rpc_fast_log", 0.0, true}}},
      {"libevent_rpc", "bench/programs/libevent_rpc.c", "libevent loop serving a thread over a socketpair", 6'600,
       4.0, "elapsed", "reply",
       {{"produce_work", "libevent_rpc_fast_produce", 1.0 / 3.0, false},
        {"handle_work", "libevent_rpc_fast_handle", 1.0 / 6.0, false}}},
      // Critical paths across processes (bench/programs, issue #17): profiled
      // with `coz run --system`. Each keeps its CPU demand under two cores
      // (see the sources: over it, a line's effect is partly CPU it frees).
      {"proc_rpc", "bench/programs/proc_rpc.cpp", "client and server processes over a socketpair", 2'500, 2.25,
       "elapsed", "request",
       {{"handle_work", "proc_rpc_fast_handle", 1.0 / 3.0, false},
        {"client_work", "proc_rpc_fast_client", 1.0 / 6.0, false}},
       /*system=*/true},
      {"proc_pipeline", "bench/programs/proc_pipeline.cpp", "3-process pipeline over pipes", 4'500, 2.3, "elapsed",
       "item done",
       {{"transform_work", "proc_pipeline_fast_transform", 0.50, false},
        {"consume_work", "proc_pipeline_fast_consume", 0.0, true}},
       /*system=*/true},
      {"proc_pool", "bench/programs/proc_pool.cpp", "pre-forked pool of 2 processes on one pipe, a backend wait",
       5'300, 2.35, "elapsed", "item served",
       {{"serve_work", "proc_pool_fast_serve", 0.27, false},
        {"dispatch_work", "proc_pool_fast_dispatch", 0.0, true}},
       /*system=*/true},
      // Synchronising every ~50 us (bench/programs): the overhead table only.
      {"sync_pipeline", "bench/programs/sync_pipeline.cpp", "cond-var pipeline, ~15,000 items/s", 80'000, 5.4,
       "elapsed", "item consumed", {}},
      {"mutex_crowd", "bench/programs/mutex_crowd.cpp", "64 threads on one mutex", 2'000'000, 3.3, "elapsed",
       "iteration", {}},
  };
  return programs;
}

bool included(const Config& config, const BenchProgram& program) {
  return config.only.empty() || std::find(config.only.begin(), config.only.end(), program.name) != config.only.end();
}

std::vector<std::string> program_args(const BenchProgram& program, double seconds) {
  const double units = std::round(double(program.nominal_units) * seconds / program.nominal_s);
  return {"-n", std::to_string(std::max<uint64_t>(1, uint64_t(units)))};
}

std::string marked_line(const BenchProgram& program, const std::string& marker) {
  std::ifstream in(std::string(COZ_SOURCE_DIR) + "/" + program.source);
  const std::string tag = "// @line:" + marker;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const size_t pos = line.find(tag);
    if (pos != std::string::npos && line.size() == pos + tag.size()) {
      const std::string file = program.source.substr(program.source.rfind('/') + 1);
      return file + ":" + std::to_string(number);
    }
  }
  return "";
}

namespace {
bool path_matches(const std::string& location, const std::string& suffix) {
  if (location == suffix) return true;
  return location.size() > suffix.size() && location.compare(location.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         location[location.size() - suffix.size() - 1] == '/';
}
}  // namespace

bool location_matches(const std::string& location, const std::string& suffix) {
  // Without the " [PROGRAM]" that `coz run --system` adds.
  return path_matches(location, suffix) || path_matches(std::string(coz::split_program(location).spec), suffix);
}

bool point_matches(const BenchProgram& program, const std::string& point) {
  if (program.point.empty() || program.point[0] != '@') return coz::analysis::point_is(point, program.point);
  return location_matches(point, marked_line(program, program.point.substr(1)));
}

RunOptions measured(const Config& config, double expected_s, const std::string& cwd) {
  RunOptions options;
  options.cwd = cwd;
  options.nice = config.nice;
  options.timeout_s = std::max(60.0, 15.0 * expected_s);
  return options;
}

double plain_metric(const Config& config, const BenchProgram& program, const std::string& binary,
                    const std::vector<std::string>& args, std::string& error) {
  std::vector<std::string> argv = {config.programs + "/" + binary};
  argv.insert(argv.end(), args.begin(), args.end());
  const RunResult r = run_process(argv, measured(config, config.run_s));
  const double v = find_number(r.stderr_text, program.metric);
  if (r.ok() && v >= 0) return v;
  error = r.describe();
  return std::nan("");
}

std::optional<json::Value> report_json(const Config& config, const std::string& profile, std::string& error,
                                       int nice) {
  return coz_report_json(config.coz, profile, error, nice);
}

}  // namespace coz_bench
