#include "config.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

namespace coz {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

template <typename T>
void read_number(const char* name, T& into, T min, T max, std::vector<std::string>& errors) {
  const char* v = env(name);
  if (!v) return;
  std::string_view s{v};
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || value < min || value > max) {
    errors.push_back(fmt::format("{}={} is not a number in [{}, {}]", name, v, min, max));
    return;
  }
  into = value;
}

}  // namespace

Config Config::from_environment(std::vector<std::string>& errors) {
  Config c;
  if (const char* v = env("COZ_OUTPUT")) c.output_path = v;
  if (const char* v = env("COZ_PROFILE_FORMAT")) {
    std::string_view f{v};
    if (f == "coz") c.profile_format = Config::ProfileFormat::Coz;
    else if (f == "coz-jsonl") c.profile_format = Config::ProfileFormat::CozJsonl;
    else errors.push_back(fmt::format("COZ_PROFILE_FORMAT={} is not coz or coz-jsonl", v));
  }
  if (const char* v = env("COZ_PROGRAM")) c.program = v;
  if (const char* v = env("COZ_BINARY_SCOPE")) c.binary_scope = split_lines(v);
  if (const char* v = env("COZ_SOURCE_SCOPE")) c.source_scope = split_lines(v);
  if (const char* v = env("COZ_FIXED_LINE")) c.fixed_line = v;
  if (const char* v = env("COZ_PROGRESS_LINES")) c.progress_lines = split_lines(v);
  if (const char* v = env("COZ_LATENCY_LINES")) c.latency_lines = split_lines(v);
  if (const char* v = env("COZ_DEBUG_ROOT")) c.debug_root = v;
  if (const char* v = env("COZ_CONTROL")) c.control_path = v;
  if (const char* v = env("COZ_SYSTEM")) c.system_path = v;
  if (const char* v = env("COZ_MESSAGES")) c.messages_path = v;
  if (const char* v = env("COZ_STDERR")) c.run_stderr = v;
  read_number("COZ_RUN_PID", c.run_pid, 1, 1 << 22, errors);
  if (const char* v = env("COZ_STATUS")) c.status_line = std::string_view{v} == "1";
  read_number("COZ_FIXED_SPEEDUP", c.fixed_speedup_percent, 0, 100, errors);
  if (const char* v = env("COZ_GRANULARITY")) {
    std::string_view g{v};
    if (g == "function") c.granularity = Config::Granularity::Function;
    else if (g == "line") c.granularity = Config::Granularity::Line;
    else if (g == "auto") c.granularity = Config::Granularity::Auto;
    else errors.push_back(fmt::format("COZ_GRANULARITY={} is not line, function or auto", v));
  }
  read_number<uint64_t>("COZ_TWO_PHASE_EXPERIMENTS", c.two_phase_experiments, 1, 1'000'000, errors);
  if (const char* v = env("COZ_END_TO_END")) c.end_to_end = std::string_view{v} != "0";
  if (const char* v = env("COZ_CPU_RINGS")) c.cpu_rings = std::string_view{v} != "0";
  if (const char* v = env("COZ_SAMPLE_TRAPS")) c.sample_traps = std::string_view{v} != "0";
  if (const char* v = env("COZ_WHOLE_CPU_SAMPLING")) c.whole_cpu_sampling = std::string_view{v} != "0";
  if (const char* v = env("COZ_SAMPLING")) c.sampling = std::string_view{v} != "0";
  read_number<uint64_t>("COZ_SAMPLE_PERIOD_NS", c.sample_period_ns, 10'000, 1'000'000'000, errors);
  read_number("COZ_VERBOSE", c.verbosity, 0, 3, errors);
  read_number<uint64_t>("COZ_EXPERIMENT_MIN_NS", c.experiment_min_ns, 1'000'000, 60'000'000'000, errors);
  read_number<uint64_t>("COZ_EXPERIMENT_MAX_NS", c.experiment_max_ns, 1'000'000, 600'000'000'000, errors);
  read_number<uint64_t>("COZ_COOLOFF_NS", c.cooloff_ns, 0, 10'000'000'000, errors);
  read_number<uint64_t>("COZ_TARGET_VISITS", c.target_visits, 1, 1'000'000, errors);
  read_number("COZ_DELAY_SAMPLING_RATE", c.delay_sampling_rate, 1u, 8u, errors);
  read_number<uint64_t>("COZ_TIMER_SWITCH_RATE", c.timer_switch_rate, 0, 100'000'000, errors);
  read_number<uint64_t>("COZ_TIMER_SWITCH_RATE_OUTSIDE", c.timer_switch_rate_outside, 0, 100'000'000, errors);
  if (c.experiment_max_ns < c.experiment_min_ns) c.experiment_max_ns = c.experiment_min_ns;
  return c;
}

}  // namespace coz
