// `coz report --pprof FILE`: the profile's call stacks as a gzipped
// profile.proto (github.com/google/pprof/proto/profile.proto), which
// `go tool pprof`, pprof's web UI and speedscope load (docs/exports.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "exported_stacks.h"
#include "profile.h"

namespace coz::analysis {

/// The sampling period in ns the profile's `sampling` records give, weighted
/// by their in-scope samples (the period itself when they agree); 0 when a
/// record does not say it (Coz's files, ours before `period=`).
uint64_t sampling_period_ns(const Profile& profile);

/// The uncompressed Profile message: sample types `samples/count` and, when
/// the period is known, `cpu/nanoseconds` (count x period); one Location and
/// one Line per distinct frame, a Function per distinct name and file (an
/// out-of-scope function's file is its library); each Sample's locations leaf
/// first. No mappings or addresses.
std::string pprof_message(const ExportedStacks& stacks, uint64_t period_ns, uint64_t duration_ns);

/// `data` in the gzip format (zlib's deflate with a gzip wrapper).
std::string gzip(std::string_view data);

/// Writes gzip(pprof_message(...)) of `profile` to `path`: into a temporary
/// file beside it, renamed over `path` once complete, so a reader never sees
/// half a profile. False with a one-line `error` when it cannot.
bool write_pprof_file(const Profile& profile, const ExportedStacks& stacks, const std::string& path,
                      std::string& error);

}  // namespace coz::analysis
