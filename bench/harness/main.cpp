// coz_bench: runs the accuracy, overhead and start-up measurements, prints
// each table as it is done and writes them all to RESULTS.md. Started by
// bench/run, which builds everything first; see bench/README.md.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sections.h"

namespace coz_bench {

void progress(const std::string& message) { std::fprintf(stderr, "coz_bench: %s\n", message.c_str()); }

namespace {

const char* const kUsage =
    "usage: coz_bench --coz PATH --programs DIR [options]\n"
    "  --coz PATH             our coz (build path)\n"
    "  --coz-profiler PATH    Debian's coz (default /usr/bin/coz if present; 'none' to skip)\n"
    "  --programs DIR         the built bench programs\n"
    "  --bigdwarf PATH        the generated start-up program\n"
    "  --scratch DIR          profiles and working directories (default /tmp/coz_bench)\n"
    "  --out FILE             write the results here (Markdown)\n"
    "  --quick                short runs, fewer rounds (smoke test)\n"
    "  --sections LIST        accuracy,overhead,startup,unwind,call_cost,time_to_answer,space (default all)\n"
    "  --space-programs DIR   the built space_* programs (bench/space)\n"
    "  --space-seed N         the generated programs' seed (default: a fresh one, printed)\n"
    "  --space-count N        generated programs (default 60; --quick: 3)\n"
    "  --only LIST            only these programs (comma-separated)\n"
    "  --run-seconds S        plain run time each program is scaled to\n"
    "  --truth-rounds N  --profile-runs N  --overhead-rounds N  --startup-rounds N\n"
    "  --answer-runs N        time to answer: runs per program and profiler\n"
    "  --answer-cap S         time to answer: a run not right by S seconds is ended\n"
    "  --no-nice              do not run measured processes at nice -20 (the default as root)\n"
    "  --command TEXT         how the run was started, for RESULTS.md\n";

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "coz_bench: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

}  // namespace
}  // namespace coz_bench

