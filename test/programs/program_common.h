// Shared by the target programs: argument parsing and timing only.
//
// The work loops stay in each program's own .cpp file, one loop per source
// line, because the profiler attributes samples to source lines: a work loop
// shared through this header would put every program's samples on one line.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace coz_programs {

struct Args {
  uint64_t n = 0;       // work units (rounds, items, iterations, requests)
  int exit_status = 0;  // status to exit with (lets the tests check pass-through)
};

// Usage: PROGRAM [-n UNITS] [--exit-status N]. Bad input exits with status 2.
inline Args parse_args(int argc, char** argv, uint64_t default_n) {
  Args args;
  args.n = default_n;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    char* end = nullptr;
    if (std::strcmp(argv[i], "-n") == 0 && has_value) {
      args.n = std::strtoull(argv[++i], &end, 10);
    } else if (std::strcmp(argv[i], "--exit-status") == 0 && has_value) {
      args.exit_status = static_cast<int>(std::strtol(argv[++i], &end, 10));
    } else {
      std::fprintf(stderr, "%s: unknown argument '%s' (usage: %s [-n UNITS] [--exit-status N])\n",
                   argv[0], argv[i], argv[0]);
      std::exit(2);
    }
    if (end == nullptr || *end != '\0') {
      std::fprintf(stderr, "%s: bad number '%s'\n", argv[0], argv[i]);
      std::exit(2);
    }
  }
  return args;
}

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Iterations of a work loop per millisecond of plain run time on the reference
// machine (Debian 12 VM, 2 cores: one multiply-xor step is ~1.64 ns).
inline constexpr uint64_t kStepsPerMs = 600'000;

}  // namespace coz_programs
