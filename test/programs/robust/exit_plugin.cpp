// libexit_plugin.so: loaded by exit_in_handler. Its constructor arms a
// one-shot SIGALRM ($EXIT_PLUGIN_ALARM_US microseconds, default 300). The
// rest is ordinary C++ whose debug information takes the runtime a few
// milliseconds to map: the signal lands while it does.
#include <sys/time.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

__attribute__((constructor)) void arm_alarm() {
  const char* us = std::getenv("EXIT_PLUGIN_ALARM_US");
  long delay = us ? std::atol(us) : 300;
  itimerval once{};
  once.it_value.tv_usec = delay;
  setitimer(ITIMER_REAL, &once, nullptr);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) std::size_t exit_plugin_words(const char* text) {
  std::istringstream in(text);
  std::map<std::string, int> counts;
  for (std::string word; in >> word;) ++counts[word];
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& [word, n] : counts) ranked.emplace_back(n, word);
  std::sort(ranked.begin(), ranked.end());
  std::ostringstream out;
  for (const auto& [n, word] : ranked) out << word << '=' << n << '\n';
  return out.str().size();
}
