#include "profile_args.h"

#include "cli_conventions.h"

namespace po = boost::program_options;

namespace coz::cli {

bool parse_with_profiles(int argc, char** argv, const po::options_description& visible,
                         std::vector<std::string>& files, std::string& error) {
  po::options_description all;
  all.add(visible).add_options()("profile", po::value(&files)->composing());
  po::positional_options_description positional;
  positional.add("profile", -1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).style(parse_style()).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {  // program_options reports bad input by throwing
    error = e.what();
    return false;
  }
  return true;
}

}  // namespace coz::cli
