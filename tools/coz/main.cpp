// `coz`: the command-line entry point. Each subcommand lives in its own file.
#include <cstring>
#include <string_view>

#include <fmt/core.h>

#include "cli_conventions.h"
#include "plot_command.h"
#include "report_command.h"
#include "run_command.h"

namespace {

constexpr const char* usage =
    "usage: coz <command> [options]\n"
    "\n"
    "commands:\n"
    "  run [options] --- PROGRAM [ARGS...]   profile PROGRAM, appending experiments to profile.coz ('--' also works)\n"
    "  report [options] [PROFILE...]         rank lines by their measured effect on progress points\n"
    "  plot [options] [PROFILE...]           write one self-contained HTML page to explore the profile\n"
    "\n"
    "`coz <command> --help` describes a command's options; `coz --version` (-V) says which coz this is.\n"
    "\n"
    "exit status: `coz run` exits with the program's own status; 125 when coz itself fails, 126 when the\n"
    "program cannot be executed, 127 when it is not found. `coz report` and `coz plot` exit 2 on bad input.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "{}", usage);
    return coz::cli::exit_coz_failed;
  }
  std::string_view command = argv[1];
  if (command == "run") return coz::cli::run_main(argc - 1, argv + 1);
  if (command == "report") return coz::report_main(argc - 1, argv + 1);
  if (command == "plot") return coz::plot_main(argc - 1, argv + 1);
  if (command == "-h" || command == "--help" || command == "help") {
    fmt::print("{}", usage);
    return 0;
  }
  if (command == "--version" || command == "-V" || command == "version") {
    fmt::print("{}", coz::cli::version_text());
    return 0;
  }
  fmt::print(stderr, "coz: unknown command '{}' (commands: run, report, plot; see coz --help)\n", command);
  return coz::cli::exit_coz_failed;
}
