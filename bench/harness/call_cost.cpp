// The cost of the interposed calls (issues #12 and #15): ns per call as a
// program pays it, from two programs that time their own loops:
// bench/programs/io_calls.cpp (read and write on a pipe and a regular file,
// eventfd_write/eventfd_read; one thread, never blocking) and
// bench/programs/sync_calls.cpp (mutex lock/unlock alone and contended,
// hand-offs through a condition variable, semaphores and a raw futex).
//
//   plain         no profiler
//   ours, loaded  `coz run --fixed-speedup 0`: the wrappers run, every
//                 experiment is a 0% baseline, so nothing is ever owed and
//                 no wake is posted
//   ours, in an experiment  `coz run --fixed-line <that loop> --fixed-speedup 50`:
//                 three experiments in four speed the loop up; every thread
//                 running it credits itself alike, so none pauses, but every
//                 wrapper sees delays outstanding and does its whole work
#include <fmt/format.h>

#include <map>

#include "process.h"
#include "sections.h"

namespace coz_bench {
namespace {

struct Kind {
  const char* name;    // as the program prints it
  const char* marker;  // its loop's line
  const char* label;
};

struct CallProgram {
  const char* name;  // binary, and the prefix of what it prints ("io_calls: pipe=...")
  const char* source;
  std::vector<Kind> kinds;
};

const CallProgram kPrograms[] = {
    {"io_calls",
     "bench/programs/io_calls.cpp",
     {{"pipe", "pipe_loop", "pipe: write 1 byte, read it back (per call)"},
      {"eventfd", "eventfd_loop", "eventfd: eventfd_write, eventfd_read (per call)"},
      {"file_write", "file_write_loop", "regular file: write 64 bytes"},
      {"file_read", "file_read_loop", "regular file: read 64 bytes"},
      {"epoll", "epoll_loop", "epoll_wait, one descriptor ready, timeout 0"},
      {"epoll_wait_ready", "epoll_wait_ready_loop", "epoll_wait, one descriptor ready, no timeout"},
      {"socket_nonblocking", "socket_nonblocking_loop",
       "non-blocking socket: sendmsg 16 bytes, read them back (per call)"}}},
    {"sync_calls",
     "bench/programs/sync_calls.cpp",
     {{"mutex", "mutex_loop", "mutex lock + unlock, uncontended (per pair)"},
      {"mutex_contended", "mutex_contended_loop", "mutex lock + unlock, 2 threads on one mutex (per pair)"},
      {"cond", "cond_loop", "condition variable hand-off between 2 threads (per hand-off)"},
      {"sem", "sem_loop", "semaphore hand-off between 2 threads (per hand-off)"},
      {"futex", "futex_loop", "futex WAIT/WAKE hand-off between 2 threads via syscall (per hand-off)"}}},
};

std::string line_of(const CallProgram& program, const char* marker) {
  BenchProgram p;
  p.source = program.source;
  return marked_line(p, marker);
}

}  // namespace

Section measure_call_cost(const Config& config) {
  Section section;
  section.title = "Interposed calls: ns per call on the program's own path";
  section.load_before = load_average();
  const std::string profile = config.scratch + "/call_cost.coz";
  const std::string calls = config.quick ? "100000" : "400000";
  RunOptions options;
  options.nice = config.nice;
  const int rounds = config.quick ? 1 : 3;

  section.table.header = {"call", "plain ns", "ours, loaded: ns (over plain)", "ours, in an experiment: ns (over plain)"};
  for (const CallProgram& program : kPrograms) {
    const std::string binary = config.programs + "/" + program.name;
    // ns per call: [kind] over rounds, per mode.
    std::map<std::string, std::vector<double>> plain, loaded, experiment;
    for (int round = 0; round < rounds; ++round) {
      progress(fmt::format("call_cost: {} round {}/{}", program.name, round + 1, rounds));
      auto run = [&](const std::vector<std::string>& argv, std::map<std::string, std::vector<double>>& into,
                     const char* only) {
        const RunResult r = run_process(argv, options);
        if (!r.ok()) {
          progress("call_cost: " + argv[0] + " failed: " + r.describe());
          return;
        }
        for (const Kind& k : program.kinds) {
          if (only && std::string(only) != k.name) continue;
          double ns = find_number(r.stderr_text, fmt::format("{}: {}", program.name, k.name));
          if (ns >= 0) into[k.name].push_back(ns);
        }
      };
      run({binary, "-n", calls}, plain, nullptr);
      run({config.coz, "run", "-o", profile, "--fixed-speedup", "0", "---", binary, "-n", calls}, loaded, nullptr);
      for (const Kind& k : program.kinds) {
        run({config.coz, "run", "-o", profile, "--fixed-line", line_of(program, k.marker), "--fixed-speedup", "50",
             "---", binary, "-n", calls},
            experiment, k.name);
      }
    }
    for (const Kind& k : program.kinds) {
      const double base = median(plain[k.name]);
      auto cell = [&](const std::vector<double>& v) {
        if (v.empty()) return std::string("failed");
        const double m = median(v);
        return fmt::format("{:.0f} ({:+.0f} ns, {:.2f}x)", m, m - base, m / base);
      };
      section.table.rows.push_back({k.label, fmt::format("{:.0f}", base), cell(loaded[k.name]), cell(experiment[k.name])});
    }
  }
  section.notes = {
      fmt::format("Median of {} interleaved rounds of `io_calls -n {}` and `sync_calls -n {}` "
                  "(bench/programs/): ns per call from the program's own clock. io_calls: one thread, no call ever "
                  "blocks. sync_calls: the hand-offs block on every turn (a tenth as many turns as calls).",
                  rounds, calls, calls),
      "ours, loaded = `--fixed-speedup 0`: every wrapper runs, nothing is ever owed, no wake is posted. "
      "In an experiment = `--fixed-line` on the loop itself at 50%: three experiments in four insert delays, "
      "so each wake also leaves its credit on the wake board (docs/waits.md); every thread running the loop "
      "credits itself and none pauses.",
  };
  section.load_after = load_average();
  return section;
}

}  // namespace coz_bench
