// The conventional profile of the same runs (docs/analysis.md section 9):
// where the samples fell, per line, per function and per call stack, which
// out-of-scope function (memcpy, qsort...) each line's stacks continue in, and
// where threads waited. Shown beside the causal results so that "hot but
// useless" and "cold but critical" lines stand out.
#include <algorithm>
#include <map>
#include <string_view>

#include "analysis.h"

namespace coz::analysis {
namespace {

double share(uint64_t part, uint64_t total) {
  return total > 0 ? static_cast<double>(part) / static_cast<double>(total) : 0.0;
}

uint64_t saturating_sum(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

// Per in-scope line: the stack samples whose innermost in-scope frame it is,
// and how many of them continue in each callee (the frame right after it).
struct CalleeTally {
  uint64_t stack_samples = 0;
  std::map<std::string_view, uint64_t> callees;  // raw callee frame -> samples
};

std::map<std::string, Callee> top_callees(const std::map<std::string, uint64_t>& stacks) {
  std::map<std::string_view, CalleeTally> lines;  // views into `stacks`' keys
  for (const auto& [frames, count] : stacks) {
    std::string_view rest = frames;
    std::string_view line;    // innermost in-scope frame so far
    std::string_view callee;  // the frame right after it, when a callee
    bool has_line = false;
    bool right_after_line = false;
    while (true) {
      size_t end = rest.find(';');
      std::string_view frame = rest.substr(0, end);
      switch (parse_stack_frame(frame).kind) {
        case StackFrame::Kind::InScope:
          line = frame;
          callee = {};
          has_line = right_after_line = true;
          break;
        case StackFrame::Kind::Callee:
          if (right_after_line) callee = frame;
          right_after_line = false;
          break;
        case StackFrame::Kind::Skipped: break;
      }
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
    if (!has_line) continue;  // only out-of-scope frames: no line to charge
    CalleeTally& t = lines[line];
    t.stack_samples = saturating_sum(t.stack_samples, count);
    if (!callee.empty()) t.callees[callee] = saturating_sum(t.callees[callee], count);
  }

  std::map<std::string, Callee> out;
  for (const auto& [line, t] : lines) {
    if (t.callees.empty()) continue;
    // Largest count; on a tie the first in byte order (the map's order).
    auto top = t.callees.begin();
    for (auto it = t.callees.begin(); it != t.callees.end(); ++it) {
      if (it->second > top->second) top = it;
    }
    StackFrame frame = parse_stack_frame(top->first);
    out.emplace(std::string(line), Callee{std::string(frame.function), std::string(frame.library), top->second,
                                          t.stack_samples, share(top->second, t.stack_samples)});
  }
  return out;
}

}  // namespace

bool is_location(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == text.size()) return false;
  if (text.front() == '/') return true;
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(colon) + 1, text.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

StackFrame parse_stack_frame(std::string_view frame) {
  StackFrame out;
  if (frame.empty()) {
    out.kind = StackFrame::Kind::Skipped;
    return out;
  }
  size_t open = frame.rfind(" [");
  if (frame.back() != ']' || open == std::string_view::npos) return out;  // FILE:LINE, BINARY:FUNCTION
  if (is_location(frame.substr(0, open))) return out;                     // the same, then [PROGRAM]
  out.function = frame.substr(0, open);
  out.library = frame.substr(open + 2, frame.size() - open - 3);
  out.kind = out.function.empty() || out.library.empty() ? StackFrame::Kind::Skipped : StackFrame::Kind::Callee;
  return out;
}

ConventionalProfile conventional_profile(const Profile& profile) {
  ConventionalProfile out;
  out.callees = top_callees(profile.stacks);
  uint64_t total = 0;
  for (const auto& [location, s] : profile.samples) total = saturating_sum(total, s.count);

  std::map<std::string, FunctionSamples> functions;
  out.lines.reserve(profile.samples.size());  // one allocation of the right size: no growth's copy on the side
  for (const auto& [location, s] : profile.samples) {
    LineSamples line{location, s.function, s.count, share(s.count, total), nullptr};
    if (auto it = out.callees.find(location); it != out.callees.end()) {
      line.callee = std::make_shared<const Callee>(it->second);
    }
    if (!s.function.empty()) {
      FunctionSamples& f = functions[s.function];
      f.function = s.function;
      f.samples = saturating_sum(f.samples, s.count);
      ++f.lines;
    }
    out.lines.push_back(std::move(line));
  }
  // Most samples first, ties in location order (the samples map's): the
  // order a stable sort would give, sorted in place (a stable sort's buffer
  // is half the lines again).
  std::sort(out.lines.begin(), out.lines.end(), [](const LineSamples& a, const LineSamples& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.location < b.location;
  });

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
