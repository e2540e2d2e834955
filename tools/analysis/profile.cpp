// Reads profile records (docs/profile-format.md) into a Profile. The reader is
// the one place that decides what a valid record is, for both text forms;
// bad input is skipped line by line with a warning, never thrown.
#include "profile.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "latency_buckets.h"
#include "record_line.h"

namespace coz::analysis {
namespace {

// Real records are well under 1 KiB; a longer line is garbage, and the cap
// keeps memory bounded on a file with no newlines at all.
constexpr size_t max_line_bytes = 64 * 1024;

void warn(Profile& profile, const std::string& file, uint64_t line, const std::string& message) {
  if (profile.warnings.size() < Profile::max_warnings) {
    profile.warnings.push_back(line > 0 ? fmt::format("{}:{}: {}", file, line, message) : message);
    profile.warning_places.push_back({file, line, message});
  } else {
    ++profile.warnings_dropped;
  }
}

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

std::optional<uint64_t> to_u64(const std::string& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && end == s.data() + s.size()) return v;
  return std::nullopt;
}

std::optional<int64_t> to_i64(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && end == s.data() + s.size()) return v;
  return std::nullopt;
}

std::optional<double> to_double(const std::string& s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && end == s.data() + s.size() && std::isfinite(v)) return v;
  return std::nullopt;
}

// Counts are integers, but a JSON writer may well emit 1.2e8 or 118.0.
std::optional<uint64_t> to_count(const std::string& s) {
  if (auto v = to_u64(s)) return v;
  auto d = to_double(s);
  if (!d || *d < 0 || *d >= 18446744073709551616.0 || std::floor(*d) != *d) return std::nullopt;
  return static_cast<uint64_t>(*d);
}

// Field access that turns the first problem into the warning's reason.
class Fields {
 public:
  explicit Fields(const RecordLine& r) : r_(r) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  std::string text(const char* key) {
    const std::string* v = r_.find(key);
    if (v == nullptr || v->empty()) {
      fail(fmt::format("missing {}=", key));
      return {};
    }
    return *v;
  }
  uint64_t count(const char* key) {
    const std::string* v = r_.find(key);
    if (v == nullptr) return fail(fmt::format("missing {}=", key)), 0;
    if (!v->empty() && v->front() == '-') return fail(fmt::format("negative {}", key)), 0;
    auto n = to_count(*v);
    if (!n) return fail(fmt::format("bad {}='{}'", key, clip(*v))), 0;
    return *n;
  }
  int64_t signed_count(const char* key) {
    const std::string* v = r_.find(key);
    if (v == nullptr) return fail(fmt::format("missing {}=", key)), 0;
    auto n = to_i64(*v);
    if (!n) return fail(fmt::format("bad {}='{}'", key, clip(*v))), 0;
    return *n;
  }
  /// An optional count whose absence or bad value is not an error (the caller ignores it).
  std::optional<uint64_t> lenient_count(const char* key) const {
    const std::string* v = r_.find(key);
    if (v == nullptr || v->empty() || v->front() == '-') return std::nullopt;
    return to_count(*v);
  }
  /// An optional non-negative number whose absence or bad value is not an error.
  std::optional<double> lenient_real(const char* key) const {
    const std::string* v = r_.find(key);
    if (v == nullptr) return std::nullopt;
    auto d = to_double(*v);
    if (!d || !(*d >= 0.0) || std::isinf(*d)) return std::nullopt;
    return d;
  }
  std::optional<double> optional_real(const char* key) {
    const std::string* v = r_.find(key);
    if (v == nullptr) return std::nullopt;
    auto d = to_double(*v);
    if (!d) fail(fmt::format("bad {}='{}'", key, clip(*v)));
    return d;
  }
  double real(const char* key) {
    if (r_.find(key) == nullptr) return fail(fmt::format("missing {}=", key)), 0.0;
    return optional_real(key).value_or(0.0);
  }
  bool has(const char* key) const { return r_.find(key) != nullptr; }
  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

 private:
  static std::string clip(const std::string& v) { return v.size() > 40 ? v.substr(0, 40) + "..." : v; }

  const RecordLine& r_;
  std::string error_;
};

