// What the processes of a `coz run --system` run share: one experiment at a
// time across all of them (docs/system.md).
//
// `coz run --system` creates a file in /dev/shm holding one SystemShared,
// constructed in place, and names it in COZ_SYSTEM. Each process of the run
// maps it at start-up (a forked child keeps its parent's mapping) and then:
// - keeps its delay ledger's counts there, so that a sample of the selected
//   line in any process pauses the threads of every process;
// - counts its progress points there, so that one process reads them all;
// - posts and claims its wakes through descriptors there, so that a write to
//   a pipe or socket lets a thread of another process skip the delays its
//   waker paid;
// - publishes its lines' sample counts there, from which the leader (the
//   process whose profiler thread runs the experiments) chooses a line by
//   name; each process maps that name to its own code.
//
// Everything here is atomic and address-free, written by many processes at
// once, and never freed: a process that dies leaves its entries behind.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "delay.h"
#include "progress_points.h"
#include "wake_board.h"

namespace coz {

/// A line's samples in all processes, by the line's name (SourceLine::name()).
struct SharedLine {
  static constexpr size_t name_size = 240;
  enum State : uint32_t { Free, Claiming, Ready };
  std::atomic<uint32_t> state{Free};
  char name[name_size] = {};
  std::atomic<uint64_t> samples{0};
};

/// Entries claimed in order, never freed. Two processes adding the same name
/// at once may make two entries: harmless, as a choice goes by name.
struct SharedLines {
  static constexpr size_t capacity = 8192;
  std::atomic<uint32_t> used{0};
  SharedLine entries[capacity];

  /// The entry named `name`, claimed if there is none; nullptr when full or too long.
  SharedLine* find_or_claim(std::string_view name);
  /// The number of entries that may be ready (the rest are free).
  size_t size() const { return std::min<size_t>(used.load(std::memory_order_acquire), capacity); }
};

/// One process of the run.
struct ProcessSlot {
  enum State : uint32_t { Empty, Live, Exited, Dead };
  std::atomic<int32_t> pid{0};
  std::atomic<uint32_t> state{Empty};
  /// The last experiment (its experiment_seq, even: crediting stopped) whose
  /// delays every thread of this process has paid; the leader waits for it.
  std::atomic<uint32_t> settled_seq{0};
};

struct SystemShared {
  static constexpr uint64_t magic_value = 0x6d6574737973'7a6fULL;  // "ozsystem"
  static constexpr uint32_t version_value = 2;  // 2: wake records carry no delay count
  static constexpr size_t process_capacity = 1024;

  uint64_t magic = magic_value;
  uint32_t version = version_value;
  uint32_t reserved = 0;
  uint64_t size = sizeof(SystemShared);

  /// The pid of the process running the experiments; 0 while none does.
  std::atomic<int32_t> leader{0};
  /// Odd while an experiment credits delays; a futex word (shared, not
  /// private): followers wait on it for the leader's begin and end.
  std::atomic<uint32_t> experiment_seq{0};
  /// The sample period during the running experiment (delays are credited per sample).
  std::atomic<uint64_t> experiment_period_ns{0};
  /// The selected line's name: written by the leader while experiment_seq is even.
  char selected[SharedLine::name_size] = {};
  /// Samples of the selected line in the followers (each adds its own as it settles).
  std::atomic<uint64_t> selected_samples{0};
  /// The name a process gave the run's --fixed-line, for a leader with no code there.
  std::atomic<uint32_t> fixed_line_ready{0};
  char fixed_line[SharedLine::name_size] = {};

  /// The profile of the run (`coz run --system`'s -o): where `--join` writes unless told.
  char output_path[4096] = {};

  LedgerCounts ledger;
  std::atomic<uint32_t> process_count{0};
  std::atomic<uint32_t> deaths{0};  // processes found dead while Live (their experiment is dropped)
  ProcessSlot processes[process_capacity];
  SharedPoints points;
  WakeBoard wakes;
  SharedLines lines;
};

/// Where the shared file of the run named `name` is: coz-system-NAME in
/// $COZ_SHM_DIR, else /dev/shm; "" when the name is not one (letters,
/// digits, '-', '_', '.', at most 64).
std::string system_shared_path(const std::string& name);

/// Creates the shared file for a run (`coz run --system[=NAME]`), mode
/// 0600, never over an existing file or through a link: named for `name`,
/// or with a name of its own when `name` is empty; it names the run's
/// profile, `output_path`. Returns its path, or "" with `error` set.
std::string create_system_shared(const std::string& name, const std::string& output_path, std::string& error);

/// Maps the file `coz run --system` created; nullptr with `error` set when it
/// is not one (missing, another size or version). The descriptor is closed:
/// the mapping keeps the file.
SystemShared* map_system_shared(const char* path, std::string& error);
/// Unmaps what map_system_shared mapped.
void unmap_system_shared(SystemShared* shared);

/// Takes a slot for process `pid`; nullptr when every slot is taken.
ProcessSlot* register_process(SystemShared& shared, int pid);
/// The run's first process leads: it claims the lead as it joins, before
/// its main() can fork. Had the lead gone to whichever profiler thread
/// asked first, a child forked at once could take it while its parent was
/// still reading its debug information.
enum class LeadClaim { Claimed, AlreadyOurs, Taken };
/// AlreadyOurs: this pid led before it exec'd this image.
LeadClaim claim_vacant_lead(SystemShared& shared, int pid);

/// What became of process `pid`: running; ended by an exit of its own (a
/// zombie whose status says so: `_exit` writes no last records); or killed,
/// or gone without a trace (reaped: what ended it is unknown).
enum class ProcessFate { Running, Exited, Killed };
ProcessFate process_fate(int pid);

/// Whether process `pid` is still running (not gone, not a zombie).
inline bool process_alive(int pid) { return process_fate(pid) == ProcessFate::Running; }

/// Waits on `word` while it holds `expected`, at most `timeout_ns` (a futex
/// shared between processes).
void shared_futex_wait(std::atomic<uint32_t>& word, uint32_t expected, uint64_t timeout_ns);
/// Wakes every waiter on `word`.
void shared_futex_wake_all(std::atomic<uint32_t>& word);

}  // namespace coz
