// Accuracy: for each (program, line), the program speedup the profiler
// predicts for a 50% line speedup (`coz run --fixed-line L --fixed-speedup 50`;
// the runtime keeps ~25% 0% baselines in the same run) against the real
// speedup of the variant in which that line does half the work (plain runs,
// medians, interleaved with the base program so load changes hit both).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "sections.h"

namespace coz_bench {
namespace {

constexpr double kTargetPoints = 5.0;          // every row
constexpr double kNoEffectTargetPoints = 3.0;  // lines designed to have no effect

struct Prediction {
  double speedup = std::nan("");
  double half_width = std::nan("");  // of its 95% interval
  uint64_t sped_up_experiments = 0;  // at 50%
  uint64_t baseline_experiments = 0;
  std::string baseline;  // "line", "pooled", "none"
  std::string error;
};

Prediction predict(const Config& config, const BenchProgram& program, const std::string& line,
                   const std::string& profile_path) {
  Prediction p;
  const std::optional<json::Value> report = report_json(config, profile_path, p.error);
  if (!report) return p;
  for (const json::Value& effect : (*report)["effects"].array) {
    if (!location_matches(effect["line"].str(), line) || !point_matches(program, effect["point"].str())) continue;
    for (const json::Value& e : effect["curve"].array) {
      const double s = e["line_speedup"].num();
      if (s == 0.0) p.baseline_experiments = uint64_t(e["experiments"].num());
      if (std::fabs(s - 0.5) < 1e-9) {
        p.speedup = e["program_speedup"].num();
        p.half_width = (e["high"].num() - e["low"].num()) / 2.0;
        p.sped_up_experiments = uint64_t(e["experiments"].num());
      }
    }
    p.baseline = effect["baseline"].str();
    if (p.baseline == "pooled") {  // the point's 0% runs (all on this line in a fixed-line run)
      for (const json::Value& point : (*report)["points"].array)
        if (point["name"].str() == effect["point"].str())
          p.baseline_experiments = uint64_t(point["baseline_experiments"].num());
    }
    if (std::isnan(p.speedup)) p.error = "no 50% estimate";
    return p;
  }
  p.error = fmt::format("line not in analysis ({} experiments in profile)", (*report)["experiments"].num());
  return p;
}

}  // namespace

Section measure_accuracy(const Config& config) {
  Section section;
  section.title = "Accuracy: predicted vs real program speedup, line sped up by 50%";
  section.load_before = load_average();
  section.table.header = {"program (structure)", "line",     "predicted @50%", "actual", "error (points)",
                          "experiments 50%+0%",  "plain base / variant", "target", "result", "per process @50%"};

  const std::string scratch = config.scratch + "/accuracy";
  std::filesystem::create_directories(scratch);
  int failures = 0, no_effect_rows = 0, no_effect_failures = 0;
  for (const BenchProgram& program : suite()) {
    if (!included(config, program) || program.lines.empty()) continue;  // an overhead-only program
    const std::vector<std::string> args = program_args(program, config.run_s);
    std::vector<std::string> binaries = {program.name};
    for (const LineCase& c : program.lines) binaries.push_back(c.variant);
    std::map<std::string, std::vector<double>> values;  // binary -> metric per run
    std::map<std::string, std::string> run_errors;
    std::vector<std::string> profiles;
    std::vector<std::string> per_process_profiles;  // a --system program's, profiled without it too
    for (const LineCase& c : program.lines) {
      profiles.push_back(scratch + "/" + program.name + "." + c.marker + ".coz");
      per_process_profiles.push_back(scratch + "/" + program.name + "." + c.marker + ".per-process.coz");
      std::filesystem::remove(profiles.back());
      std::filesystem::remove(per_process_profiles.back());
    }

    for (int round = 0; round < config.truth_rounds; ++round) {
      progress(fmt::format("accuracy: {} round {}/{}", program.name, round + 1, config.truth_rounds));
      for (const std::string& binary : binaries) {
        std::string error;
        const double v = plain_metric(config, program, binary, args, error);
        if (std::isnan(v)) run_errors[binary] = error;
        else values[binary].push_back(v);
      }
      // The profiled runs are spread over the rounds too.
      if (round >= config.profile_runs) continue;
      for (size_t i = 0; i < program.lines.size(); ++i) {
        const std::string line = marked_line(program, program.lines[i].marker);
        auto profile_line = [&](const std::string& profile, bool system, const std::string& key) {
          std::vector<std::string> argv = {config.coz, "run", "-o", profile, "--fixed-line", line,
                                           "--fixed-speedup", "50", "---", config.programs + "/" + program.name};
          if (system) argv.insert(argv.begin() + 2, "--system");
          argv.insert(argv.end(), args.begin(), args.end());
          const RunResult r = run_process(argv, measured(config, 3 * config.run_s));
          if (!r.ok()) run_errors[key] = r.describe();
        };
        profile_line(profiles[i], program.system, "coz:" + program.lines[i].marker);
        if (program.system) profile_line(per_process_profiles[i], false, "coz per process:" + program.lines[i].marker);
      }
    }

    const double base = median(values[program.name]);
    for (size_t i = 0; i < program.lines.size(); ++i) {
      const LineCase& c = program.lines[i];
      const std::string line = marked_line(program, c.marker);
      const double fast = median(values[c.variant]);
      const double actual = (base - fast) / base;
      const Prediction p = predict(config, program, line, profiles[i]);
      std::string per_process = "-";
      if (program.system) {
        const Prediction pp = predict(config, program, line, per_process_profiles[i]);
        per_process = std::isnan(pp.speedup) ? "none (" + pp.error + ")"
                                             : fmt::format("{} (error {:+.1f})", percent(pp.speedup), 100.0 * (pp.speedup - actual));
      }
      const double error = 100.0 * (p.speedup - actual);
      const double target = c.no_effect ? kNoEffectTargetPoints : kTargetPoints;
      const bool pass = std::fabs(error) <= target;
      std::string result = std::isnan(error) ? "MISS" : pass_miss(pass);
      if (!p.error.empty()) result += " (" + p.error + ")";
      for (const std::string& key : {program.name, c.variant, "coz:" + c.marker}) {
        if (run_errors.count(key)) result += " (" + key + ": " + run_errors[key] + ")";
      }
      if (!pass || std::isnan(error)) ++failures;
      if (c.no_effect) {
        ++no_effect_rows;
        if (!pass || std::isnan(error)) ++no_effect_failures;
      }
      const std::string unit = program.metric == "elapsed" ? "s" : "ms";
      section.table.rows.push_back({
          fmt::format("{} ({})", program.name, program.structure),
          fmt::format("{} {}", line, c.marker),
          percent(p.speedup) + (std::isnan(p.half_width) ? "" : fmt::format(" ±{:.1f}", 100 * p.half_width)),
          percent(actual) + fmt::format(" (designed {})", percent(c.designed, 1)),
          std::isnan(error) ? "n/a" : fmt::format("{:+.1f}", error),
          fmt::format("{}+{}{}", p.sped_up_experiments, p.baseline_experiments,
                      p.baseline.empty() || p.baseline == "line" || p.baseline == "pooled" ? "" : " (baseline: " + p.baseline + ")"),
          fmt::format("{} / {} {}", fixed(base, 3), fixed(fast, 3), unit),
          fmt::format("±{:.0f}", target),
          result,
          per_process,
      });
    }
  }
  section.load_after = load_average();
  const size_t rows = section.table.rows.size();
  section.targets = {
      {"prediction error at 50% within 5 points, every row", fmt::format("{} of {} rows within", rows - failures, rows),
       pass_miss(failures == 0)},
      {"prediction error within 3 points, no-effect lines",
       fmt::format("{} of {} rows within", no_effect_rows - no_effect_failures, no_effect_rows),
       pass_miss(no_effect_failures == 0)},
  };
  section.notes = {
      fmt::format("predicted: `coz run --fixed-line FILE:LINE --fixed-speedup 50`, {} run(s) per line pooled into one "
                  "profile, analysed by `coz report --json` (program speedup at 50% against the 0% baselines of the same "
                  "profile, with the half-width of its 95% interval).",
                  config.profile_runs),
      fmt::format("actual: (base - variant) / base of the median of {} interleaved plain runs each; the variant "
                  "really does half the work on that line. Latency is mean request latency; the others run time as "
                  "the program reports it. Each run is scaled to ~{:.1f} s plain.",
                  config.truth_rounds, config.run_s),
      "target: |error| <= 5 points for every row, <= 3 points for lines designed to have no effect.",
      "per process: the programs of several processes (proc_*) are profiled with `coz run --system` (one experiment "
      "across their processes); this column is the same profile taken without it, each process experimenting on its own.",
      fmt::format("{} of {} rows missed.", failures, section.table.rows.size()),
  };
  return section;
}

}  // namespace coz_bench
