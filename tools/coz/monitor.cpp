#include "monitor.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fmt/core.h>

#include "analysis.h"
#include "control.h"
#include "experiment.h"
#include "profile.h"
#include "settling.h"
#include "status_line.h"
#include "sys.h"

namespace coz::cli {
namespace {

/// How often the monitor reads the profile, aims and redraws the line.
/// Once a second left the first second or two of experiments unaimed, a
/// third of the time to answer on a program that settles in 3 s.
constexpr int tick_ms = 250;
/// Experiments of this run before any is aimed: the first ones go by
/// samples, as Coz's do, so every line with samples gets a first look
/// (a quarter of the experiments after them still go by samples).
constexpr uint64_t warm_up_experiments = 10;

bool is_point_record(std::string_view line) {
  for (std::string_view type : {"throughput-point\t", "latency-point\t", "progress-point\t"}) {
    if (line.substr(0, type.size()) == type) return true;
  }
  return false;
}

/// The part of `text` that can be parsed now: whole lines, less a last
/// experiment whose point records may still be on their way (a reader can
/// see a write(2) half done).
size_t complete_prefix(std::string_view text) {
  const size_t last_newline = text.rfind('\n');
  if (last_newline == std::string_view::npos) return 0;
  const size_t whole = last_newline + 1;
  // Back from the last line, over point records, to the record they follow.
  size_t line_end = last_newline;
  for (;;) {
    size_t previous = line_end == 0 ? std::string_view::npos : text.rfind('\n', line_end - 1);
    size_t start = previous == std::string_view::npos ? 0 : previous + 1;
    std::string_view line = text.substr(start, line_end - start);
    if (!is_point_record(line)) return line.substr(0, 11) == "experiment\t" ? start : whole;
    if (start == 0) return whole;  // points without their experiment: the reader warns
    line_end = start - 1;
  }
}

/// Reads what was appended to the profile since the last call.
class ProfileFollower {
 public:
  explicit ProfileFollower(std::string path) : path_(std::move(path)) {}

  /// Parses the new whole records into `profile`.
  void follow(analysis::Profile& profile) {
    int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buffer[1 << 16];
    for (;;) {
      ssize_t n = pread(fd, buffer, sizeof buffer, static_cast<off_t>(offset_ + pending_.size()));
      if (n <= 0) break;
      pending_.append(buffer, static_cast<size_t>(n));
    }
    close(fd);
    size_t usable = complete_prefix(pending_);
    if (usable == 0) return;
    std::istringstream in(pending_.substr(0, usable));
    analysis::read_profile(in, path_, profile);
    offset_ += usable;
    pending_.erase(0, usable);
    // The monitor needs the experiments and the samples: the stacks and
    // waits of a long run would only grow its memory.
    profile.stacks.clear();
    profile.blocked.clear();
    profile.warnings.clear();
    profile.warning_places.clear();
  }

