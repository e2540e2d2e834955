// `coz run`: checks the arguments, sets the runtime's environment (see
// docs/environment.md) and replaces itself with the program, so the program
// keeps its pid, its signals and its exit status.
#include "run_command.h"

#include <limits.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options.hpp>

#include "cli_conventions.h"
#include "file_line.h"
#include "go_binary.h"
#include "line_map.h"
#include "log.h"
#include "monitor.h"
#include "path_search.h"
#include "period_floor.h"
#include "sanitizer_preload.h"
#include "scope.h"
#include "system_file.h"
#include "system_shared.h"
#include <fmt/core.h>

namespace po = boost::program_options;

namespace coz::cli {
namespace {

constexpr const char* usage_line = "usage: coz run [options] --- PROGRAM [ARGS...]  ('--' works as well as '---')";

int fail(const std::string& message, int status = exit_coz_failed) {
  fmt::print(stderr, "coz run: {}\n", message);
  return status;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return path;
  return std::string(cwd) + "/" + path;
}

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Resolves PROGRAM as execvp would, or explains why it cannot run and sets
/// `status` to the exit code that says so (127 not found, 126 not executable).
std::optional<std::string> find_program(const std::string& name, std::string& error, int& status) {
  if (name.find('/') != std::string::npos) {
    struct stat st;
    if (stat(name.c_str(), &st) != 0) {
      error = fmt::format("program not found: {}", name);
      status = exit_not_found;
      return std::nullopt;
    }
    if (!S_ISREG(st.st_mode) || access(name.c_str(), X_OK) != 0) {
      error = fmt::format("program is not an executable file: {}", name);
      status = exit_cannot_execute;
      return std::nullopt;
    }
    return name;
  }
  if (std::optional<std::string> found = find_in_path(name)) return found;
  error = fmt::format("program not found in PATH: {}", name);
  status = exit_not_found;
  return std::nullopt;
}

/// Where the program's arguments start: after the first "---" (Coz's) or
/// "--"; -1 without one. Options before it are coz's.
int find_separator(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "---") == 0 || std::strcmp(argv[i], "--") == 0) return i;
  }
  return -1;
}

/// libcoz.so next to this executable (build tree), or where `cmake --install` puts it.
std::optional<std::string> find_runtime() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return std::nullopt;
  std::string dir = directory_of(std::string(self, static_cast<size_t>(n)));
  for (const std::string& candidate : {dir + "/libcoz.so", dir + "/" + COZ_INSTALLED_LIB_RELATIVE}) {
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return std::nullopt;
}

/// A positive number followed by one of `units` (a bare number takes the
/// unit named ""), in ns, within [min_ns, max_ns]; nullopt otherwise.
std::optional<uint64_t> parse_time(const std::string& text, std::initializer_list<std::pair<std::string_view, double>> units,
                                   double min_ns, double max_ns) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !(value > 0)) return std::nullopt;
  for (const auto& [unit, ns_per_unit] : units) {
    if (unit != std::string_view(end)) continue;
    double ns = value * ns_per_unit;
    if (ns < min_ns || ns > max_ns) return std::nullopt;
    return static_cast<uint64_t>(ns);
  }
  return std::nullopt;
}

/// "1ms", "250us", "500000ns", "0.5ms" or a bare number of milliseconds -> ns; 10 us .. 1 s.
std::optional<uint64_t> parse_period(const std::string& text) {
  return parse_time(text, {{"", 1e6}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"s", 1e9}}, 1e4, 1e9);
}

/// The output must be a writable regular file, or creatable; checked
/// without creating it (nothing is written on error). Not a symbolic link:
/// one planted in a shared directory would have the program (maybe root's)
/// append to any file; not a FIFO (the program would block before main
/// until a reader came) nor a device (/dev/full would lose the profile
/// silently). The runtime opens it the same way (ProfileWriter::open).
bool output_writable(const std::string& path, std::string& error) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    const char* why = S_ISLNK(st.st_mode)  ? "it is a symbolic link (not followed)"
                      : S_ISDIR(st.st_mode) ? "is a directory"
                      : !S_ISREG(st.st_mode) ? "not a regular file"
                      : access(path.c_str(), W_OK) != 0 ? std::strerror(EACCES)
                                                         : nullptr;
    if (why) {
      error = fmt::format("cannot write the profile {}: {}", path, why);
      return false;
    }
    return true;
  }
  std::string dir = directory_of(path);
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    error = fmt::format("cannot create the profile {}: {}", path, std::strerror(errno));
    return false;
  }
  return true;
}

