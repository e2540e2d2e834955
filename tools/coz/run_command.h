#pragma once

namespace coz::cli {

/// `coz run [options] --- PROGRAM [ARGS...]`: execs PROGRAM with the runtime
/// preloaded. argv[0] is "run". Returns only on error (the exit status).
int run_main(int argc, char** argv);

}  // namespace coz::cli
