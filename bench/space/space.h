// Shared by the generated-space programs (bench/space/README.md): their
// parameters, the measured window and its end, the halving of marked lines,
// and what they print.
//
// Every program runs for a fixed time and prints its throughput over that
// time less a warm-up: `space_<structure> seconds=S key=VALUE... [halve=LINE]`.
// `halve=LINE` makes the work on the line marked `// @line:LINE` do half
// its steps: the program's really-halved variant, built from the same source.
// The work loops stay in each program's own file, one per marked line
// (SPACE_WORK below), because the profiler attributes samples to lines.
#pragma once

#include <dirent.h>
#include <time.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace space {

// Steps of a work loop per microsecond of plain run time on the reference
// machine (as test/programs/program_common.h: one step is ~1.64 ns).
inline constexpr double kStepsPerUs = 600.0;

/// A work function whose whole loop is on the line of its definition: put
/// `SPACE_WORK(name)  // @line:MARKER` on a line of its own. __LINE__ in the
/// constant keeps the functions distinct: identical ones are folded into
/// one by GCC (-fipa-icf), and one marked line would lose its code.
#define SPACE_WORK(name)                                                                           \
  __attribute__((noinline)) uint64_t name(uint64_t x, uint64_t n) {                               \
    for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * (0xbf58476d1ce4e5b9ULL + __LINE__) + i; \
    return x;                                                                                      \
  }

inline double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

[[noreturn]] inline void fail(const char* program, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program, what.c_str());
  std::exit(2);
}

/// `key=value` arguments. Every key a program reads is declared with its
/// default; an argument it does not know is an error, so a runner's typo
/// cannot silently measure the default.
class Params {
 public:
  Params(int argc, char** argv) : program_(argv[0]) {
    if (const char* slash = std::strrchr(argv[0], '/')) program_ = slash + 1;
    for (int i = 1; i < argc; ++i) {
      const char* eq = std::strchr(argv[i], '=');
      if (eq == nullptr || eq == argv[i]) fail(program_, std::string("expected key=value, got '") + argv[i] + "'");
      const std::string key(argv[i], size_t(eq - argv[i]));
      if (key == "halve") {
        halved_.insert(eq + 1);
      } else {
        raw_[key] = eq + 1;
      }
    }
  }

  /// The value of `key`, or `fallback` when absent.
  double number(const std::string& key, double fallback) {
    known_.insert(key);
    auto it = raw_.find(key);
    double v = fallback;
    if (it != raw_.end()) {
      char* end = nullptr;
      v = std::strtod(it->second.c_str(), &end);
      if (end == it->second.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
        fail(program_, "bad number for " + key + ": '" + it->second + "'");
    }
    used_.emplace_back(key, v);
    return v;
  }
  int count(const std::string& key, int fallback, int low, int high) {
    const double v = number(key, fallback);
    if (v != std::floor(v) || v < low || v > high)
      fail(program_, key + " must be a whole number in " + std::to_string(low) + ".." + std::to_string(high));
    return int(v);
  }
  /// Work steps of the line marked `marker`, from `key` (its work in
  /// microseconds per item or round), halved when the run halves it.
  uint64_t steps(const std::string& key, const std::string& marker, double fallback_us) {
    const double us = number(key, fallback_us);
    lines_.insert(marker);
    const double steps = us * kStepsPerUs;
    return uint64_t(halved_.count(marker) ? steps / 2 : steps);
  }

  /// Checks every argument was used, and prints the parameters (stdout).
  void done() {
    for (const auto& [key, value] : raw_)
      if (!known_.count(key)) fail(program_, "unknown parameter '" + key + "'");
    for (const std::string& h : halved_)
      if (!lines_.count(h)) fail(program_, "halve=" + h + ": no such marked line");
    std::printf("%s", program_);
    for (const auto& [key, value] : used_) std::printf(" %s=%g", key.c_str(), value);
    for (const std::string& h : halved_) std::printf(" halve=%s", h.c_str());
    std::printf("\n");
    std::fflush(stdout);
  }
  const char* program() const { return program_; }

 private:
  const char* program_;
  std::map<std::string, std::string> raw_;
  std::set<std::string> known_;
  std::set<std::string> lines_;
  std::set<std::string> halved_;
  std::vector<std::pair<std::string, double>> used_;
};

/// One counter per thread on its own cache line: the measured window reads
/// their sum, and no visit moves a line between cores.
struct alignas(64) Counter {
  std::atomic<uint64_t> n{0};
  void add() { n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
};

inline uint64_t sum(const std::vector<Counter>& counters) {
  uint64_t total = 0;
  for (const Counter& c : counters) total += c.n.load(std::memory_order_relaxed);
  return total;
}

/// CPU time and time waiting on a runqueue (ns), summed over this process's
/// threads (/proc/self/task/*/schedstat), to say how contended the cores
/// were: run_delay / window is the mean number of threads that were ready
/// to run and waited for a core.
struct Schedule {
  double cpu_ns = 0, run_delay_ns = 0;
};

inline Schedule schedule_now() {
  Schedule s;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return s;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/task/") + entry->d_name + "/schedstat";
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      unsigned long long cpu = 0, delay = 0;
      if (std::fscanf(f, "%llu %llu", &cpu, &delay) == 2) {
        s.cpu_ns += double(cpu);
        s.run_delay_ns += double(delay);
      }
      std::fclose(f);
    }
  }
  closedir(dir);
  return s;
}

/// The measured window, on the main thread (which only sleeps meanwhile):
/// counts done after `warmup` seconds, until `seconds` more have passed;
/// then `stop` is raised and the program's threads wind down. Prints
/// `throughput=ITEMS_PER_S` on stderr.
template <class Count>
void measure_window(const char* program, double warmup, double seconds, std::atomic<bool>& stop, Count count) {
  auto sleep_until = [](double t) {
    for (double left = t - now_s(); left > 0; left = t - now_s()) {
      timespec d{time_t(left), long((left - std::floor(left)) * 1e9)};
      nanosleep(&d, nullptr);
    }
  };
  const double start = now_s();
  sleep_until(start + warmup);
  const double t0 = now_s();
  const uint64_t c0 = count();
  const Schedule s0 = schedule_now();
  sleep_until(t0 + seconds);
  const double t1 = now_s();
  const uint64_t c1 = count();
  const Schedule s1 = schedule_now();
  stop.store(true);
  const double window_ns = 1e9 * (t1 - t0);
  std::fprintf(stderr, "%s: throughput=%.3f items=%llu window=%.3f s cores_busy=%.2f waiting_for_core=%.2f\n", program,
               double(c1 - c0) / (t1 - t0), static_cast<unsigned long long>(c1 - c0), t1 - t0,
               (s1.cpu_ns - s0.cpu_ns) / window_ns, (s1.run_delay_ns - s0.run_delay_ns) / window_ns);
}

}  // namespace space
