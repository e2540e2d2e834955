// The profile's call stacks as the exports of `coz report` see them
// (`--collapsed`, `--pprof`; docs/exports.md): each raw `stack` frame parsed
// once into its parts, with the function the `samples` records name for a
// line, and the samples that have a line but no stack record put back under
// a frame of their own so no sample is lost on the way out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profile.h"

namespace coz::analysis {

struct ExportFrame {
  enum class Kind {
    Line,         // FILE:LINE (`line` 0 for an in-scope frame of no known shape: `file` holds it whole)
    Function,     // BINARY:FUNCTION, a binary without debug info
    Callee,       // FUNCTION [LIBRARY], out of scope
    NotRecorded,  // the root of the samples whose stack the runtime had no room for
  };
  Kind kind = Kind::Line;
  std::string file;      // Line: the source file as the debug info names it; Function: the binary
  uint64_t line = 0;     // Line only
  std::string function;  // Line: the `samples` records' function, "" when unknown; Function, Callee: the function
  std::string library;   // Callee only: the object's base name
  std::string program;   // `coz run --system`: the executable's base name of an in-scope frame; "" otherwise
};

struct ExportStack {
  std::vector<size_t> frames;  // indexes into ExportedStacks::frames, outermost first
  uint64_t count = 0;
};

struct ExportedStacks {
  std::vector<ExportFrame> frames;  // distinct raw frames, in the order first met
  std::vector<ExportStack> stacks;  // one per distinct raw `frames`, in the profile's order, then the unrecorded
  uint64_t samples = 0;             // Σ stack counts, the unrecorded included
  uint64_t not_recorded = 0;        // samples of lines beyond their stacks' counts (`stacks-dropped`)
};

/// The label of the frame that roots the samples without a stack record.
inline constexpr std::string_view not_recorded_label = "[stack not recorded]";

/// Parses an in-scope or callee frame as `stack` records write it (docs/profile-format.md).
ExportFrame parse_export_frame(const std::string& raw, const Profile& profile);

/// Every stack of `profile`, and per line, the samples its `samples` records
/// count beyond the stacks whose innermost line it is: `[stack not recorded];LINE`.
/// Empty when the profile has no `stack` records (Coz's, and ours before them).
ExportedStacks exported_stacks(const Profile& profile);

}  // namespace coz::analysis