/// What the default scope (the program itself) finds in the program.
enum class ProgramContents { Lines, NoLineInSourceScope, Nothing, Unreadable };

ProgramContents what_can_be_profiled(const std::string& program, const std::vector<std::string>& source_globs,
                                     std::string& why) {
  SourceScope sources(source_globs);
  LineMap map;
  const char* debug_root = std::getenv("COZ_DEBUG_ROOT");
  ObjectLines found = map.add_object(program, 0, [&](std::string_view f) { return sources.contains(f); },
                                     debug_root && *debug_root ? debug_root : default_debug_root);
  why = found.error;
  if (!found.error.empty()) return ProgramContents::Unreadable;
  if (found.lines > 0) return ProgramContents::Lines;
  return found.has_debug_info || found.function_level ? ProgramContents::NoLineInSourceScope
                                                      : ProgramContents::Nothing;
}

/// The Debian package that installed `path` ("" if none): its -dbgsym has the debug information.
std::string owning_package(const std::string& path) {
  std::string command = "dpkg-query -S '" + path + "' 2>/dev/null";
  if (path.find('\'') != std::string::npos) return "";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "";
  char line[512] = {};
  const bool read = std::fgets(line, sizeof line, pipe) != nullptr;
  pclose(pipe);
  const char* colon = read ? std::strchr(line, ':') : nullptr;
  if (!colon) return "";
  std::string package(line, static_cast<size_t>(colon - line));
  return package.find_first_of(" ,") == std::string::npos ? package : "";
}

/// A stripped program still runs under `coz run` (a wrapper must run it):
/// its libraries are profiled at function level; says what would give lines.
void warn_stripped(const std::string& program) {
  const std::string package = owning_package(program);
  const std::string lines_from =
      package.empty() ? "rebuild it with -g"
                      : fmt::format("install {}-dbgsym (Debian's debug archive: deb http://deb.debian.org/debian-debug "
                                    "<suite>-debug main) or rebuild it with -g",
                                    package);
  fmt::print(stderr,
             "coz run: warning: {} has no debug information and no symbols: profiling the functions of the "
             "libraries it loads (-b '*'); for its own lines, {}\n",
             program, lines_from);
}

/// Whether the ELF file has a program interpreter (the dynamic loader):
/// without one (a static binary), nothing reads LD_PRELOAD.
bool dynamically_linked(const ElfFile& file) {
  for (const elf::segment& segment : file.elf().segments()) {
    if (segment.get_hdr().type == elf::pt::interp) return true;
  }
  return false;
}

/// Why the loader will ignore LD_PRELOAD for the program (its secure mode:
/// set-user-ID or set-group-ID to someone else, or file capabilities), or
/// nullptr. Such bits do nothing on a file system mounted nosuid.
const char* secure_execution(const std::string& program) {
  struct stat st;
  struct statvfs fs;
  if (stat(program.c_str(), &st) != 0) return nullptr;
  if (statvfs(program.c_str(), &fs) == 0 && (fs.f_flag & ST_NOSUID)) return nullptr;
  if ((st.st_mode & S_ISUID) && st.st_uid != getuid()) return "set-user-ID";
  if ((st.st_mode & S_ISGID) && st.st_gid != getgid()) return "set-group-ID";
  if (getuid() != 0 && getxattr(program.c_str(), "security.capability", nullptr, 0) > 0) return "given file capabilities";
  return nullptr;
}

