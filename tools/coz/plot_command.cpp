// `coz plot`: copies the viewer page (coz-viewer.html, built from viewer/)
// with the profile texts embedded, so the report opens offline anywhere and the
// viewer analyses the raw records itself (the same formulas as `coz report`).
#include "plot_command.h"

#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <boost/program_options.hpp>

#include "cli_conventions.h"
#include "json_string.h"
#include "path_search.h"
#include "profile_args.h"
#include <fmt/format.h>

extern char** environ;

namespace coz {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

// The viewer's page holds this marker exactly once (viewer/build.mjs checks it).
constexpr std::string_view embed_marker = "<!--COZ-EMBEDDED-PROFILES-->";
constexpr const char* viewer_file = "coz-viewer.html";
// Where `cmake --install` puts the page, relative to the installed `coz` (tools/CMakeLists.txt).
constexpr const char* installed_viewer_relative = COZ_INSTALLED_VIEWER_RELATIVE;
// Tried in this order by --open.
constexpr const char* browsers[] = {"xdg-open", "sensible-browser", "chromium"};

struct PlotArgs {
  std::vector<std::string> files;
  std::string output;
  bool open = false;
  bool help = false;
  bool version = false;
};

int fail(const std::string& message) {
  std::cerr << "coz plot: " << message << '\n';
  return cli::exit_bad_input;
}

po::options_description visible_options(PlotArgs& args) {
  po::options_description opts("Options");
  opts.add_options()
      ("output,o", po::value(&args.output)->value_name("FILE"),
       "the HTML file to write (default: the first profile's name with .html)")
      ("open", po::bool_switch(&args.open), "open the page in a browser when one is available")
      ("help,h", po::bool_switch(&args.help), "show this help")
      ("version,V", po::bool_switch(&args.version), "print coz's version and license");
  return opts;
}

bool parse(int argc, char** argv, PlotArgs& args, const po::options_description& visible, std::string& error) {
  if (!cli::parse_with_profiles(argc, argv, visible, args.files, error)) return false;
  if (args.files.empty()) args.files.push_back("profile.coz");
  if (args.output.empty()) {
    fs::path first(args.files.front());
    args.output = first.replace_extension(".html").string();
  }
  return true;
}

std::string directory_of_self() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  return fs::path(std::string(self, static_cast<size_t>(n))).parent_path().string();
}

/// coz-viewer.html next to this executable (build tree), or the installed one.
std::optional<std::string> find_viewer() {
  std::string dir = directory_of_self();
  if (dir.empty()) return std::nullopt;
  for (const std::string& candidate : {dir + "/" + viewer_file, dir + "/" + installed_viewer_relative}) {
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return std::nullopt;
}

bool read_file(const std::string& path, std::string& out, std::string& error) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return error = fmt::format("cannot read {}: Is a directory", path), false;
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("cannot read {}: {}", path, errno != 0 ? std::strerror(errno) : "unknown error");
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return error = fmt::format("cannot read {}: read error", path), false;
  out = std::move(ss).str();
  return true;
}

// Written next to the target and renamed over it, so a failed write never
// leaves half a report where a good one was. The temporary file is a new
// one of a name nobody can guess (mkstemp: O_CREAT | O_EXCL): at a fixed
// name, a symbolic link planted in a shared directory would have us
// truncate and write any file. The rename replaces a link at `path` itself,
// never what it points to.
bool write_file(const std::string& path, const std::string& data, std::string& error) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return error = fmt::format("cannot write {}: Is a directory", path), false;
  std::string tmp = path + ".XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return error = fmt::format("cannot write {}: {}", path, std::strerror(errno)), false;
  // mkstemp makes it 0600; a report is as readable as any file the user creates.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = fmt::format("cannot write {}: {}", path, n < 0 ? std::strerror(errno) : "short write");
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

/// Starts a browser on `file` in its own session, output discarded, not waited for.
void open_in_browser(const std::string& file) {
  if (std::getenv("DISPLAY") == nullptr && std::getenv("WAYLAND_DISPLAY") == nullptr) {
    std::cerr << fmt::format("coz plot: no display to open a browser on; open {} in a browser\n", file);
    return;
  }
  for (const char* name : browsers) {
    std::optional<std::string> browser = cli::find_in_path(name);
    if (!browser) continue;
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    std::string arg0 = name;
    std::string arg1 = file;
    char* child_argv[] = {arg0.data(), arg1.data(), nullptr};
    pid_t pid = 0;
    int rc = posix_spawn(&pid, browser->c_str(), &actions, &attr, child_argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc == 0) return;
  }
  std::cerr << fmt::format("coz plot: no browser found (tried xdg-open, sensible-browser, chromium); open {} in a browser\n",
                           file);
}

}  // namespace

std::string html_safe_json_string(std::string_view bytes) {
  return json_string(bytes, JsonEscapes::html_safe);
}

bool embed_profiles(const std::string& viewer_html, const std::vector<EmbeddedProfile>& profiles,
                    std::string& out) {
  size_t at = viewer_html.find(embed_marker);
  if (at == std::string::npos) return false;
  std::string json = "[";
  for (size_t i = 0; i < profiles.size(); ++i) {
    if (i > 0) json += ",\n";
    json += "{\"name\": " + html_safe_json_string(profiles[i].name) +
            ", \"text\": " + html_safe_json_string(profiles[i].text) + "}";
  }
  json += "]";
  out.clear();
  out.reserve(viewer_html.size() + json.size() + 100);
  out.append(viewer_html, 0, at);
  out += "<script type=\"application/json\" id=\"coz-embedded\">";
  out += json;
  out += "</script>";
  out.append(viewer_html, at + embed_marker.size());
  return true;
}

int plot_main(int argc, char** argv) {
  PlotArgs args;
  po::options_description visible = visible_options(args);
  std::string error;
  if (!parse(argc, argv, args, visible, error)) return fail(error + " (see coz plot --help)");
  if (args.help) {
    std::cout << "Usage: coz plot [options] [PROFILE...]\n"
                 "Writes one self-contained HTML page (the coz viewer with the profiles embedded)\n"
                 "and prints its path. PROFILE defaults to profile.coz; several are shown merged.\n\n"
              << cli::format_options(visible);
    return 0;
  }
  if (args.version) {
    std::cout << cli::version_text();
    return 0;
  }

  std::vector<EmbeddedProfile> profiles;
  for (const std::string& file : args.files) {
    EmbeddedProfile p;
    p.name = fs::path(file).filename().string();
    if (!read_file(file, p.text, error)) return fail(error);
    profiles.push_back(std::move(p));
  }

  std::optional<std::string> viewer = find_viewer();
  if (!viewer) {
    return fail(fmt::format("the viewer page is missing ({} next to coz or at {} from it): build coz with "
                            "-DCOZ_BUILD_VIEWER=ON (needs node and npm), or install a coz package, which has it",
                            viewer_file, installed_viewer_relative));
  }
  std::string page;
  if (!read_file(*viewer, page, error)) return fail(error);
  std::string report;
  if (!embed_profiles(page, profiles, report)) return fail(fmt::format("{} is not a coz viewer page", *viewer));
  if (!write_file(args.output, report, error)) return fail(error);

  std::cout << args.output << '\n';
  std::cout.flush();
  if (args.open) open_in_browser(fs::absolute(args.output).string());
  return 0;
}

}  // namespace coz
