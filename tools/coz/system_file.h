// `coz run --system`: the shared file every process of the run maps
// (libcoz/core/system_shared.h), and its removal when the run ends.
#pragma once

#include <string>

namespace coz::cli {

/// Creates the run's shared file (named for `name`, or not if empty;
/// naming the run's profile, `output_path`) and
/// starts a process that removes it once the program (this process, about to
/// exec it) ends: processes still running keep their mapping. Returns the
/// path, or "" with `error` set.
std::string start_system_run(const std::string& name, const std::string& output_path, std::string& error);

/// The profile of the run whose shared file is `path`; "" with `error` set
/// when it is not such a file.
std::string system_run_profile(const std::string& path, std::string& error);

}  // namespace coz::cli