/// A program the runtime cannot be loaded into still runs, unprofiled, and
/// keeps its exit status; the user is told why there will be no profile.
void warn_if_runtime_cannot_load(const std::string& program) {
  std::string error;
  const std::optional<ElfFile> file = ElfFile::open(program, error);
  const bool go = file && is_go_program(*file);  // go_binary.h
  if (file && !dynamically_linked(*file)) {  // (an unreadable file is not ours to judge: exec will say)
    // Go links without the C toolchain unless told otherwise; its external
    // linker makes a dynamically linked program of the same code.
    const char* relink = go ? "rebuild it with `CGO_ENABLED=1 go build -ldflags=-linkmode=external` "
                              "(a C compiler and linker needed) to profile it"
                            : "link it without -static to profile it";
    fmt::print(stderr, "coz run: warning: {} is statically linked: the runtime cannot be loaded into it, "
               "nothing will be profiled; {}\n", program, relink);
  } else if (go && is_go_program_without_cgo(*file)) {
    fmt::print(stderr, "coz run: warning: {} is a Go program without runtime/cgo, whose signal handling would take "
               "the runtime's samples: nothing will be profiled; add `import _ \"runtime/cgo\"` to its main package "
               "and build it with CGO_ENABLED=1\n", program);
  } else if (const char* why = secure_execution(program)) {
    fmt::print(stderr, "coz run: warning: {} is {}: the loader ignores LD_PRELOAD for it, nothing will be "
               "profiled\n", program, why);
  }
}