 private:
  std::string path_;
  uint64_t offset_ = 0;
  std::string pending_;
};

size_t terminal_width(int tty) {
  winsize ws{};
  if (ioctl(tty, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) return ws.ws_col;
  return 80;
}

/// Two significant digits: the control file changes only when the aim does.
double rounded(double w) {
  if (!(w > 0)) return 0;
  double scale = std::pow(10.0, std::floor(std::log10(w)) - 1);
  return std::round(w / scale) * scale;
}

struct Monitor {
  MonitorOptions options;
  pid_t program = 0;
  int pidfd = -1;
  int tty = -1;
  int control = -1;
  uint64_t start_ns = 0;
  uint64_t experiments_before = 0;
  std::string stopped;  // why the experiments were stopped; empty: not yet
  bool signalled = false;  // stop_signal sent

  /// Whether the program is still running (its pidfd says when it ends).
  bool wait_tick() {
    if (pidfd < 0) {
      usleep(tick_ms * 1000);
      return kill(program, 0) == 0 || errno == EPERM;
    }
    pollfd p{pidfd, POLLIN, 0};
    int r = poll(&p, 1, tick_ms);
    return r == 0 || (r < 0 && errno == EINTR);
  }

  /// One tick: false once the run has ended.
  bool tick(analysis::Profile& profile, ProfileFollower& follower) {
    follower.follow(profile);
    analysis::Analysis a = analysis::analyze(profile);
    analysis::Settling state = analysis::settle_state(a, options.top);
    const uint64_t now = sys::monotonic_ns(), elapsed = now - start_ns;
    const uint64_t run_experiments = profile.experiments.size() - experiments_before;

    std::string stop_now;
    if (stopped.empty() && options.until_settled && state.settled) stop_now = "settled";
    if (stopped.empty() && options.max_time_ns && elapsed >= options.max_time_ns) stop_now = "max-time";

    Control wanted;
    wanted.stop = stopped.empty() ? stop_now : stopped;
    // The aim's weights, once: the runtime's aim and the time left both use them.
    std::vector<analysis::AimWeight> aim;
    if (options.aim && run_experiments >= warm_up_experiments) aim = analysis::aim_weights(a, state);
    if (!aim.empty() && wanted.stop.empty()) {
      for (const analysis::AimWeight& w : aim) wanted.aim.push_back({w.unit, rounded(w.weight)});
      wanted.baseline_share = rounded(analysis::aim_baseline_share(state));
    }

    StatusInput in;
    in.elapsed_ns = elapsed;
    in.run_experiments = run_experiments;
    in.state = &state;
    in.top = options.top;
    in.stopped = wanted.stop;
    if (!state.settled && run_experiments > 0 && state.experiments_to_settle > 0) {
      double per_experiment = static_cast<double>(elapsed) / 1e9 / static_cast<double>(run_experiments);
      in.seconds_left =
          analysis::run_experiments_left(a, state, aim, ExperimentScheduler::aimed_share) * per_experiment;
    }

    // Under the lock, so that nothing is printed once the runtime said the
    // run ended (it clears the line as it exits: control.h).
    if (!detail::lock_control(control, true)) return false;
    std::optional<Control> current = detail::read_control_locked(control);
    bool ended = current && current->ended;
    if (!ended) {
      if (!current || !(*current == wanted)) detail::write_control_locked(control, wanted);
      if (tty >= 0) {
        std::string line = "\r\033[K" + format_status(in, terminal_width(tty));
        ssize_t ignored = write(tty, line.data(), line.size());
        (void)ignored;
      }
    }
    detail::unlock_control(control);
    if (ended) return false;
    if (!stop_now.empty()) stopped = stop_now;
    // The signal only once the runtime has written that its experiments
    // stopped: the profile must say so before the program ends.
    if (!stopped.empty() && options.stop_signal && !signalled && !profile.experiments_stopped.empty()) {
      kill(program, options.stop_signal);
      signalled = true;
    }
    return true;
  }

  [[noreturn]] void run() {
    analysis::Profile profile;
    ProfileFollower follower(options.profile_path);
    follower.follow(profile);  // earlier runs in the same file
    experiments_before = profile.experiments.size();
    control = open_control_file(options.control_path.c_str());
    while (control >= 0 && wait_tick()) {
      if (!tick(profile, follower)) break;
    }
    unlink(options.control_path.c_str());
    _exit(0);
  }
};

/// Keeps only the monitor's own descriptors (the program's pipes must see
/// their end when the program ends, not when the monitor does): the
/// terminal as 3 and the pidfd as 4, or -1.
void keep_only(int& tty, int& pidfd) {
  // Out of the way first: either may be 3 or 4 now.
  int high_tty = tty >= 0 ? fcntl(tty, F_DUPFD_CLOEXEC, 100) : -1;
  int high_pidfd = pidfd >= 0 ? fcntl(pidfd, F_DUPFD_CLOEXEC, 100) : -1;
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  tty = high_tty >= 0 && dup2(high_tty, 3) == 3 ? 3 : -1;
  pidfd = high_pidfd >= 0 && dup2(high_pidfd, 4) == 4 ? 4 : -1;
  if (devnull >= 0) {
    for (int fd : {0, 1, 2}) dup2(devnull, fd);
  }
  syscall(SYS_close_range, 5u, ~0u, 0u);
}

bool create_control_file(std::string& path, std::string& error) {
  const char* dir = std::getenv("TMPDIR");
  std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/coz-control-XXXXXX";
  int fd = mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("cannot create the control file {}: {}", pattern, std::strerror(errno));
    return false;
  }
  bool ok = write_control(fd, Control{});
  close(fd);
  if (!ok) {
    unlink(pattern.c_str());
    error = fmt::format("cannot write the control file {}", pattern);
    return false;
  }
  path = pattern;
  return true;
}

}  // namespace

bool start_monitor(MonitorOptions& options, std::string& error) {
  if (!create_control_file(options.control_path, error)) return false;
  const pid_t program = getpid();
  // Close-on-exec, so the program never has it; the monitor inherits it.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, program, 0));
  pid_t middle = fork();
  if (middle < 0) {
    error = fmt::format("cannot start the monitor: {}", std::strerror(errno));
    unlink(options.control_path.c_str());
    if (pidfd >= 0) close(pidfd);
    return false;
  }
  if (middle == 0) {
    // The middle process exits at once: the monitor is nobody's child here.
    if (fork() != 0) _exit(0);
    // The terminal's and the process group's signals are the program's:
    // the monitor ends with it (and removes the control file then).
    for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGPIPE, SIGTTOU}) signal(sig, SIG_IGN);
    setpriority(PRIO_PROCESS, 0, 19);
    sched_param idle{};
    sched_setscheduler(0, SCHED_IDLE, &idle);
    Monitor m;
    m.options = options;
    m.program = program;
    m.pidfd = pidfd;
    m.tty = options.status ? 2 : -1;
    keep_only(m.tty, m.pidfd);
    m.start_ns = sys::monotonic_ns();
    m.run();
  }
  if (pidfd >= 0) close(pidfd);
  int status = 0;
  while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  return true;
}

}  // namespace coz::cli
