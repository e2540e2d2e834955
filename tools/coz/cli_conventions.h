// What every `coz` command does the same way: its exit codes, its version
// line, how options are parsed (no guessing) and how its help lists them.
#pragma once

#include <string>

#include <boost/program_options.hpp>

namespace coz::cli {

/// `coz run` replaces itself with the program, so the program's own exit
/// status is coz's. Coz's own failures use the codes of env(1) and timeout(1),
/// which a wrapping script can tell from the program's:
inline constexpr int exit_coz_failed = 125;      // bad arguments, unwritable profile, no runtime...
inline constexpr int exit_cannot_execute = 126;  // the program exists but cannot be run
inline constexpr int exit_not_found = 127;       // the program does not exist
/// `coz report` and `coz plot` run no program: bad input exits 2, as grep's and diff's.
inline constexpr int exit_bad_input = 2;

/// The version line (one source: CMake's project version) and the licence.
std::string version_text();

/// program_options' default style without its guessing: `--out` is not
/// silently taken for `--output` (nor for a later `--outfile`).
int parse_style();

/// The options as a person reads them: `  -o, --output FILE   description`,
/// defaults said as "(default: X)", wrapped to `width` columns.
std::string format_options(const boost::program_options::options_description& options, size_t width = 100);

}  // namespace coz::cli
