// Option parsing shared by the commands that read profiles (`report`, `plot`).
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace coz::cli {

/// Parses `visible` options plus any number of positional profile files into
/// `files`. False with `error` set on bad input (nothing is printed here).
bool parse_with_profiles(int argc, char** argv, const boost::program_options::options_description& visible,
                         std::vector<std::string>& files, std::string& error);

}  // namespace coz::cli
