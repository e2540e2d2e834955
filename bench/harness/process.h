// Running one measured process: fork/exec with a wall-clock timer, stderr
// captured (stdout on request), optional working directory, niceness and timeout.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace coz_bench {

struct RunOptions {
  std::string cwd;         // empty: the harness's own
  int nice = 0;            // applied in the child before exec (negative needs root)
  double timeout_s = 300;  // the whole process group is killed after this
  bool capture_stdout = false;  // else discarded
  std::vector<std::string> env;  // NAME=VALUE added to the environment
  // Called every watch_interval_s while the process runs, with the seconds
  // since fork; returning true ends the run (the process group is killed).
  std::function<bool(double elapsed_s)> watch;
  double watch_interval_s = 0.2;
};

struct RunResult {
  double wall_s = 0.0;  // fork to exit, CLOCK_MONOTONIC
  bool exited = false;  // false: killed by a signal or the timeout
  int status = -1;      // exit status, or the signal number when !exited
  bool timed_out = false;
  bool stopped_by_watch = false;  // RunOptions::watch ended it
  std::string stderr_text;
  std::string stdout_text;  // with RunOptions::capture_stdout

  bool ok() const { return exited && status == 0; }
  std::string describe() const;  // "exit 0", "signal 11", "timeout", "stopped"
};

RunResult run_process(const std::vector<std::string>& argv, const RunOptions& options = {});

/// The value of `key=NUMBER` in `text` (the last occurrence), or a negative value.
double find_number(const std::string& text, const std::string& key);

/// Output of a shell command (popen), trailing newline removed; empty on failure.
std::string shell_output(const std::string& command);

}  // namespace coz_bench
