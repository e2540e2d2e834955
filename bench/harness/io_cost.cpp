// The cost of the interposed I/O calls (issue #12): ns per call of read and
// write on a pipe and a regular file, and eventfd_write/eventfd_read, as a
// program pays it (bench/programs/io_calls.cpp, one thread, never blocking):
//
//   plain         no profiler
//   ours, loaded  `coz run --fixed-speedup 0`: the wrappers run, every
//                 experiment is a 0% baseline, so nothing is ever owed and
//                 no wake is posted
//   ours, in an experiment  `coz run --fixed-line <that loop> --fixed-speedup 50`:
//                 three experiments in four speed the loop up (its own
//                 samples credit it; it never pauses), so each write also
//                 posts its credit on the wake board
#include <fmt/format.h>

#include <map>

#include "process.h"
#include "sections.h"

namespace coz_bench {
namespace {

struct Kind {
  const char* name;    // as io_calls prints it
  const char* marker;  // its loop's line
  const char* label;
};

const Kind kKinds[] = {
    {"pipe", "pipe_loop", "pipe: write 1 byte, read it back"},
    {"eventfd", "eventfd_loop", "eventfd: eventfd_write, eventfd_read"},
    {"file_write", "file_write_loop", "regular file: write 64 bytes"},
    {"file_read", "file_read_loop", "regular file: read 64 bytes"},
};

std::string line_of(const char* marker) {
  BenchProgram program;
  program.source = "bench/programs/io_calls.cpp";
  return marked_line(program, marker);
}

}  // namespace

Section measure_io_cost(const Config& config) {
  Section section;
  section.title = "I/O wrappers: ns per call on the program's own path";
  section.load_before = load_average();
  const std::string binary = config.programs + "/io_calls";
  const std::string profile = config.scratch + "/io_cost.coz";
  const std::string calls = config.quick ? "100000" : "400000";
  RunOptions options;
  options.nice = config.nice;

  // ns per call: [kind][mode] over rounds.
  std::map<std::string, std::vector<double>> plain, loaded, experiment;
  const int rounds = config.quick ? 1 : 3;
  for (int round = 0; round < rounds; ++round) {
    progress(fmt::format("io_cost: round {}/{}", round + 1, rounds));
    auto run = [&](const std::vector<std::string>& argv, std::map<std::string, std::vector<double>>& into,
                   const char* only) {
      const RunResult r = run_process(argv, options);
      if (!r.ok()) {
        progress("io_cost: " + argv[0] + " failed: " + r.describe());
        return;
      }
      for (const Kind& k : kKinds) {
        if (only && std::string(only) != k.name) continue;
        double ns = find_number(r.stderr_text, std::string("io_calls: ") + k.name);
        if (ns >= 0) into[k.name].push_back(ns);
      }
    };
    run({binary, "-n", calls}, plain, nullptr);
    run({config.coz, "run", "-o", profile, "--fixed-speedup", "0", "---", binary, "-n", calls}, loaded, nullptr);
    for (const Kind& k : kKinds) {
      run({config.coz, "run", "-o", profile, "--fixed-line", line_of(k.marker), "--fixed-speedup", "50",
           "---", binary, "-n", calls},
          experiment, k.name);
    }
  }

  section.table.header = {"call", "plain ns", "ours, loaded: ns (over plain)", "ours, in an experiment: ns (over plain)"};
  for (const Kind& k : kKinds) {
    const double base = median(plain[k.name]);
    auto cell = [&](const std::vector<double>& v) {
      const double m = median(v);
      return fmt::format("{:.0f} (+{:.0f} ns, {:.2f}x)", m, m - base, m / base);
    };
    section.table.rows.push_back({k.label, fmt::format("{:.0f}", base), cell(loaded[k.name]), cell(experiment[k.name])});
  }
  section.notes = {
      fmt::format("Median of {} interleaved rounds of `io_calls -n {}` (bench/programs/io_calls.cpp): one thread, "
                  "no call ever blocks; ns per call from the program's own clock.",
                  rounds, calls),
      "ours, loaded = `--fixed-speedup 0`: every wrapper runs, nothing is ever owed, no wake is posted. "
      "In an experiment = `--fixed-line` on the loop itself at 50%: three experiments in four insert delays, "
      "so each write also leaves its credit on the wake board (docs/waits.md); the loop credits itself and never "
      "pauses.",
  };
  section.load_after = load_average();
  return section;
}

}  // namespace coz_bench
