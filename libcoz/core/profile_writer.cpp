#include "profile_writer.h"
#include "descriptors.h"
#include "json_string.h"
#include "log.h"
#include "sys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace coz {

namespace {

/// One record, in the file's form (docs/profile-format.md): `type<TAB>key=value...`,
/// or a JSON object `{"type":"type","key":value,...}` whose keys have '_' for
/// the tab form's '-' (`selected_samples`, as Coz spells it), numbers as JSON
/// numbers and text as JSON strings. Finished by end().
class Record {
 public:
  Record(std::string& out, ProfileWriter::Format format, std::string_view type)
      : out_(out), json_(format == ProfileWriter::Format::CozJsonl) {
    if (json_) {
      out_ += "{\"type\":";
      string(type);
    } else {
      out_ += type;
    }
  }

  Record& text(std::string_view key, std::string_view value) {
    this->key(key);
    if (json_) {
      string(value);
    } else {
      // Tabs and newlines would break the record syntax; names never need them.
      for (char c : value) out_ += c == '\t' || c == '\n' || c == '\r' ? ' ' : c;
    }
    return *this;
  }
  template <typename Integer>
  Record& count(std::string_view key, Integer value) {
    return number(key, "{}", value);
  }
  /// `decimals` after the point, in both forms: Coz's stream is fixed with
  /// two decimals, so its speedups read `0.35`, `0.00`, `1.00` in JSON too.
  Record& fixed(std::string_view key, double value, int decimals) { return number(key, "{:.{}f}", value, decimals); }
  /// A decimal number, the same text in both forms, formatted in place.
  template <typename... Args>
  Record& number(std::string_view key, fmt::format_string<Args...> format, Args&&... args) {
    this->key(key);
    fmt::format_to(std::back_inserter(out_), format, std::forward<Args>(args)...);
    return *this;
  }
  void end() { out_ += json_ ? "}\n" : "\n"; }

 private:
  void key(std::string_view key) {
    if (!json_) {
      out_ += '\t';
      out_ += key;
      out_ += '=';
      return;
    }
    out_ += ",\"";
    for (char c : key) out_ += c == '-' ? '_' : c;
    out_ += "\":";
  }
  // Paths and names are bytes: json_string.h says how invalid UTF-8 is
  // written (the tab form keeps the bytes as they are).
  void string(std::string_view s) { append_json_string(out_, s); }

  std::string& out_;
  bool json_;
};

}  // namespace

ProfileWriter::ProfileWriter() : write_(&sys::write) {}

ProfileWriter::~ProfileWriter() { descriptors::close_own(fd_); }

bool ProfileWriter::open(const std::string& path, std::string& error) {
  path_ = path;
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0) {
    error = errno == ELOOP ? fmt::format("cannot open profile {}: it is a symbolic link (not followed)", path)
            : errno == ENXIO ? fmt::format("cannot open profile {}: not a regular file", path)  // a FIFO, no reader
                             : fmt::format("cannot open profile {}: {}", path, std::strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error = fmt::format("cannot open profile {}: not a regular file", path);
    return false;
  }
  if (!descriptors::usable_here()) {  // checked: the profiler thread opens it in its own table
    ::close(fd);
    lazy_path_ = path;
    return true;
  }
  // Written to until the process ends, whatever descriptors the program
  // closes and reuses meanwhile (descriptors.h).
  fd_ = descriptors::adopt(fd);
  return true;
}

void ProfileWriter::forget_after_fork() {
  pending_.clear();  // the parent's records: its profiler thread writes them
  if (!descriptors::own_table() || fd_ < 0) return;
  fd_ = -1;
  lazy_path_ = path_;
}

void ProfileWriter::report_failure(int error) {
  if (failure_reported_.exchange(true)) return;
  log::warn("cannot write the profile {}: {}: records are lost (the profile keeps only whole ones)", path_,
            error != 0 ? std::strerror(error) : "short write (disk full?)");
}

void ProfileWriter::append(const std::string& records) {
  FutexGuard guard(lock_);
  if (!descriptors::usable_here()) {
    pending_ += records;
    return;
  }
  if (records.empty() && pending_.empty()) return;
  if (fd_ < 0 && !lazy_path_.empty()) {
    std::string error;
    std::string path = std::move(lazy_path_);
    lazy_path_.clear();
    if (!open(path, error)) log::error("{}", error);
  }
  if (fd_ < 0) return;
  // The line a failed write left unfinished is ended first, in the same write.
  std::string block = cut_ ? cut_marker : "";
  block += deferred_;
  deferred_.clear();
  block += pending_;
  pending_.clear();
  block += records;
  for (;;) {
    ssize_t n;
    do n = write_(fd_, block.data(), block.size());
    while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(block.size())) {
      cut_ = false;
      return;
    }
    report_failure(n < 0 ? errno : 0);
    if (n <= 0) return;  // nothing written: the block is lost (a cut line stays to be ended)
    // Short: the records written whole stay, the one cut short is ended
    // later, the ones after it get one more try (which a full disk refuses).
    size_t written = static_cast<size_t>(n);
    cut_ = block[written - 1] != '\n';
    size_t next = cut_ ? block.find('\n', written) + 1 : written;
    if (next == 0 || next >= block.size()) return;
    block = (cut_ ? cut_marker : "") + block.substr(next);
  }
}