/// "90s", "2min", "1h", "500ms" or a bare number of seconds -> ns; 1 ms .. a year.
std::optional<uint64_t> parse_duration(const std::string& text) {
  return parse_time(text, {{"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"min", 60e9}, {"m", 60e9}, {"h", 3600e9}}, 1e6,
                    1e9 * 86400 * 365);
}

/// "INT", "SIGTERM", "term" or a number -> the signal; nullopt if none.
std::optional<int> parse_signal(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (text.rfind("SIG", 0) == 0) text = text.substr(3);
  static const std::pair<const char*, int> names[] = {{"INT", SIGINT},   {"TERM", SIGTERM}, {"HUP", SIGHUP},
                                                      {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
  for (const auto& [name, number] : names) {
    if (text == name) return number;
  }
  char* end = nullptr;
  long n = std::strtol(text.c_str(), &end, 10);
  if (end != text.c_str() && *end == '\0' && n > 0 && n < NSIG) return static_cast<int>(n);
  return std::nullopt;
}

std::string join_lines(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += '\n';
    out += item;
  }
  return out;
}

/// The runtime of a process whose stderr is not this one's (a child whose
/// parent captures its stderr) writes its messages to a file instead, and
/// the run's first process shows them here at its exit (log.h,
/// send_to_side_file): COZ_MESSAGES names the file, COZ_STDERR this
/// stderr. Only the name is chosen here; the first message creates the file
/// (log.h), so a run without one leaves none behind. Without a name (stderr
/// closed, no temporary directory) every process writes to its own stderr.
void share_messages_of_other_processes() {
  const std::string identity = log::file_identity(STDERR_FILENO);
  if (identity.empty()) return;
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/coz-messages-XXXXXX";
  const int fd = mkstemp(path.data());  // a fresh unpredictable name, then freed for the runtime
  if (fd < 0) return;
  close(fd);
  unlink(path.c_str());
  setenv("COZ_MESSAGES", path.c_str(), 1);
  setenv("COZ_STDERR", identity.c_str(), 1);
}

}  // namespace

int run_main(int argc, char** argv) {
  // Everything after the separator belongs to the program, untouched by option parsing.
  const int separator = find_separator(argc, argv);

  po::options_description options("coz run options");
  options.add_options()
      ("help,h", "show this help")
      ("version,V", "print coz's version and license")
      ("output,o", po::value<std::string>()->default_value("profile.coz")->value_name("FILE"), "profile to append to")
      ("format", po::value<std::string>()->value_name("coz|coz-jsonl"),
       "how the records are written: coz (default: tab-separated) or coz-jsonl (JSON Lines, as Coz 0.2.4 and "
       "later write; docs/profile-format.md)")
      ("binary-scope,b", po::value<std::vector<std::string>>()->value_name("GLOB"),
       "glob of binaries to profile (repeatable; MAIN is the program; default: MAIN)")
      ("source-scope,s", po::value<std::vector<std::string>>()->value_name("GLOB"),
       "glob of source files to profile (repeatable; default: all but system headers)")
      ("progress", po::value<std::vector<std::string>>()->value_name("FILE:LINE"),
       "count visits to FILE:LINE as a throughput point, without changing the source (repeatable)")
      ("latency", po::value<std::vector<std::string>>()->multitoken()->value_name("BEGIN END"),
       "a latency point from FILE:LINE BEGIN to FILE:LINE END, without changing the source")
      ("fixed-line", po::value<std::string>()->value_name("FILE:LINE"), "always speed up this FILE:LINE (a path suffix is enough)")
      ("fixed-speedup", po::value<int>()->value_name("PERCENT"), "use this virtual speedup, in percent (0-100), in every experiment but the 0% baselines")
      ("end-to-end", "run one experiment over the whole run (no progress point needed; run many times)")
      ("granularity", po::value<std::string>()->value_name("auto|line|function"),
       "auto (default), line or function: what one experiment speeds up (a function covers all its lines, "
       "inlined callees included; fewer candidates settle sooner). auto: in a program with many sampled lines, "
       "functions first, then the lines of the functions that matter")
      ("period", po::value<std::string>()->value_name("TIME"), "sampling period in thread CPU time, e.g. 1ms, 500us (default 1ms); lengthened where the machine's timer cannot afford it")
      ("quiet,q", "no status line while the program runs")
      ("until-settled", "stop the experiments (not the program) once the top lines of every progress point are "
       "settled; the profile is complete from then on")
      ("top", po::value<size_t>()->value_name("N"), "how many top lines --until-settled waits for, per progress point (default 3)")
      ("max-time", po::value<std::string>()->value_name("TIME"), "stop the experiments after this long, e.g. 90s, 5min (settled or not)")
      ("stop-signal", po::value<std::string>()->value_name("SIGNAL"), "also send the program this signal (INT, TERM...) as the "
       "experiments stop (--until-settled, --max-time)")
      ("allocation", po::value<std::string>()->value_name("aimed|samples"), "aimed (default): after a warm-up, experiments go mostly to the "
       "lines that decide the answer; samples: always in proportion to samples, as Coz does")
      ("system", po::value<std::string>()->implicit_value("")->value_name("NAME"), "one experiment at a time across every process of "
       "the run (children, exec'd programs, and processes started with --join NAME); =NAME lets others join")
      ("join", po::value<std::string>()->value_name("NAME"), "take part in the --system=NAME run going on")
      ("verbose,v", "print what the runtime does");

  po::variables_map vm;
  int option_count = separator < 0 ? argc : separator;
  try {
    po::store(po::command_line_parser(option_count, argv).options(options).style(parse_style()).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return fail(fmt::format("{} ({})", e.what(), usage_line));
  }
  if (vm.count("help")) {
    fmt::print("{}\n\n{}", usage_line, format_options(options));
    return 0;
  }
  if (vm.count("version")) {
    fmt::print("{}", version_text());
    return 0;
  }
  if (separator < 0) return fail(fmt::format("missing '---' (or '--') before the program ({})", usage_line));
  if (separator + 1 >= argc) return fail(fmt::format("no program after '{}' ({})", argv[separator], usage_line));

  std::string error;
  int not_runnable = exit_coz_failed;
  auto program = find_program(argv[separator + 1], error, not_runnable);
  if (!program) return fail(error, not_runnable);
  auto runtime = find_runtime();
  if (!runtime) return fail("cannot find libcoz.so next to the coz executable or in its install directory");

  // Under --system, a launcher with nothing to profile may start programs that have.
  if (!vm.count("binary-scope") && !vm.count("system")) {
    std::vector<std::string> source_globs;
    if (vm.count("source-scope")) source_globs = vm["source-scope"].as<std::vector<std::string>>();
    std::string why;
    switch (what_can_be_profiled(*program, source_globs, why)) {
      case ProgramContents::Lines: break;
      case ProgramContents::NoLineInSourceScope:
        return fail(fmt::format("nothing to profile in {}: no source line is in scope (check -s)", *program));
      case ProgramContents::Nothing:
        warn_stripped(*program);
        setenv("COZ_BINARY_SCOPE", "*", 1);
        break;
      case ProgramContents::Unreadable:  // a script, say: its interpreter runs, and what it starts
        fmt::print(stderr, "coz run: warning: cannot read {} ({}): nothing in it is profiled; choose the binaries "
                   "it runs with -b, or profile them with --system\n", *program, why);
        break;
    }
  }

  std::string output = absolute(vm["output"].as<std::string>());  // the program may chdir
  if (!output_writable(output, error)) return fail(error);

  setenv("COZ_OUTPUT", output.c_str(), 1);
  char program_path[PATH_MAX];
  if (realpath(program->c_str(), program_path)) setenv("COZ_PROGRAM", program_path, 1);
  if (vm.count("binary-scope")) setenv("COZ_BINARY_SCOPE", join_lines(vm["binary-scope"].as<std::vector<std::string>>()).c_str(), 1);
  if (vm.count("source-scope")) setenv("COZ_SOURCE_SCOPE", join_lines(vm["source-scope"].as<std::vector<std::string>>()).c_str(), 1);
  if (vm.count("fixed-line")) {
    const auto& line = vm["fixed-line"].as<std::string>();
    const auto [file_line, program] = split_program(line);
    if (!parse_file_line(file_line)) return fail(fmt::format("--fixed-line {}: expected FILE:LINE, e.g. main.cpp:42", line));
    if (!program.empty() && !vm.count("system") && !vm.count("join")) {
      return fail(fmt::format("--fixed-line {}: a line of a named program needs --system or --join", line));
    }
    setenv("COZ_FIXED_LINE", line.c_str(), 1);
  }
  auto is_file_line = [](const std::string& spec) { return parse_file_line(spec).has_value(); };
  if (vm.count("progress")) {
    const auto& lines = vm["progress"].as<std::vector<std::string>>();
    for (const auto& line : lines) {
      if (!is_file_line(line)) return fail(fmt::format("--progress {}: expected FILE:LINE, e.g. main.cpp:42", line));
    }
    setenv("COZ_PROGRESS_LINES", join_lines(lines).c_str(), 1);
  }
  if (vm.count("latency")) {
    const auto& lines = vm["latency"].as<std::vector<std::string>>();
    if (lines.size() % 2 != 0) return fail("--latency takes two lines: BEGIN_FILE:LINE END_FILE:LINE");
    for (const auto& line : lines) {
      if (!is_file_line(line)) return fail(fmt::format("--latency {}: expected FILE:LINE, e.g. main.cpp:42", line));
    }
    setenv("COZ_LATENCY_LINES", join_lines(lines).c_str(), 1);
  }
  if (vm.count("fixed-speedup")) {
    int speedup = vm["fixed-speedup"].as<int>();
    if (speedup < 0 || speedup > 100) return fail(fmt::format("--fixed-speedup {}: expected 0 to 100", speedup));
    setenv("COZ_FIXED_SPEEDUP", std::to_string(speedup).c_str(), 1);
  }
  if (vm.count("format")) {
    const auto& f = vm["format"].as<std::string>();
    if (f != "coz" && f != "coz-jsonl") return fail(fmt::format("--format {}: expected coz or coz-jsonl", f));
    setenv("COZ_PROFILE_FORMAT", f.c_str(), 1);
  }
  if (vm.count("end-to-end")) setenv("COZ_END_TO_END", "1", 1);
  if (vm.count("granularity")) {
    const auto& g = vm["granularity"].as<std::string>();
    if (g != "line" && g != "function" && g != "auto") {
      return fail(fmt::format("--granularity {}: expected auto, line or function", g));
    }
    setenv("COZ_GRANULARITY", g.c_str(), 1);
  }
  if (vm.count("period")) {
    auto ns = parse_period(vm["period"].as<std::string>());
    if (!ns) return fail(fmt::format("--period {}: expected a duration from 10us to 1s, e.g. 1ms", vm["period"].as<std::string>()));
    std::string note;
    const uint64_t period = affordable_period(*ns, note);
    if (!note.empty()) fmt::print(stderr, "coz: {}\n", note);
    setenv("COZ_SAMPLE_PERIOD_NS", std::to_string(period).c_str(), 1);
  }
  if (vm.count("verbose")) setenv("COZ_VERBOSE", "1", 1);
  if (vm.count("system") && vm.count("join")) return fail("--system starts a run and --join takes part in one: give one");
  if (vm.count("join")) {
    const auto& name = vm["join"].as<std::string>();
    std::string path = coz::system_shared_path(name);
    if (path.empty()) return fail(fmt::format("--join {}: expected a name of letters, digits, '-', '_' and '.'", name));
    if (access(path.c_str(), R_OK | W_OK) != 0) {
      return fail(fmt::format("--join {}: no run of that name is going on ({}: {})", name, path, std::strerror(errno)));
    }
    // The run's experiments are written to the run's profile: so are this process's samples, unless -o says.
    if (vm["output"].defaulted()) {
      std::string run_profile = system_run_profile(path, error);
      if (run_profile.empty()) return fail(fmt::format("--join {}: {}", name, error));
      output = run_profile;
      setenv("COZ_OUTPUT", output.c_str(), 1);
    }
    setenv("COZ_SYSTEM", path.c_str(), 1);
  }

  MonitorOptions monitor;
  monitor.profile_path = output;
  monitor.status = !vm.count("quiet") && isatty(STDERR_FILENO);
  monitor.until_settled = vm.count("until-settled") > 0;
  if (vm.count("top")) {
    monitor.top = vm["top"].as<size_t>();
    if (monitor.top == 0) return fail("--top 0: expected 1 or more lines");
  }
  if (vm.count("max-time")) {
    auto ns = parse_duration(vm["max-time"].as<std::string>());
    if (!ns) return fail(fmt::format("--max-time {}: expected a duration, e.g. 90s, 5min", vm["max-time"].as<std::string>()));
    monitor.max_time_ns = *ns;
  }
  if (vm.count("stop-signal")) {
    auto sig = parse_signal(vm["stop-signal"].as<std::string>());
    if (!sig) return fail(fmt::format("--stop-signal {}: expected a signal, e.g. INT or TERM", vm["stop-signal"].as<std::string>()));
    if (!monitor.until_settled && !monitor.max_time_ns) return fail("--stop-signal needs --until-settled or --max-time");
    monitor.stop_signal = *sig;
  }
  if (vm.count("allocation")) {
    const auto& a = vm["allocation"].as<std::string>();
    if (a != "aimed" && a != "samples") return fail(fmt::format("--allocation {}: expected aimed or samples", a));
    monitor.aim = a == "aimed";
  }
  if (vm.count("end-to-end") && (monitor.until_settled || monitor.max_time_ns)) {
    return fail("--end-to-end runs one experiment for the whole run: --until-settled and --max-time do not apply");
  }
  // Nothing to aim: one line, one experiment, or no speed-up ever (nothing is estimated).
  const bool only_baselines = vm.count("fixed-speedup") && vm["fixed-speedup"].as<int>() == 0;
  if (vm.count("fixed-line") || vm.count("end-to-end") || only_baselines) monitor.aim = false;
  // Across processes the leader chooses by samples alone (docs/system.md); a
  // joining process's run is not the one whose monitor settles.
  if (vm.count("system") || vm.count("join")) monitor.aim = false;
  // The run's first process (this one, once it execs the program): the
  // control file's, and the one whose runtime may open whole-CPU events.
  setenv("COZ_RUN_PID", std::to_string(getpid()).c_str(), 1);
  if (monitor.status || monitor.aim || monitor.until_settled || monitor.max_time_ns) {
    if (start_monitor(monitor, error)) {
      setenv("COZ_CONTROL", monitor.control_path.c_str(), 1);
      if (monitor.status) setenv("COZ_STATUS", "1", 1);
    } else {
      fmt::print(stderr, "coz run: warning: {}: no status line, experiments by samples alone\n", error);
    }
  }

  if (vm.count("system")) {
    std::string path = start_system_run(vm["system"].as<std::string>(), output, error);
    if (path.empty()) return fail(error);
    setenv("COZ_SYSTEM", path.c_str(), 1);
  }

  warn_if_runtime_cannot_load(*program);
  share_messages_of_other_processes();
  std::string preload = *runtime;
  if (std::string sanitizer = sanitizer_runtime_to_preload(*program); !sanitizer.empty()) {
    preload = sanitizer + ":" + preload;
  }
  if (const char* existing = std::getenv("LD_PRELOAD"); existing && *existing) preload += std::string(":") + existing;
  setenv("LD_PRELOAD", preload.c_str(), 1);

  execv(program->c_str(), argv + separator + 1);
  const int exec_error = errno;
  return fail(fmt::format("cannot run {}: {}", *program, std::strerror(exec_error)),
              exec_error == ENOENT ? exit_not_found : exit_cannot_execute);
}

}  // namespace coz::cli
