// Appends records to the profile (format: docs/profile-format.md).
//
// Each call formats a whole block of records and writes it with one write(2)
// on an O_APPEND descriptor: processes sharing a file never interleave partial
// lines, and a process killed mid-run leaves only whole records.
//
// A write that fails or comes up short (a full disk) is reported once on
// stderr. Records it did not write are lost; one it cut in the middle is
// ended, at the next write that succeeds, with the field `cut=write-failed`
// and a newline, so that readers skip it instead of taking its first half
// for a record, or gluing it to the next one. The marker is the same in
// both forms: after any cut of a JSON line it leaves invalid JSON.
//
// The records are written in Coz's tab-separated form or as JSON Lines
// (`coz run --format`), the same records with the same keys in both.
//
// Threads may write at once (the profiler thread and an exiting thread):
// the file, the deferred startup record and the write are under one lock.
//
// Where the runtime keeps its descriptors in a table of its own
// (descriptors.h), only the profiler thread can write to the file: it opens
// it at its first write, and a block another thread appends waits in memory
// for the profiler thread's next write or flush().
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "experiment.h"
#include "futex_lock.h"

namespace coz {

class ProfileWriter {
 public:
  using Format = Config::ProfileFormat;
  /// write(2) or a stand-in (tests).
  using WriteFn = ssize_t (*)(int fd, const void* data, size_t size);

  ProfileWriter();
  explicit ProfileWriter(WriteFn write) : write_(write) {}
  ~ProfileWriter();
  ProfileWriter(const ProfileWriter&) = delete;
  ProfileWriter& operator=(const ProfileWriter&) = delete;

  /// Ends the line of a record that a failed write cut short.
  static constexpr const char* cut_marker = "\tcut=write-failed\n";

  /// Opens (creates) the file for appending: a regular file, never through
  /// a symbolic link (one planted in a shared directory would make the
  /// profiled program, maybe root's, append to any file), never blocking (a
  /// FIFO without a reader would stop the program before main). On failure
  /// returns false and sets `error` (one line). At start-up, before any
  /// thread writes.
  bool open(const std::string& path, std::string& error);
  bool is_open() const { return fd_ >= 0; }
  /// Creates the file only when the first record is written (nothing may ever be).
  void open_when_written(const std::string& path) { lazy_path_ = path; }
  /// Writes what other threads left for this one (descriptors::usable_here()).
  void flush() { append(""); }
  /// In a forked child: a descriptor in the parent's own table is not the
  /// child's, whose profiler thread opens the file again; the records the
  /// parent's threads left for its profiler thread are not the child's.
  void forget_after_fork();

  /// The form of every record written from now on (at start-up, before any thread writes).
  void set_format(Format format) { format_.store(format, std::memory_order_relaxed); }
  Format format() const { return format_.load(std::memory_order_relaxed); }

  void write_startup(uint64_t realtime_ns, int pid, int parent_pid, const std::string& command);
  /// Records to write just before the next block, if any is ever written (a
  /// forked child that execs at once then leaves nothing behind).
  void defer_startup(uint64_t realtime_ns, int pid, int parent_pid, const std::string& command);
  void write_experiment(const ExperimentResult& experiment);
  struct Samples {
    std::string location;  // FILE:LINE (or BINARY:FUNCTION)
    uint64_t count;        // since the previous samples record for it
    std::string function;  // may be empty
  };
  void write_samples(const std::vector<Samples>& samples);
  void write_runtime(uint64_t ns);
  /// The run's experiments stopped before the program ended (`coz run
  /// --until-settled`): why, and when, in ns after the process's start.
  void write_experiments_stopped(const std::string& reason, uint64_t end_ns);
  /// How the process's samples were attributed (a `sampling` record, once at exit).
  struct SamplingTotals {
    uint64_t samples = 0;
    uint64_t in_scope = 0;  // attributed to an in-scope line
    uint64_t lost = 0;      // dropped by the kernel
    uint64_t period_ns = 0;    // CPU time each counted sample stands for (0: not written)
    uint64_t cpu_time_ns = 0;  // the process's CPU time when the record was written
    /// Stack walks by how they ended: "unwound" (to the stack's first frame,
    /// or deep enough), then "stopped-<reason>".
    std::vector<std::pair<std::string, uint64_t>> walks;
    /// In-scope samples whose call stack, and waits whose time, found no
    /// room in the runtime's fixed tables (written when not 0).
    uint64_t stacks_dropped = 0;
    uint64_t waits_dropped = 0;
    /// ns the process's threads spent paying delays (written when not 0).
    uint64_t paused_ns = 0;
    /// The machine's steal time during the process's run (sys::machine_steal_ns),
    /// and its wall time times its online CPUs then (written when steal is not 0).
    uint64_t steal_ns = 0;
    uint64_t machine_ns = 0;
    int pid = 0;  // the process's (written when not 0)
  };
  void write_sampling(const SamplingTotals& totals);
  /// `stacks`: (frames "A;B" outermost first, count since the previous record for them).
  void write_stacks(const std::vector<std::pair<std::string, uint64_t>>& stacks);
  struct Blocked {
    std::string site;
    std::string kind;
    uint64_t ns;
    uint64_t count;
  };
  void write_blocked(const std::vector<Blocked>& blocked);

  // Formatting, exposed for tests.
  static std::string format_startup(uint64_t realtime_ns, int pid, int parent_pid, const std::string& command,
                                    Format format = Format::Coz);
  static std::string format_experiment(const ExperimentResult& experiment, Format format = Format::Coz);
  static std::string format_samples(const std::vector<Samples>& samples, Format format = Format::Coz);
  static std::string format_stacks(const std::vector<std::pair<std::string, uint64_t>>& stacks,
                                   Format format = Format::Coz);
  static std::string format_blocked(const std::vector<Blocked>& blocked, Format format = Format::Coz);
  static std::string format_sampling(const SamplingTotals& totals, Format format = Format::Coz);

  /// The writer's lock, for the runtime's fork handlers (runtime.cpp), which
  /// hold every lock of the runtime across fork().
  FutexLock& lock() { return lock_; }

 private:
  void append(const std::string& block);
  void report_failure(int error);
  WriteFn write_;
  std::atomic<Format> format_{Format::Coz};
  FutexLock lock_;  // guards everything below
  int fd_ = -1;
  std::string path_;
  std::string lazy_path_;
  std::string deferred_;
  std::string pending_;  // appended where the descriptor cannot be used (above)
  bool cut_ = false;  // the file ends in a record a failed write cut short
  std::atomic<bool> failure_reported_{false};
};

}  // namespace coz
