#include "harness.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "sys.h"

extern char** environ;

namespace coz_itest {

namespace {

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Exact name, or a path ending in "/" + suffix: "main.cpp:4" must not match "domain.cpp:4".
bool name_matches(const std::string& name, const std::string& suffix) {
  if (name == suffix) return true;
  return ends_with(name, suffix) && name.size() > suffix.size() && name[name.size() - suffix.size() - 1] == '/';
}

bool is_marker_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Thrown by the spawn set-up helpers below; turned into a failed ProcessResult.
struct SpawnError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(int rc, const char* what) {
  if (rc != 0) throw SpawnError(std::string(what) + ": " + std::strerror(rc));
}

}  // namespace

std::string describe(const ProcessResult& result) {
  std::ostringstream text;
  if (result.timed_out) {
    text << "timed out after " << result.seconds << " s and was killed";
  } else if (result.exited) {
    text << "exit status " << result.exit_status;
  } else {
    text << "killed by signal " << result.term_signal << " (" << strsignal(result.term_signal) << ")";
  }
  text << " after " << result.seconds << " s; stderr:\n" << result.err;
  return text.str();
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/coz-itest-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  path_ = pattern;
}

TempDir::~TempDir() {
  if (keep_) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void ScratchTest::TearDown() {
  if (HasFailure()) {
    scratch_.keep();
    std::cerr << "[ kept     ] profiles and output in " << scratch_.path() << "\n";
  }
}

ProcessResult run_process(const std::vector<std::string>& argv, const TempDir& scratch, std::chrono::seconds timeout) {
  static int run_counter = 0;
  const std::string tag = std::to_string(++run_counter);
  const std::string out_path = scratch.file("stdout." + tag);
  const std::string err_path = scratch.file("stderr." + tag);

  ProcessResult result;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  pid_t pid = -1;
  try {
    check(posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0), "addopen stdin");
    check(posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                           0644),
          "addopen stdout");
    check(posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                           0644),
          "addopen stderr");
    // Nothing else of the test runner's: a program's descriptors start at 3,
    // as they do from a shell (a test that lowers the descriptor limit counts on it).
    check(posix_spawn_file_actions_addclosefrom_np(&actions, 3), "addclosefrom");
    // Own process group, so a timeout kills the program as well as coz;
    // default mask and dispositions whatever the test runner set.
    sigset_t empty;
    sigemptyset(&empty);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    check(posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF),
          "setflags");
    check(posix_spawnattr_setpgroup(&attr, 0), "setpgroup");
    check(posix_spawnattr_setsigmask(&attr, &empty), "setsigmask");
    check(posix_spawnattr_setsigdefault(&attr, &defaults), "setsigdefault");
    check(posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ), ("posix_spawn " + argv[0]).c_str());
  } catch (const SpawnError& e) {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    result.err = std::string("harness: ") + e.what() + "\n";
    return result;
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);

  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      result.err = std::string("harness: waitpid: ") + std::strerror(errno) + "\n";
      return result;
    }
    if (elapsed() > static_cast<double>(timeout.count())) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Whatever the profiled program left behind in its group (e.g. a forked helper).
  kill(-pid, SIGKILL);

  result.seconds = elapsed();
  result.exited = !result.timed_out && WIFEXITED(status);
  if (result.exited) result.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  result.out = read_whole_file(out_path);
  result.err = read_whole_file(err_path);
  return result;
}

ProcessResult coz_run(const std::string& profile_path, const std::vector<std::string>& options,
                      const std::vector<std::string>& program_and_args, const TempDir& scratch) {
  std::vector<std::string> argv = {COZ_EXE, "run", "-o", profile_path};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("---");
  argv.insert(argv.end(), program_and_args.begin(), program_and_args.end());
  return run_process(argv, scratch);
}