std::optional<Experiment> parse_experiment(Fields& f) {
  Experiment e;
  e.selected = f.text("selected");
  e.speedup = f.real("speedup");
  e.duration_ns = f.count("duration");
  e.selected_samples = f.count("selected-samples");
  e.end_ns = f.lenient_count("end").value_or(0);
  // Core figures count only whole: all three, each valid (section 5.1).
  auto cores = f.lenient_count("cores");
  auto busy = f.lenient_real("cores-busy");
  auto waiting = f.lenient_real("waiting-for-core");
  if (cores && *cores >= 1 && busy && waiting) {
    e.cores = *cores;
    e.cores_busy = *busy;
    e.waiting_for_core = *waiting;
  }
  if (auto switches = f.lenient_count("voluntary-switches"); switches && *switches <= uint64_t(INT64_MAX)) {
    e.voluntary_switches = static_cast<int64_t>(*switches);
  }
  if (f.ok() && !(e.speedup >= 0.0 && e.speedup <= 1.0)) {
    f.fail(fmt::format("speedup {} outside [0, 1]", e.speedup));
  }
  if (!f.ok()) return std::nullopt;
  return e;
}

std::optional<ThroughputMeasurement> parse_throughput(Fields& f) {
  ThroughputMeasurement m;
  m.name = f.text("name");
  m.delta = f.count("delta");
  if (!f.ok()) return std::nullopt;
  return m;
}

std::optional<LatencyMeasurement> parse_latency(Fields& f) {
  LatencyMeasurement m;
  m.name = f.text("name");
  m.arrivals = f.count("arrivals");
  m.departures = f.count("departures");
  auto mean = f.optional_real("mean-in-flight");
  if (mean && *mean < 0) f.fail("negative mean-in-flight");
  if (mean) m.mean_in_flight = *mean;
  // With mean-in-flight present, Little's law does not need `difference`.
  if (!mean || f.has("difference")) m.difference = f.signed_count("difference");
  if (!f.ok()) return std::nullopt;
  return m;
}

std::optional<LatencyHistogramRecord> parse_latency_histogram(Fields& f) {
  LatencyHistogramRecord h;
  h.name = f.text("name");
  const std::string scheme = f.text("scheme");
  const std::string buckets = f.text("buckets");
  if (!f.ok()) return std::nullopt;
  if (scheme != latency::scheme_name) {
    f.fail(fmt::format("latency-histogram scheme {} unknown (this coz reads {})", scheme, latency::scheme_name));
    return std::nullopt;
  }
  std::string error;
  if (!latency::decode(buckets, h.buckets, error)) {
    f.fail("latency-histogram buckets: " + error);
    return std::nullopt;
  }
  return h;
}

// State carried from line to line within one file.
struct Reader {
  Profile& profile;
  const std::string& source;
  // Index of the experiment that point records attach to; std::nullopt before
  // the first experiment or after a malformed one (its points must not be
  // credited to the experiment before it).
  std::optional<size_t> current;
  bool current_was_skipped = false;

  void warn_at(uint64_t lineno, const std::string& why) {
    warn(profile, source, lineno, why);
  }

  Experiment* point_owner(uint64_t lineno) {
    if (current) return &profile.experiments[*current];
    warn_at(lineno, current_was_skipped ? "point record after a skipped experiment, skipped"
                                        : "point record before any experiment, skipped");
    return nullptr;
  }