int main(int argc, char** argv) {
  using namespace coz_bench;
  Config config;
  config.scratch = "/tmp/coz_bench";
  config.nice = geteuid() == 0 ? -20 : 0;
  std::string out_path, command = "coz_bench";
  std::string coz_profiler = std::filesystem::exists("/usr/bin/coz") ? "/usr/bin/coz" : "";
  std::vector<std::string> sections = {"accuracy", "overhead", "startup", "unwind", "call_cost", "time_to_answer", "space"};
  double run_s = -1;
  int truth = -1, profile_runs = -1, overhead_rounds = -1, startup_rounds = -1, answer_runs = -1;
  double answer_cap = -1;

  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--coz") config.coz = value();
    else if (a == "--coz-profiler") coz_profiler = value();
    else if (a == "--programs") config.programs = value();
    else if (a == "--bigdwarf") config.bigdwarf = value();
    else if (a == "--space-programs") config.space_programs = value();
    else if (a == "--space-seed") config.space_seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--space-count") config.space_count = std::atoi(value().c_str());
    else if (a == "--scratch") config.scratch = value();
    else if (a == "--out") out_path = value();
    else if (a == "--quick") config.quick = true;
    else if (a == "--sections") sections = split(value());
    else if (a == "--only") config.only = split(value());
    else if (a == "--run-seconds") run_s = std::atof(value().c_str());
    else if (a == "--truth-rounds") truth = std::atoi(value().c_str());
    else if (a == "--profile-runs") profile_runs = std::atoi(value().c_str());
    else if (a == "--overhead-rounds") overhead_rounds = std::atoi(value().c_str());
    else if (a == "--startup-rounds") startup_rounds = std::atoi(value().c_str());
    else if (a == "--answer-runs") answer_runs = std::atoi(value().c_str());
    else if (a == "--answer-cap") answer_cap = std::atof(value().c_str());
    else if (a == "--no-nice") config.nice = 0;
    else if (a == "--command") command = value();
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else usage_error("unknown argument " + a);
  }
  if (config.coz.empty() || config.programs.empty()) usage_error("--coz and --programs are required");
  config.coz_profiler = coz_profiler == "none" ? "" : coz_profiler;
  // Measured processes run in scratch directories: every path absolute.
  for (std::string* path : {&config.coz, &config.coz_profiler, &config.programs, &config.bigdwarf, &config.space_programs,
                            &config.scratch})
    if (!path->empty()) *path = std::filesystem::absolute(*path).lexically_normal().string();

  // Quick: a smoke test in a few minutes; the figures are noisy.
  if (config.quick) {
    config.run_s = 1.5;
    config.overhead_run_s = 1.5;
    config.truth_rounds = 2;
    config.profile_runs = 1;
    config.overhead_rounds = 1;
    config.startup_rounds = 3;
    config.answer_runs = 2;
    config.answer_cap_s = 20;
    config.answer_truth_rounds = 2;
  } else {
    config.run_s = 4.0;
    config.overhead_run_s = 3.0;
    config.truth_rounds = 3;
    config.profile_runs = 2;
    config.overhead_rounds = 3;
    config.startup_rounds = 5;
    config.answer_runs = 5;
    config.answer_cap_s = 60;
    config.answer_truth_rounds = 9;
  }
  if (run_s > 0) config.run_s = config.overhead_run_s = run_s;
  if (truth > 0) config.truth_rounds = config.answer_truth_rounds = truth;
  if (profile_runs > 0) config.profile_runs = std::min(profile_runs, config.truth_rounds);
  if (overhead_rounds > 0) config.overhead_rounds = overhead_rounds;
  if (startup_rounds > 0) config.startup_rounds = startup_rounds;
  if (answer_runs > 0) config.answer_runs = answer_runs;
  if (answer_cap > 0) config.answer_cap_s = answer_cap;
  config.profile_runs = std::min(config.profile_runs, config.truth_rounds);
  std::filesystem::create_directories(config.scratch);

  std::string results = "# Benchmark results (bench/)\n\n";
  results += machine_description(config.source_dir);
  results += fmt::format("- command: `{}`{}\n", command, config.quick ? " (quick mode: short runs, few rounds, noisy)" : "");
  results += fmt::format("- measured processes at nice {}{}\n", config.nice,
                         config.nice < 0 ? " (shields them from ordinary-priority jobs sharing the machine)" : "");
  results += fmt::format("- coz-profiler: {}\n\n",
                         config.coz_profiler.empty() ? std::string("not installed / skipped")
                                                     : config.coz_profiler + " (" +
                                                           shell_output("dpkg-query -W -f='${Version}' coz-profiler 2>/dev/null") + ")");
  std::cout << results << std::flush;

  Table targets;
  targets.header = {"target", "measured", "result"};
  std::string body;
  for (const std::string& name : sections) {
    Section s;
    if (name == "accuracy") s = measure_accuracy(config);
    else if (name == "overhead") s = measure_overhead(config);
    else if (name == "startup") s = measure_startup(config);
    else if (name == "unwind") s = measure_unwind(config);
    else if (name == "call_cost") s = measure_call_cost(config);
    else if (name == "time_to_answer") s = measure_time_to_answer(config);
    else if (name == "space") s = measure_space(config);
    else usage_error("unknown section " + name);
    const std::string text = s.render();
    std::cout << text << std::flush;
    body += text;
    targets.rows.insert(targets.rows.end(), s.targets.begin(), s.targets.end());
  }
  const std::string summary = "## Targets\n\n" + targets.render() + "\n";
  std::cout << summary << std::flush;
  results += summary + body;
  results += fmt::format("Finished at load average {}.\n", load_average());
  if (!out_path.empty()) {
    std::ofstream out(out_path);
    out << results;
    if (!out) {
      std::fprintf(stderr, "coz_bench: cannot write %s\n", out_path.c_str());
      return 1;
    }
    progress("wrote " + out_path);
  }
  return 0;
}
