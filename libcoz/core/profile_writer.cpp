#include "profile_writer.h"
#include "descriptors.h"
#include "log.h"
#include "sys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace coz {

namespace {
/// Tabs and newlines would break the record syntax; names never need them.
std::string clean(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}
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
                                          const std::string& command) {
  return fmt::format("startup\ttime={}\nprocess\tpid={}\tparent={}\tcommand={}\n", realtime_ns, pid, parent_pid,
                     clean(command));
}

std::string ProfileWriter::format_experiment(const ExperimentResult& e) {
  std::string out = fmt::format("experiment\tselected={}\tspeedup={:.2f}\tduration={}\tselected-samples={}",
                                clean(e.selected), e.speedup, e.duration_ns, e.selected_samples);
  if (e.pid > 0) out += fmt::format("\tpid={}", e.pid);
  if (e.end_ns > 0) out += fmt::format("\tend={}", e.end_ns);
  if (e.cores > 0 && e.cores_busy >= 0 && e.waiting_for_core >= 0)
    out += fmt::format("\tcores={}\tcores-busy={:.3f}\twaiting-for-core={:.3f}", e.cores, e.cores_busy, e.waiting_for_core);
  out += '\n';
  for (const auto& p : e.points) {
    if (!p.latency) {
      out += fmt::format("throughput-point\tname={}\tdelta={}\n", clean(p.name), p.delta);
    } else {
      out += fmt::format("latency-point\tname={}\tarrivals={}\tdepartures={}\tdifference={}", clean(p.name),
                         p.arrivals, p.departures, p.difference);
      if (p.mean_in_flight >= 0) out += fmt::format("\tmean-in-flight={:.6g}", p.mean_in_flight);
      out += '\n';
    }
  }
  return out;
}

std::string ProfileWriter::format_samples(const std::vector<Samples>& samples) {
  std::string out;
  for (const auto& s : samples) {
    out += fmt::format("samples\tlocation={}\tcount={}", clean(s.location), s.count);
    if (!s.function.empty()) out += fmt::format("\tfunction={}", clean(s.function));
    out += '\n';
  }
  return out;
}

std::string ProfileWriter::format_stacks(const std::vector<std::pair<std::string, uint64_t>>& stacks) {
  std::string out;
  for (const auto& [frames, count] : stacks) out += fmt::format("stack\tframes={}\tcount={}\n", clean(frames), count);
  return out;
}

std::string ProfileWriter::format_blocked(const std::vector<Blocked>& blocked) {
  std::string out;
  for (const auto& b : blocked) {
    out += fmt::format("blocked\tsite={}\tkind={}\ttime={}\tcount={}\n", clean(b.site), b.kind, b.ns, b.count);
  }
  return out;
}

void ProfileWriter::write_stacks(const std::vector<std::pair<std::string, uint64_t>>& stacks) {
  append(format_stacks(stacks));
}

void ProfileWriter::write_blocked(const std::vector<Blocked>& blocked) { append(format_blocked(blocked)); }

std::string ProfileWriter::format_sampling(const SamplingTotals& t) {
  std::string out = fmt::format("sampling\tsamples={}\tin-scope={}\tlost={}", t.samples, t.in_scope, t.lost);
  if (t.period_ns > 0) out += fmt::format("\tperiod={}\tcpu-time={}", t.period_ns, t.cpu_time_ns);
  for (const auto& [key, count] : t.walks) out += fmt::format("\t{}={}", key, count);
  if (t.stacks_dropped > 0) out += fmt::format("\tstacks-dropped={}", t.stacks_dropped);
  if (t.waits_dropped > 0) out += fmt::format("\twaits-dropped={}", t.waits_dropped);
  if (t.paused_ns > 0) out += fmt::format("\tpaused={}", t.paused_ns);
  if (t.steal_ns > 0) out += fmt::format("\tsteal={}\tmachine-time={}", t.steal_ns, t.machine_ns);
  if (t.pid != 0) out += fmt::format("\tpid={}", t.pid);
  return out + "\n";
}

void ProfileWriter::write_sampling(const SamplingTotals& totals) { append(format_sampling(totals)); }

void ProfileWriter::write_startup(uint64_t realtime_ns, int pid, int parent_pid, const std::string& command) {
  append(format_startup(realtime_ns, pid, parent_pid, command));
}

void ProfileWriter::defer_startup(uint64_t realtime_ns, int pid, int parent_pid, const std::string& command) {
  std::string startup = format_startup(realtime_ns, pid, parent_pid, command);
  FutexGuard guard(lock_);
  deferred_ = std::move(startup);
}

void ProfileWriter::write_experiment(const ExperimentResult& e) { append(format_experiment(e)); }

void ProfileWriter::write_samples(const std::vector<Samples>& samples) {
  append(format_samples(samples));
}

void ProfileWriter::write_experiments_stopped(const std::string& reason, uint64_t end_ns) {
  append(fmt::format("experiments-stopped\treason={}\tend={}\n", clean(reason), end_ns));
}

void ProfileWriter::write_runtime(uint64_t ns) { append(fmt::format("runtime\ttime={}\n", ns)); }

}  // namespace coz