std::string ProfileWriter::format_startup(uint64_t realtime_ns, int pid, int parent_pid,
                                          const std::string& command, Format format) {
  std::string out;
  Record(out, format, "startup").count("time", realtime_ns).end();
  Record(out, format, "process").count("pid", pid).count("parent", parent_pid).text("command", command).end();
  return out;
}

std::string ProfileWriter::format_experiment(const ExperimentResult& e, Format format) {
  std::string out;
  Record r(out, format, "experiment");
  r.text("selected", e.selected).fixed("speedup", e.speedup, 2).count("duration", e.duration_ns);
  r.count("selected-samples", e.selected_samples);
  if (e.pid > 0) r.count("pid", e.pid);
  if (e.end_ns > 0) r.count("end", e.end_ns);
  if (e.cores > 0 && e.cores_busy >= 0 && e.waiting_for_core >= 0) {
    r.count("cores", e.cores).fixed("cores-busy", e.cores_busy, 3).fixed("waiting-for-core", e.waiting_for_core, 3);
  }
  if (e.voluntary_switches >= 0) r.count("voluntary-switches", e.voluntary_switches);
  r.end();
  for (const auto& p : e.points) {
    if (!p.latency) {
      Record(out, format, "throughput-point").text("name", p.name).count("delta", p.delta).end();
    } else {
      Record l(out, format, "latency-point");
      l.text("name", p.name).count("arrivals", p.arrivals).count("departures", p.departures);
      l.count("difference", p.difference);
      if (p.mean_in_flight >= 0 && std::isfinite(p.mean_in_flight)) {
        l.number("mean-in-flight", "{:.6g}", p.mean_in_flight);
      }
      l.end();
      if (!p.latencies.empty()) {
        Record h(out, format, "latency-histogram");
        h.text("name", p.name).text("scheme", latency::scheme_name);
        h.text("buckets", latency::encode(p.latencies)).end();
      }
    }
  }
  return out;
}

std::string ProfileWriter::format_samples(const std::vector<Samples>& samples, Format format) {
  std::string out;
  for (const auto& s : samples) {
    Record r(out, format, "samples");
    r.text("location", s.location).count("count", s.count);
    if (!s.function.empty()) r.text("function", s.function);
    r.end();
  }
  return out;
}

std::string ProfileWriter::format_stacks(const std::vector<std::pair<std::string, uint64_t>>& stacks, Format format) {
  std::string out;
  for (const auto& [frames, count] : stacks) Record(out, format, "stack").text("frames", frames).count("count", count).end();
  return out;
}

std::string ProfileWriter::format_blocked(const std::vector<Blocked>& blocked, Format format) {
  std::string out;
  for (const auto& b : blocked) {
    Record(out, format, "blocked").text("site", b.site).text("kind", b.kind).count("time", b.ns).count("count", b.count).end();
  }
  return out;
}

void ProfileWriter::write_stacks(const std::vector<std::pair<std::string, uint64_t>>& stacks) {
  append(format_stacks(stacks, format()));
}

void ProfileWriter::write_blocked(const std::vector<Blocked>& blocked) { append(format_blocked(blocked, format())); }

std::string ProfileWriter::format_sampling(const SamplingTotals& t, Format format) {
  std::string out;
  Record r(out, format, "sampling");
  r.count("samples", t.samples).count("in-scope", t.in_scope).count("lost", t.lost);
  if (t.period_ns > 0) r.count("period", t.period_ns).count("cpu-time", t.cpu_time_ns);
  for (const auto& [key, count] : t.walks) r.count(key, count);
  if (t.stacks_dropped > 0) r.count("stacks-dropped", t.stacks_dropped);
  if (t.waits_dropped > 0) r.count("waits-dropped", t.waits_dropped);
  if (t.paused_ns > 0) r.count("paused", t.paused_ns);
  if (t.steal_ns > 0) r.count("steal", t.steal_ns).count("machine-time", t.machine_ns);
  if (t.pid != 0) r.count("pid", t.pid);
  r.end();
  return out;
}

void ProfileWriter::write_sampling(const SamplingTotals& totals) { append(format_sampling(totals, format())); }

void ProfileWriter::write_startup(uint64_t realtime_ns, int pid, int parent_pid, const std::string& command) {
  append(format_startup(realtime_ns, pid, parent_pid, command, format()));
}

void ProfileWriter::defer_startup(uint64_t realtime_ns, int pid, int parent_pid, const std::string& command) {
  std::string startup = format_startup(realtime_ns, pid, parent_pid, command, format());
  FutexGuard guard(lock_);
  deferred_ = std::move(startup);
}

void ProfileWriter::write_experiment(const ExperimentResult& e) { append(format_experiment(e, format())); }

void ProfileWriter::write_samples(const std::vector<Samples>& samples) {
  append(format_samples(samples, format()));
}

void ProfileWriter::write_experiments_stopped(const std::string& reason, uint64_t end_ns) {
  std::string out;
  Record(out, format(), "experiments-stopped").text("reason", reason).count("end", end_ns).end();
  append(out);
}

void ProfileWriter::write_runtime(uint64_t ns) {
  std::string out;
  Record(out, format(), "runtime").count("time", ns).end();
  append(out);
}

}  // namespace coz
