#include "log.h"
#include "sys.h"

#include <unistd.h>

#include <string>

namespace coz::log {
namespace {
std::atomic<int> g_verbosity{0};
}

void set_verbosity(int verbosity) { g_verbosity.store(verbosity, std::memory_order_relaxed); }

bool enabled(Level level) {
  return static_cast<int>(level) <= 1 + g_verbosity.load(std::memory_order_relaxed);
}

void write_line(Level level, std::string_view message) {
  static constexpr std::string_view prefixes[] = {"coz: error: ", "coz: warning: ", "coz: ", "coz: debug: "};
  std::string line{prefixes[static_cast<int>(level)]};
  line.append(message);
  line.push_back('\n');
  // One write so lines from several threads or processes do not interleave.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = sys::write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace coz::log