std::optional<analysis::Profile> read_profile(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  analysis::Profile profile;
  if (!analysis::read_profile_file(path, profile)) return std::nullopt;
  return profile;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  for (const std::string& line : lines_of(text)) {
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

size_t count_lines_containing(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (const std::string& line : lines_of(text)) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

int marker_line(const std::string& source_file, const std::string& marker) {
  std::ifstream in(source_file);
  const std::string needle = "// @line:" + marker;
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      const size_t after = at + needle.size();
      if (after == text.size() || !is_marker_char(text[after])) return number;
    }
  }
  return 0;
}

std::string program_source(const std::string& relative_path) {
  return std::string(COZ_TEST_PROGRAMS_SOURCE_DIR) + "/" + relative_path;
}

std::string marked_line(const std::string& file, const std::string& marker) {
  const int line = marker_line(program_source(file), marker);
  if (line == 0) throw std::runtime_error("no // @line:" + marker + " in " + program_source(file));
  return std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
}

bool location_matches(const std::string& location, const std::string& suffix) {
  if (name_matches(location, suffix)) return true;
  size_t open = location.rfind(" [");
  return open != std::string::npos && location.back() == ']' && name_matches(location.substr(0, open), suffix);
}

const analysis::LineEffect* find_effect(const analysis::Analysis& result, const std::string& line_suffix,
                                        const std::string& point_suffix) {
  for (const analysis::LineEffect& effect : result.effects) {
    if (location_matches(effect.line, line_suffix) && name_matches(effect.point, point_suffix)) return &effect;
  }
  return nullptr;
}

const analysis::SpeedupEstimate* estimate_at(const analysis::LineEffect& effect, double line_speedup) {
  for (const analysis::SpeedupEstimate& estimate : effect.curve) {
    if (std::fabs(estimate.line_speedup - line_speedup) < 1e-3) return &estimate;
  }
  return nullptr;
}

bool kernel_sampling_allowed(std::string& why_not) {
  if (geteuid() == 0) return true;
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int paranoid = 2;
  if (!(in >> paranoid)) {
    why_not = "cannot read /proc/sys/kernel/perf_event_paranoid";
    return false;
  }
  if (paranoid <= 1) return true;
  why_not = "kernel sampling not allowed: not root and perf_event_paranoid is " + std::to_string(paranoid) + " (> 1)";
  return false;
}

uint64_t samples_on_line(const analysis::Profile& profile, const std::string& line_suffix) {
  uint64_t total = 0;
  for (const auto& [location, s] : profile.samples) {
    if (location_matches(location, line_suffix)) total += s.count;
  }
  return total;
}

uint64_t samples_in_file(const analysis::Profile& profile, const std::string& file_suffix) {
  uint64_t total = 0;
  for (const auto& [location, s] : profile.samples) {
    const size_t colon = location.rfind(':');
    if (colon != std::string::npos && name_matches(location.substr(0, colon), file_suffix)) total += s.count;
  }
  return total;
}

std::string describe_experiments(const analysis::Profile& profile) {
  // line -> speedup -> count
  std::map<std::string, std::map<double, int>> counts;
  for (const analysis::Experiment& e : profile.experiments) ++counts[e.selected][e.speedup];
  std::ostringstream text;
  text << profile.experiments.size() << " experiments";
  for (const auto& [line, by_speedup] : counts) {
    text << "\n  " << line << ":";
    for (const auto& [speedup, n] : by_speedup) text << " " << n << " at " << speedup << ";";
  }
  return text.str();
}

std::string describe(const analysis::Analysis& result, size_t max_effects) {
  std::ostringstream text;
  text << result.experiments << " experiments, " << result.total_samples << " samples, "
       << result.effects.size() << " (line, point) effects; ranked:";
  for (size_t i = 0; i < result.effects.size() && i < max_effects; ++i) {
    const analysis::LineEffect& e = result.effects[i];
    text << "\n  " << e.line << " -> " << e.point << ": impact " << e.impact << ", " << e.experiments
         << " experiments, " << e.samples << " samples; curve:";
    for (const analysis::SpeedupEstimate& s : e.curve) {
      text << " " << s.line_speedup << "->" << s.program_speedup << " (n=" << s.experiments << ")";
    }
  }
  return text.str();
}

uint64_t scaled(uint64_t n) {
  const char* scale = std::getenv("COZ_ITEST_SCALE");
  if (scale == nullptr || *scale == '\0') return n;
  const double factor = std::strtod(scale, nullptr);
  return factor > 0 ? static_cast<uint64_t>(static_cast<double>(n) * factor) : n;
}

namespace {

/// The machine's busy time since boot, in ns, summed over its CPUs; 0 if unknown.
uint64_t machine_busy_ns() {
  coz::sys::MachineCpuTimes times;
  return coz::sys::machine_cpu_times(times) ? times.busy() : 0;
}

/// CPU time of this process and of its waited-for children, in ns.
uint64_t own_cpu_ns() {
  auto ns = [](const rusage& u) {
    auto of = [](const timeval& tv) {
      return static_cast<uint64_t>(tv.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(tv.tv_usec) * 1'000u;
    };
    return of(u.ru_utime) + of(u.ru_stime);
  };
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return ns(self) + ns(children);
}

}  // namespace

OutsideLoad::OutsideLoad()
    : busy_ns_(machine_busy_ns()), own_ns_(own_cpu_ns()), wall_ns_(coz::sys::monotonic_ns()) {}

double OutsideLoad::share() const {
  const uint64_t busy = machine_busy_ns(), own = own_cpu_ns(), wall = coz::sys::monotonic_ns();
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (busy_ns_ == 0 || busy < busy_ns_ || wall <= wall_ns_ || cpus <= 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  const double outside = static_cast<double>(busy - busy_ns_) - static_cast<double>(own - own_ns_);
  return std::max(0.0, outside) / (static_cast<double>(wall - wall_ns_) * static_cast<double>(cpus));
}

namespace {

FixedLineRun run_fixed_line_once(const std::vector<std::string>& program_and_args, const std::string& line_suffix,
                                 int speedup_percent, const std::string& point_suffix, const TempDir& scratch,
                                 const std::vector<std::string>& extra_options, uint64_t min_experiments) {
  FixedLineRun run;
  const std::string profile_path = scratch.file("fixed-" + std::to_string(speedup_percent) + ".coz");
  std::remove(profile_path.c_str());  // an earlier attempt's
  const double speedup = speedup_percent / 100.0;

  auto profile_once = [&](int percent) -> bool {
    std::vector<std::string> options = {"--fixed-line", line_suffix, "--fixed-speedup", std::to_string(percent)};
    options.insert(options.end(), extra_options.begin(), extra_options.end());
    const ProcessResult& process = run.process = coz_run(profile_path, options, program_and_args, scratch);
    if (!process.exited || process.exit_status != 0) {
      run.error = "coz run --fixed-line " + line_suffix + " --fixed-speedup " + std::to_string(percent) +
                  " failed: " + describe(process);
      return false;
    }
    std::optional<analysis::Profile> profile = read_profile(profile_path);
    if (!profile) {
      run.error = "no readable profile at " + profile_path + " after: " + describe(process);
      return false;
    }
    run.profile = std::move(*profile);
    return true;
  };
  auto baselines = [&] {
    uint64_t n = 0;
    for (const analysis::Experiment& e : run.profile.experiments) n += e.speedup == 0.0 ? 1 : 0;
    return n;
  };

  const OutsideLoad outside;
  if (!profile_once(speedup_percent)) return run;
  if (speedup_percent != 0 && baselines() < min_experiments && !profile_once(0)) return run;
  run.outside_share = outside.share();

  for (const analysis::Experiment& e : run.profile.experiments) {
    if (!location_matches(e.selected, line_suffix)) {
      run.error = "--fixed-line " + line_suffix + " not honoured: an experiment selected " + e.selected + "\n" +
                  describe_experiments(run.profile);
      return run;
    }
  }
  run.result = analysis::analyze(run.profile);
  const analysis::LineEffect* effect = find_effect(run.result, line_suffix, point_suffix);
  if (effect == nullptr) {
    run.error = "no effect of " + line_suffix + " on point " + point_suffix + " in the analysis\n" +
                describe_experiments(run.profile) + "\n" + describe(run.result);
    return run;
  }
  run.effect = *effect;
  const analysis::SpeedupEstimate* baseline = estimate_at(*effect, 0.0);
  const analysis::SpeedupEstimate* sped_up = estimate_at(*effect, speedup);
  if (baseline == nullptr || sped_up == nullptr || baseline->experiments < min_experiments ||
      sped_up->experiments < min_experiments) {
    run.error = "too few experiments (want " + std::to_string(min_experiments) + " at 0% and at " +
                std::to_string(speedup_percent) + "%)\n" + describe_experiments(run.profile) + "\n" +
                describe(run.result);
    return run;
  }
  run.baseline = *baseline;
  run.sped_up = *sped_up;
  return run;
}

}  // namespace

FixedLineRun run_fixed_line(const std::vector<std::string>& program_and_args, const std::string& line_suffix,
                            int speedup_percent, const std::string& point_suffix, const TempDir& scratch,
                            const std::vector<std::string>& extra_options, uint64_t min_experiments) {
  FixedLineRun best;
  for (int attempt = 1; attempt <= max_profiles_per_run; ++attempt) {
    FixedLineRun run = run_fixed_line_once(program_and_args, line_suffix, speedup_percent, point_suffix, scratch,
                                           extra_options, min_experiments);
    if (!run.error.empty()) return run;
    const double steal = run.profile.sampling.steal_share();
    const double outside = std::isnan(run.outside_share) ? 0.0 : run.outside_share;
    auto taken = [](const FixedLineRun& r) {
      return r.profile.sampling.steal_share() + (std::isnan(r.outside_share) ? 0.0 : r.outside_share);
    };
    const bool calm = steal < max_steal_share && outside < max_outside_share;
    std::cerr << "[ machine  ] during the run: steal " << 100 * steal << "%, other processes " << 100 * outside
              << "% of the CPUs' time\n";
    if (attempt == 1 || taken(run) < taken(best)) best = std::move(run);
    if (calm) break;
    const char* next = attempt < max_profiles_per_run ? ": profiling again\n" : ": judging the run they took least from\n";
    if (steal >= max_steal_share) {
      std::cerr << "[ steal    ] a hypervisor took " << 100 * steal << "% of the machine's CPU time during that run"
                << next;
    } else {
      std::cerr << "[ outside  ] other processes kept " << 100 * outside
                << "% of the machine's CPU time busy during that run" << next;
    }
  }
  return best;
}

void again_under_steal(const std::string& what, const std::function<AttemptVerdict(int)>& attempt) {
  for (int n = 1; n <= max_profiles_per_run; ++n) {
    const AttemptVerdict verdict = attempt(n);
    if (verdict.holds || verdict.steal_share < max_steal_share || n == max_profiles_per_run) return;
    std::cerr << "[ steal    ] " << what << ": failed while a hypervisor took " << 100 * verdict.steal_share
              << "% of the machine's CPU time: running again\n";
  }
}

// ---- reading profiles line by line ----------------------------------------------

namespace {

// Every record type the format defines (docs/profile-format.md), ours and Coz's.
const std::set<std::string> kKnownRecords = {"startup", "process",  "experiment", "throughput-point",
                                             "progress-point", "latency-point", "samples", "runtime",
                                             "stack", "blocked", "sampling", "experiments-stopped"};

}  // namespace

std::vector<const analysis::RecordLine*> RawProfile::of(const std::string& type) const {
  std::vector<const analysis::RecordLine*> out;
  for (const analysis::RecordLine& r : records) {
    if (r.type == type) out.push_back(&r);
  }
  return out;
}

std::vector<long> RawProfile::process_pids() const {
  std::vector<long> pids;
  for (const analysis::RecordLine* r : of("process")) {
    const std::string* pid = r->find("pid");
    pids.push_back(pid ? std::atol(pid->c_str()) : -1);
  }
  return pids;
}

std::map<long, size_t> RawProfile::experiments_by_pid() const {
  std::map<long, size_t> out;
  for (const analysis::RecordLine* r : of("experiment")) {
    const std::string* pid = r->find("pid");
    ++out[pid ? std::atol(pid->c_str()) : -1];
  }
  return out;
}

RawProfile read_raw(const std::string& path) {
  RawProfile raw;
  std::ifstream in(path, std::ios::binary);
  if (!in) return raw;
  raw.exists = true;
  std::ostringstream text;
  text << in.rdbuf();
  raw.text = text.str();
  std::istringstream lines(raw.text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    analysis::RecordLine record;
    std::string error;
    if (!analysis::split_record_line(line, record, error)) {
      raw.problems.push_back("line " + std::to_string(number) + " (" + error + "): " + line.substr(0, 200));
    } else if (record.cut) {
      continue;  // what a failed write cut short, ended by the next write: not a record, nor a broken one
    } else if (!kKnownRecords.count(record.type)) {
      raw.problems.push_back("line " + std::to_string(number) + " unknown record: " + line.substr(0, 200));
    } else {
      raw.records.push_back(std::move(record));
    }
  }
  if (!raw.text.empty() && raw.text.back() != '\n') raw.problems.push_back("the file ends in a partial line");
  return raw;
}

std::string whole_records_problem(const std::string& path, const RawProfile& raw) {
  if (!raw.exists) return "no profile at " + path;
  std::ostringstream out;
  for (const std::string& p : raw.problems) out << "  " << p << "\n";
  const std::optional<analysis::Profile> profile = read_profile(path);
  if (!profile) out << "  the profile reader cannot open it\n";
  else
    for (const std::string& w : profile->warnings) out << "  reader: " << w << "\n";
  const std::string problems = out.str();
  return problems.empty() ? "" : "the profile has broken records:\n" + problems;
}

long long number_after(const std::string& text, const std::string& key) {
  const std::string needle = key + "=";
  size_t at = text.find(needle);
  while (at != std::string::npos && at > 0 && text[at - 1] != ' ' && text[at - 1] != '\n') {
    at = text.find(needle, at + 1);
  }
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + needle.size());
}

std::string read_text(const std::string& path) { return read_whole_file(path); }

}  // namespace coz_itest
