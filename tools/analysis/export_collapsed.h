// `coz report --collapsed`: the profile's call stacks as folded stacks, the
// input of flamegraph.pl, inferno-flamegraph and speedscope
// (docs/exports.md): one line per distinct stack, its frames outermost
// first, `;`-separated, then a space and its sample count.
#pragma once

#include <ostream>
#include <string>

#include "exported_stacks.h"

namespace coz::analysis {

/// A frame as a flame graph shows it: `consume (main.cpp:42)` (the file's
/// base name; `main.cpp:42` when the profile names no function),
/// `bar (libfoo.so)` for a binary without debug info, `memcpy [libc.so.6]`
/// out of scope, `[stack not recorded]`; an in-scope frame keeps the
/// ` [PROGRAM]` of `coz run --system` at its end. Never holds `;` or a newline.
std::string collapsed_label(const ExportFrame& frame);

/// The folded stacks, sorted; stacks whose labels are the same are one line.
void write_collapsed(std::ostream& out, const ExportedStacks& stacks);

}  // namespace coz::analysis
