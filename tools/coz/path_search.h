// Finding executables the way execvp does: shared by `coz run` (the program)
// and `coz plot` (a browser).
#pragma once

#include <optional>
#include <string>

namespace coz::cli {

/// A regular file this user may execute.
bool is_executable_file(const std::string& path);

/// `name` (no slash) in the directories of $PATH, in order; an empty entry
/// is the current directory. Without $PATH: /usr/local/bin:/usr/bin:/bin.
std::optional<std::string> find_in_path(const std::string& name);

}  // namespace coz::cli
