// The conventional profile of the same runs (docs/analysis.md section 9):
// where the samples fell, per line, per function and per call stack, and where
// threads waited. Shown beside the causal results so that "hot but useless"
// and "cold but critical" lines stand out.
#include <algorithm>
#include <map>

#include "analysis.h"

namespace coz::analysis {
namespace {

double share(uint64_t part, uint64_t total) {
  return total > 0 ? static_cast<double>(part) / static_cast<double>(total) : 0.0;
}

uint64_t saturating_sum(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

}  // namespace

ConventionalProfile conventional_profile(const Profile& profile) {
  ConventionalProfile out;
  uint64_t total = 0;
  for (const auto& [location, count] : profile.samples) total = saturating_sum(total, count);

  std::map<std::string, FunctionSamples> functions;
  for (const auto& [location, count] : profile.samples) {
    LineSamples line{location, "", count, share(count, total)};
    if (auto it = profile.functions.find(location); it != profile.functions.end()) {
      line.function = it->second;
      FunctionSamples& f = functions[it->second];
      f.function = it->second;
      f.samples = saturating_sum(f.samples, count);
      ++f.lines;
    }
    out.lines.push_back(std::move(line));
  }
  std::stable_sort(out.lines.begin(), out.lines.end(),
                   [](const LineSamples& a, const LineSamples& b) { return a.samples > b.samples; });

  for (auto& [name, f] : functions) {
    f.share = share(f.samples, total);
    out.functions.push_back(std::move(f));
  }
  std::stable_sort(out.functions.begin(), out.functions.end(),
                   [](const FunctionSamples& a, const FunctionSamples& b) { return a.samples > b.samples; });

  uint64_t stack_total = 0;
  for (const auto& [frames, count] : profile.stacks) stack_total = saturating_sum(stack_total, count);
  for (const auto& [frames, count] : profile.stacks) {
    out.stacks.push_back({frames, count, share(count, stack_total)});
  }
  std::stable_sort(out.stacks.begin(), out.stacks.end(),
                   [](const StackSamples& a, const StackSamples& b) { return a.count > b.count; });

  for (const auto& [key, b] : profile.blocked) out.blocked.push_back({key.first, key.second, b.time_ns, b.count});
  std::stable_sort(out.blocked.begin(), out.blocked.end(),
                   [](const BlockedSite& a, const BlockedSite& b) { return a.time_ns > b.time_ns; });
  return out;
}

}  // namespace coz::analysis