  void handle(const std::string& line, uint64_t lineno, bool truncated) {
    RecordLine rec;
    std::string error;
    if (!split_record_line(line, rec, error)) {
      warn_at(lineno, truncated ? "truncated last line, skipped" : error + ", skipped");
      return;
    }
    if (rec.cut) {
      // The first part of a record that a failed write cut short (a full
      // disk), ended by the runtime's next write: not a record.
      // The points after it belong to it if it was an experiment (the
      // runtime retries the rest of a cut block), never to the one before.
      current.reset();
      current_was_skipped = true;
      warn_at(lineno, "record cut short by a failed write (disk full?), skipped");
      return;
    }
    Fields f(rec);
    const std::string& t = rec.type;
    if (t == "experiment") {
      auto e = parse_experiment(f);
      if (e) {
        profile.experiments.push_back(std::move(*e));
        current = profile.experiments.size() - 1;
      } else {
        current.reset();
        current_was_skipped = true;
      }
    } else if (t == "throughput-point" || t == "progress-point") {
      auto m = parse_throughput(f);
      if (m) {
        if (Experiment* e = point_owner(lineno)) e->throughput.push_back(std::move(*m));
      }
    } else if (t == "latency-point") {
      auto m = parse_latency(f);
      if (m) {
        if (Experiment* e = point_owner(lineno)) e->latency.push_back(std::move(*m));
      }
    } else if (t == "latency-histogram") {
      auto h = parse_latency_histogram(f);
      if (h) {
        if (Experiment* e = point_owner(lineno)) e->latency_histograms.push_back(std::move(*h));
      }
    } else if (t == "samples") {
      std::string location = f.text("location");
      uint64_t count = f.count("count");
      const std::string* function = rec.find("function");
      if (f.ok()) {
        LocationSamples& s = profile.samples[location];
        s.count = saturating_add(s.count, count);
        if (function != nullptr && !function->empty()) s.function = *function;
      }
    } else if (t == "stack") {
      std::string frames = f.text("frames");
      uint64_t count = f.count("count");
      if (f.ok()) {
        uint64_t& total = profile.stacks[frames];
        total = saturating_add(total, count);
      }
    } else if (t == "blocked") {
      std::string site = f.text("site");
      std::string kind = f.text("kind");
      uint64_t time = f.count("time");
      uint64_t count = f.count("count");
      if (f.ok()) {
        BlockedTime& b = profile.blocked[{site, kind}];
        b.time_ns = saturating_add(b.time_ns, time);
        b.count = saturating_add(b.count, count);
      }
    } else if (t == "experiments-stopped") {
      std::string reason = f.text("reason");
      if (f.ok()) profile.experiments_stopped.push_back(reason);
    } else if (t == "runtime") {
      uint64_t time = f.count("time");
      if (f.ok()) profile.runtime_ns = saturating_add(profile.runtime_ns, time);
    } else if (t == "sampling") {
      uint64_t samples = f.count("samples");
      uint64_t in_scope = f.count("in-scope");
      uint64_t lost = f.count("lost");
      if (f.ok()) {
        SamplingTotals& s = profile.sampling;
        ++s.processes;
        s.samples = saturating_add(s.samples, samples);
        s.in_scope = saturating_add(s.in_scope, in_scope);
        s.lost = saturating_add(s.lost, lost);
        if (auto dropped = f.lenient_count("stacks-dropped")) s.stacks_dropped = saturating_add(s.stacks_dropped, *dropped);
        if (auto dropped = f.lenient_count("waits-dropped")) s.waits_dropped = saturating_add(s.waits_dropped, *dropped);
        auto steal = f.lenient_count("steal");
        auto machine = f.lenient_count("machine-time");
        if (steal && machine) {
          s.steal_ns = saturating_add(s.steal_ns, *steal);
          s.machine_ns = saturating_add(s.machine_ns, *machine);
        }
        auto period = f.lenient_count("period");
        auto cpu_time = f.lenient_count("cpu-time");
        if (period && cpu_time) {
          ++s.timed;
          uint64_t most = std::numeric_limits<uint64_t>::max();
          uint64_t attributed = in_scope != 0 && *period > most / in_scope ? most : in_scope * *period;
          s.attributed_ns = saturating_add(s.attributed_ns, attributed);
          s.cpu_time_ns = saturating_add(s.cpu_time_ns, *cpu_time);
        }
      }
    }
    // Any other type (startup, process, later additions) carries nothing the
    // analysis uses and is ignored silently, as the format requires.
    if (!f.ok()) {
      warn_at(lineno, truncated ? fmt::format("truncated last line ({}), skipped", f.error())
                                : fmt::format("{} record: {}, skipped", t, f.error()));
    }
  }
};

}  // namespace

void read_profile(std::istream& in, const std::string& source_name, Profile& profile) {
  Reader reader{profile, source_name, std::nullopt};
  std::streambuf* buf = in.rdbuf();
  if (buf == nullptr) return;
  std::string line;
  uint64_t lineno = 0;
  bool too_long = false;
  bool any = false;  // bytes seen on the current line
  using traits = std::char_traits<char>;
  // A bounded getline over the stream buffer: std::getline would happily
  // allocate a whole file without newlines.
  for (;;) {
    traits::int_type c = buf->sbumpc();
    if (traits::eq_int_type(c, traits::eof())) break;
    char ch = traits::to_char_type(c);
    if (ch != '\n') {
      any = true;
      if (line.size() < max_line_bytes) {
        line += ch;
      } else {
        too_long = true;
      }
      continue;
    }
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (too_long) {
      reader.warn_at(lineno, fmt::format("line longer than {} bytes, skipped", max_line_bytes));
    } else if (line.find_first_not_of(" \t") != std::string::npos) {
      reader.handle(line, lineno, false);
    }
    line.clear();
    too_long = false;
    any = false;
  }
  if (any) {  // the last line had no newline: maybe cut off by a crash
    ++lineno;
    if (too_long) {
      reader.warn_at(lineno, fmt::format("line longer than {} bytes, skipped", max_line_bytes));
    } else if (line.find_first_not_of(" \t\r") != std::string::npos) {
      reader.handle(line, lineno, true);
    }
  }
}

