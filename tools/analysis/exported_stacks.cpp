// See exported_stacks.h; the frame grammar is docs/analysis.md section 9's.
#include "exported_stacks.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <string_view>

#include "analysis.h"

namespace coz::analysis {
namespace {

uint64_t saturating_sum(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The frames of one raw `frames` text, skipped ones left out.
std::vector<std::string_view> split_frames(std::string_view frames) {
  std::vector<std::string_view> out;
  while (true) {
    size_t end = frames.find(';');
    std::string_view frame = frames.substr(0, end);
    if (parse_stack_frame(frame).kind != StackFrame::Kind::Skipped) out.push_back(frame);
    if (end == std::string_view::npos) return out;
    frames.remove_prefix(end + 1);
  }
}

// Distinct frames by raw text; "" (never a frame: empty ones are skipped) is the unrecorded root.
class FrameTable {
 public:
  FrameTable(ExportedStacks& out, const Profile& profile) : out_(out), profile_(profile) {}

  size_t index(std::string_view raw) {
    auto it = ids_.find(raw);
    if (it != ids_.end()) return it->second;
    ExportFrame frame;
    if (raw.empty()) {
      frame.kind = ExportFrame::Kind::NotRecorded;
    } else {
      frame = parse_export_frame(std::string(raw), profile_);
    }
    out_.frames.push_back(std::move(frame));
    ids_.emplace(std::string(raw), out_.frames.size() - 1);
    return out_.frames.size() - 1;
  }

 private:
  ExportedStacks& out_;
  const Profile& profile_;
  std::map<std::string, size_t, std::less<>> ids_;
};

}  // namespace

ExportFrame parse_export_frame(const std::string& raw, const Profile& profile) {
  ExportFrame out;
  StackFrame callee = parse_stack_frame(raw);
  if (callee.kind == StackFrame::Kind::Callee) {
    out.kind = ExportFrame::Kind::Callee;
    out.function = callee.function;
    out.library = callee.library;
    return out;
  }
  std::string_view place = raw;
  if (size_t open = place.rfind(" ["); open != std::string_view::npos && place.back() == ']' &&
                                       is_location(place.substr(0, open))) {
    out.program = place.substr(open + 2, place.size() - open - 3);
    place = place.substr(0, open);
  }
  size_t colon = place.rfind(':');
  std::string_view digits = colon == std::string_view::npos ? std::string_view() : place.substr(colon + 1);
  uint64_t line = 0;
  if (all_digits(digits) && std::from_chars(digits.data(), digits.data() + digits.size(), line).ec == std::errc()) {
    out.file = place.substr(0, colon);
    out.line = line;
    if (auto it = profile.samples.find(raw); it != profile.samples.end()) out.function = it->second.function;
  } else if (colon != std::string_view::npos && colon > 0 && colon + 1 < place.size()) {
    out.kind = ExportFrame::Kind::Function;
    out.file = place.substr(0, colon);
    out.function = place.substr(colon + 1);
  } else {
    out.file = place;  // no known shape: shown as it is
  }
  return out;
}

ExportedStacks exported_stacks(const Profile& profile) {
  ExportedStacks out;
  if (profile.stacks.empty()) return out;
  FrameTable table(out, profile);

  // Per line, the stack samples whose innermost in-scope frame it is: the
  // runtime counts every in-scope sample both there and in its line's
  // `samples`, unless its stack table was full.
  std::map<std::string_view, uint64_t> stacked;  // views into profile.stacks' keys
  for (const auto& [raw, count] : profile.stacks) {
    ExportStack stack;
    stack.count = count;
    std::string_view innermost_line;
    for (std::string_view frame : split_frames(raw)) {
      stack.frames.push_back(table.index(frame));
      if (out.frames[stack.frames.back()].kind != ExportFrame::Kind::Callee) innermost_line = frame;
    }
    if (stack.frames.empty()) continue;
    if (!innermost_line.empty()) stacked[innermost_line] = saturating_sum(stacked[innermost_line], count);
    out.samples = saturating_sum(out.samples, count);
    out.stacks.push_back(std::move(stack));
  }

  for (const auto& [location, s] : profile.samples) {
    auto it = stacked.find(location);
    uint64_t in_stacks = it == stacked.end() ? 0 : it->second;
    if (s.count <= in_stacks) continue;
    uint64_t missing = s.count - in_stacks;
    out.stacks.push_back({{table.index(""), table.index(location)}, missing});
    out.not_recorded = saturating_sum(out.not_recorded, missing);
    out.samples = saturating_sum(out.samples, missing);
  }
  return out;
}

}  // namespace coz::analysis
