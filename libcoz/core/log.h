// Runtime logging: one line per message, written with write(2) to stderr,
// prefixed "coz: ". Not for signal context (formatting allocates).
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <string_view>

namespace coz::log {

enum class Level { Error = 0, Warning = 1, Info = 2, Debug = 3 };

/// 0: errors and warnings (default), 1: info (-v), 2: debug.
void set_verbosity(int verbosity);
bool enabled(Level level);
void write_line(Level level, std::string_view message);

/// The identity of what `fd` is open to ("DEVICE:INODE"), empty if it is
/// closed: how a process tells whether its stderr is `coz run`'s.
std::string file_identity(int fd);

/// From now on this process's messages are appended to `path`, not written
/// to its stderr: a process whose stderr is not `coz run`'s (a child whose
/// parent captures it, as Python's subprocess.run(capture_output=True)
/// does) must not find the runtime's lines in its output. The run's first
/// process, `run_pid`, shows them (relay_side_file). The first message
/// creates the file, while that process lives: a run whose processes say
/// nothing leaves none, however its first process ends (killed, or gone
/// through a raw exit), and one that starts after the first has gone
/// drops its messages, as it would find nobody to show them.
void send_to_side_file(std::string path, int run_pid);

/// Writes each distinct line of the side file `path` once to stderr (in the
/// order they first came), then removes the file: the run's first process,
/// at its exit.
void relay_side_file(const std::string& path);

template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  write_line(Level::Error, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::Warning)) write_line(Level::Warning, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::Info)) write_line(Level::Info, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::Debug)) write_line(Level::Debug, fmt::format(f, std::forward<Args>(args)...));
}

/// Warns only the first time `once` is passed (one flag per kind of problem).
template <typename... Args>
void warn_once(std::atomic<bool>& once, fmt::format_string<Args...> f, Args&&... args) {
  if (!once.exchange(true)) warn(f, std::forward<Args>(args)...);
}

}  // namespace coz::log