bool read_profile_file(const std::string& path, Profile& profile) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    warn(profile, path, 0, fmt::format("cannot open {}: Is a directory", path));
    return false;
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    warn(profile, path, 0,
         fmt::format("cannot open {}: {}", path, errno != 0 ? std::strerror(errno) : "unknown error"));
    return false;
  }
  read_profile(in, path, profile);
  if (in.bad()) warn(profile, path, 0, fmt::format("{}: read error, the rest of the file was skipped", path));
  return true;
}

namespace {
/// Moves every entry of `from` into `into`: the keys `into` lacks as they
/// are (map nodes change hands, nothing is copied: a file's maps can hold
/// millions of locations, and copying them doubled the peak memory of
/// `coz report`), then `combine(into's value, from's value)` for the others.
template <typename Map, typename Combine>
void move_entries(Map& into, Map& from, Combine combine) {
  into.merge(from);
  for (auto& [key, value] : from) combine(into.find(key)->second, value);
  from.clear();
}
}  // namespace

void merge_profile(Profile& into, Profile&& from) {
  std::move(from.experiments.begin(), from.experiments.end(), std::back_inserter(into.experiments));
  auto sum = [](uint64_t& total, uint64_t count) { total = saturating_add(total, count); };
  move_entries(into.samples, from.samples, [](LocationSamples& kept, LocationSamples& later) {
    kept.count = saturating_add(kept.count, later.count);
    if (!later.function.empty()) kept.function = std::move(later.function);  // later files win, as later records do
  });
  move_entries(into.stacks, from.stacks, sum);
  move_entries(into.blocked, from.blocked, [](BlockedTime& total, const BlockedTime& b) {
    total.time_ns = saturating_add(total.time_ns, b.time_ns);
    total.count = saturating_add(total.count, b.count);
  });
  into.runtime_ns = saturating_add(into.runtime_ns, from.runtime_ns);
  into.experiments_stopped.insert(into.experiments_stopped.end(), from.experiments_stopped.begin(),
                                  from.experiments_stopped.end());
  into.sampling.processes = saturating_add(into.sampling.processes, from.sampling.processes);
  into.sampling.samples = saturating_add(into.sampling.samples, from.sampling.samples);
  into.sampling.in_scope = saturating_add(into.sampling.in_scope, from.sampling.in_scope);
  into.sampling.lost = saturating_add(into.sampling.lost, from.sampling.lost);
  into.sampling.timed = saturating_add(into.sampling.timed, from.sampling.timed);
  into.sampling.attributed_ns = saturating_add(into.sampling.attributed_ns, from.sampling.attributed_ns);
  into.sampling.cpu_time_ns = saturating_add(into.sampling.cpu_time_ns, from.sampling.cpu_time_ns);
  into.sampling.stacks_dropped = saturating_add(into.sampling.stacks_dropped, from.sampling.stacks_dropped);
  into.sampling.waits_dropped = saturating_add(into.sampling.waits_dropped, from.sampling.waits_dropped);
  into.sampling.steal_ns = saturating_add(into.sampling.steal_ns, from.sampling.steal_ns);
  into.sampling.machine_ns = saturating_add(into.sampling.machine_ns, from.sampling.machine_ns);
  for (size_t i = 0; i < from.warnings.size(); ++i) {
    if (into.warnings.size() < Profile::max_warnings) {
      into.warnings.push_back(std::move(from.warnings[i]));
      into.warning_places.push_back(std::move(from.warning_places[i]));
    } else {
      ++into.warnings_dropped;
    }
  }
  into.warnings_dropped += from.warnings_dropped;
}

}  // namespace coz::analysis
