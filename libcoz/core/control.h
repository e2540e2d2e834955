// The control file: how `coz run`'s monitor (tools/coz/monitor.h), which
// reads the profile as it grows, steers the runtimes of the run's processes
// (docs/settling.md). The monitor writes it; each runtime reads it between
// experiments; the run's first process marks it ended as it exits. Every
// access holds a flock on the file (exclusive to write, shared to read), so
// no reader sees half a write, and the monitor never prints after the end.
//
//   coz-control 1
//   stop	reason=settled
//   aim	unit=/src/app.c:42	weight=0.8
//   baseline	share=0.4
//   ended
//   end
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coz {

struct Control {
  /// Why the run's experiments must stop ("settled", "max-time"); empty: go on.
  std::string stop;
  /// Where the next experiments are aimed: experiment units (a `selected=`
  /// of the profile) and their relative weights. Empty: by samples alone.
  struct Aim {
    std::string unit;
    double weight = 0.0;
    bool operator==(const Aim&) const = default;
  };
  std::vector<Aim> aim;
  /// The run's first process has exited: the monitor prints no more.
  bool ended = false;
  /// The share of 0% experiments while the aim holds (0: the runtime's own,
  /// COZ_ZERO_SPEEDUP_SHARE). Every line's estimate shares the baselines,
  /// so when the experiments go to a few lines the baselines are the larger
  /// part of each interval's width (docs/settling.md).
  double baseline_share = 0.0;

  bool operator==(const Control&) const = default;
};

std::string format_control(const Control& control);
/// Nullopt for a file that is not a whole control file.
std::optional<Control> parse_control(std::string_view text);

/// A control file opened once: `coz run` creates it, the monitor and every
/// runtime open it by path. Returns -1 where it cannot be opened.
int open_control_file(const char* path);
/// Reads the whole file under a shared lock.
std::optional<Control> read_control(int fd);
/// Replaces the file's content under an exclusive lock.
bool write_control(int fd, const Control& control);
/// Under an exclusive lock: reads the file, applies `change` and writes it
/// back when it changed; returns what the file holds after.
template <typename Change>
std::optional<Control> update_control(int fd, Change&& change);

namespace detail {
bool lock_control(int fd, bool exclusive);
void unlock_control(int fd);
std::optional<Control> read_control_locked(int fd);
bool write_control_locked(int fd, const Control& control);
}  // namespace detail

template <typename Change>
std::optional<Control> update_control(int fd, Change&& change) {
  if (!detail::lock_control(fd, true)) return std::nullopt;
  std::optional<Control> control = detail::read_control_locked(fd);
  if (!control) control = Control{};
  Control before = *control;
  change(*control);
  if (!(before == *control)) detail::write_control_locked(fd, *control);
  detail::unlock_control(fd);
  return control;
}

}  // namespace coz
