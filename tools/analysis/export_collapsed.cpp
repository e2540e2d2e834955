// See export_collapsed.h.
#include "export_collapsed.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>

#include <fmt/format.h>

namespace coz::analysis {
namespace {

std::string_view base_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// `;` separates frames and a newline ends a stack: neither may be in a label
// (a demangled name has neither, but the profile is input).
std::string clean(std::string label) {
  std::replace(label.begin(), label.end(), ';', ',');
  std::replace(label.begin(), label.end(), '\n', ' ');
  return label;
}

}  // namespace

std::string collapsed_label(const ExportFrame& frame) {
  std::string label;
  switch (frame.kind) {
    case ExportFrame::Kind::Line: {
      std::string place = frame.line > 0 ? fmt::format("{}:{}", base_name(frame.file), frame.line)
                                         : std::string(base_name(frame.file));
      label = frame.function.empty() ? place : fmt::format("{} ({})", frame.function, place);
      break;
    }
    case ExportFrame::Kind::Function:
      label = fmt::format("{} ({})", frame.function, base_name(frame.file));
      break;
    case ExportFrame::Kind::Callee: label = fmt::format("{} [{}]", frame.function, frame.library); break;
    case ExportFrame::Kind::NotRecorded: label = std::string(not_recorded_label); break;
  }
  if (!frame.program.empty()) label += fmt::format(" [{}]", frame.program);
  return clean(std::move(label));
}

void write_collapsed(std::ostream& out, const ExportedStacks& stacks) {
  std::vector<std::string> labels;
  labels.reserve(stacks.frames.size());
  for (const ExportFrame& frame : stacks.frames) labels.push_back(collapsed_label(frame));

  // Two raw stacks can get the same labels (main.cpp:42 of two directories).
  std::map<std::string, uint64_t> folded;
  for (const ExportStack& stack : stacks.stacks) {
    std::string line;
    for (size_t i : stack.frames) {
      if (!line.empty()) line += ';';
      line += labels[i];
    }
    uint64_t& count = folded[line];
    count = count > std::numeric_limits<uint64_t>::max() - stack.count ? std::numeric_limits<uint64_t>::max()
                                                                        : count + stack.count;
  }
  for (const auto& [line, count] : folded) out << line << ' ' << count << '\n';
}

}  // namespace coz::analysis
