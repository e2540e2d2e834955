// Shared by the robustness programs (test/integration/robustness_test.cpp):
// option parsing, /proc look-ups and a background load of worker threads.
//
// The workers' loop lives here on one line, so the programs' own marked lines
// stay free for the tests that look at them.
#pragma once

#include <coz.h>
#include <dirent.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace robust {

// Iterations of a work loop per millisecond (test/programs/program_common.h).
inline constexpr uint64_t kStepsPerMs = 600'000;

/// `--name VALUE` options and bare `--flag`s; anything unknown exits with status 2.
class Options {
 public:
  Options(int argc, char** argv, std::vector<std::string> known) {
    for (int i = 1; i < argc; ++i) {
      std::string key = argv[i];
      bool ok = false;
      for (const std::string& k : known) {
        if (k == key) ok = true;
        if (k == key + "=") {  // takes a value
          if (i + 1 >= argc) break;
          values_.emplace_back(key, argv[++i]);
          ok = true;
          key.clear();
          break;
        }
      }
      if (!ok) {
        std::fprintf(stderr, "%s: unknown or incomplete argument '%s'\n", argv[0], argv[i]);
        std::exit(2);
      }
      if (!key.empty()) values_.emplace_back(key, "");
    }
  }
  bool has(const std::string& key) const {
    for (const auto& [k, v] : values_) {
      if (k == key) return true;
    }
    return false;
  }
  std::string text(const std::string& key, const std::string& fallback = "") const {
    for (const auto& [k, v] : values_) {
      if (k == key) return v;
    }
    return fallback;
  }
  uint64_t number(const std::string& key, uint64_t fallback) const {
    const std::string v = text(key);
    return v.empty() ? fallback : std::strtoull(v.c_str(), nullptr, 10);
  }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

/// Open file descriptors of this process (entries of /proc/self/fd, minus the one reading it).
inline int fd_count() {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int n = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;
}

/// A field of /proc/self/status in kB (VmRSS, VmHWM), -1 if absent.
inline long status_kb(const char* field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long value = -1;
  const size_t len = std::strlen(field);
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, field, len) == 0 && line[len] == ':') value = std::strtol(line + len + 1, nullptr, 10);
  }
  std::fclose(f);
  return value;
}

inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// One write(2) per message: stdout may be shared with forked children.
inline void say(const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = write(STDOUT_FILENO, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

inline volatile uint64_t g_background_seed = 0x5eed;

/// Threads that compute and visit a progress point until stopped, so the
/// profiler samples and experiments while the program does something else.
class Background {
 public:
  explicit Background(int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        uint64_t x = g_background_seed;
        while (!stop_.load(std::memory_order_relaxed)) {
          for (uint64_t i = 0; i < kStepsPerMs / 4; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // background
          COZ_PROGRESS_NAMED("background");
          units_.fetch_add(1, std::memory_order_relaxed);
        }
        g_background_seed = x;
      });
    }
  }
  ~Background() { stop(); }
  void stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  uint64_t units() const { return units_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> units_{0};
  std::vector<std::thread> threads_;
};

}  // namespace robust
