// `coz run`'s monitor: a process beside the program that reads the profile
// as it grows, keeps a status line on the terminal, aims the experiments at
// the lines that decide the answer, and stops them once it is settled
// (`--until-settled`). It talks to the program's runtimes only through the
// control file (libcoz/core/control.h). docs/settling.md.
#pragma once

#include <cstdint>
#include <string>

namespace coz::cli {

struct MonitorOptions {
  std::string profile_path;
  std::string control_path;
  bool status = false;         // keep a status line on stderr (a terminal)
  bool aim = true;             // aim experiments; false: by samples alone (`--allocation samples`)
  bool until_settled = false;  // stop the experiments once the top lines are settled
  size_t top = 3;
  uint64_t max_time_ns = 0;  // stop the experiments after this long (0: never)
  int stop_signal = 0;       // sent to the program as the experiments stop (0: none)
};

/// Forks the monitor, detached from the calling process (which goes on to
/// become the program: the monitor is not its child, so the program's
/// waits never see it) and watching it. Creates the control file first and
/// returns its path in `options.control_path`. False, with `error`, when it
/// cannot; the run then goes on without a monitor.
bool start_monitor(MonitorOptions& options, std::string& error);

}  // namespace coz::cli
