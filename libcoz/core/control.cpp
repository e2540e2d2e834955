#include "control.h"

#include <fcntl.h>
#include <sys/file.h>

#include <charconv>
#include <cstdlib>

#include <fmt/core.h>

#include "sys.h"

namespace coz {
namespace {

constexpr std::string_view header = "coz-control 1";
/// Control files are small: a few hundred aimed units at most.
constexpr size_t max_control_bytes = 1 << 20;

/// The value of `key=` in a tab-separated record, or nullopt.
std::optional<std::string_view> field(std::string_view record, std::string_view key) {
  size_t at = 0;
  while (at <= record.size()) {
    size_t tab = record.find('\t', at);
    std::string_view item = record.substr(at, tab == std::string_view::npos ? std::string_view::npos : tab - at);
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=') {
      return item.substr(key.size() + 1);
    }
    if (tab == std::string_view::npos) break;
    at = tab + 1;
  }
  return std::nullopt;
}

/// Tabs and newlines cannot be part of a unit's name in the file.
bool clean(std::string_view text) { return text.find_first_of("\t\n") == std::string_view::npos; }

}  // namespace

std::string format_control(const Control& control) {
  std::string out(header);
  out += '\n';
  if (!control.stop.empty() && clean(control.stop)) out += fmt::format("stop\treason={}\n", control.stop);
  for (const Control::Aim& a : control.aim) {
    if (clean(a.unit) && a.weight > 0) out += fmt::format("aim\tunit={}\tweight={:.6g}\n", a.unit, a.weight);
  }
  if (control.baseline_share > 0 && control.baseline_share < 1)
    out += fmt::format("baseline\tshare={:.6g}\n", control.baseline_share);
  if (control.ended) out += "ended\n";
  out += "end\n";
  return out;
}

std::optional<Control> parse_control(std::string_view text) {
  Control control;
  bool first = true, closed = false;
  while (!text.empty()) {
    size_t newline = text.find('\n');
    if (newline == std::string_view::npos) return std::nullopt;  // a cut line: not a whole file
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline + 1);
    if (closed) return std::nullopt;
    if (first) {
      if (line != header) return std::nullopt;
      first = false;
    } else if (line == "end") {
      closed = true;
    } else if (line == "ended") {
      control.ended = true;
    } else if (line.substr(0, 5) == "stop\t") {
      if (auto reason = field(line, "reason")) control.stop = std::string(*reason);
    } else if (line.substr(0, 4) == "aim\t") {
      auto unit = field(line, "unit");
      auto weight = field(line, "weight");
      if (!unit || !weight || unit->empty()) continue;
      char* end = nullptr;
      std::string w(*weight);
      double value = std::strtod(w.c_str(), &end);
      if (end != w.c_str() + w.size() || !(value > 0)) continue;
      control.aim.push_back({std::string(*unit), value});
    } else if (line.substr(0, 9) == "baseline\t") {
      auto share = field(line, "share");
      if (!share) continue;
      std::string text(*share);
      char* end = nullptr;
      double value = std::strtod(text.c_str(), &end);
      if (end == text.c_str() + text.size() && value > 0 && value < 1) control.baseline_share = value;
    }  // other records: a later version's, ignored
  }
  if (!closed) return std::nullopt;
  return control;
}

int open_control_file(const char* path) {
  long fd = sys::raw_syscall6(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  return fd < 0 ? -1 : static_cast<int>(fd);
}

namespace detail {

bool lock_control(int fd, bool exclusive) {
  for (;;) {
    long r = sys::raw_syscall6(SYS_flock, fd, exclusive ? LOCK_EX : LOCK_SH);
    if (r == 0) return true;
    if (r != -EINTR) return false;
  }
}

void unlock_control(int fd) { sys::raw_syscall6(SYS_flock, fd, LOCK_UN); }

std::optional<Control> read_control_locked(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    long n = sys::raw_syscall6(SYS_pread64, fd, reinterpret_cast<long>(buffer), sizeof buffer,
                               static_cast<long>(text.size()));
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > max_control_bytes) return std::nullopt;
  }
  return parse_control(text);
}

bool write_control_locked(int fd, const Control& control) {
  std::string text = format_control(control);
  size_t done = 0;
  while (done < text.size()) {
    long n = sys::raw_syscall6(SYS_pwrite64, fd, reinterpret_cast<long>(text.data() + done),
                               static_cast<long>(text.size() - done), static_cast<long>(done));
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return sys::raw_syscall6(SYS_ftruncate, fd, static_cast<long>(text.size())) == 0;
}

}  // namespace detail

std::optional<Control> read_control(int fd) {
  if (!detail::lock_control(fd, false)) return std::nullopt;
  std::optional<Control> control = detail::read_control_locked(fd);
  detail::unlock_control(fd);
  return control;
}

bool write_control(int fd, const Control& control) {
  if (!detail::lock_control(fd, true)) return false;
  bool ok = detail::write_control_locked(fd, control);
  detail::unlock_control(fd);
  return ok;
}

}  // namespace coz
