// Time to answer (issue #16): how long a user waits, from starting the
// program under a profiler, until the profile gives the right answer. For each
// program with known truth, each profiler configuration runs the program
// (long enough never to end first) while the harness watches the profile
// grow; the run's figure is the first moment at which the analysis of what
// was written so far is correct:
//   - the point's top-ranked line is the bottleneck (a line as critical as it
//     also counts), labelled "speeds up" (its adjusted interval excludes 0);
//   - its estimate at 50% (a line through the curve's points from 35% to
//     65%, weighted by experiments) is within 5 points of the real speedup,
//     measured here on the variant in which that line does half the work;
//   - every line designed to have no effect is labelled "no effect".
// The same analysis (`coz report --json`) judges every configuration, ours
// and coz-profiler's, so only the experiments differ.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>

#include "sections.h"

namespace coz_bench {
namespace {

constexpr double kEstimateTargetPoints = 5.0;
constexpr double kCheckInterval = 1.0;  // seconds between analyses while a run goes on
constexpr double kAimedVsCozTarget = 0.25;
constexpr double kAimedVsBeforeTarget = 0.5;

// Lines as critical as the bottleneck: any of them ranked first is right.
const std::map<std::string, std::vector<std::string>> kAlsoFirst = {
    {"hot_no_effect", {"stage_a", "stage_c"}},  // three equal stages
};

struct Truth {
  std::string bottleneck_marker;
  std::vector<std::string> first;      // FILE:LINE of the lines that may rank first
  std::vector<std::string> no_effect;  // FILE:LINE of the lines designed to have no effect
  double actual = std::nan("");        // real program speedup when the bottleneck does half the work
};

struct Verdict {
  bool correct = false;
  std::string why;  // what is still wrong
};

bool matches_any(const std::string& location, const std::vector<std::string>& lines) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return location_matches(location, l); });
}

std::string file_line(const std::string& location) { return location.substr(location.rfind('/') + 1); }

// The curve's estimate at 50%: a straight line fitted (weighted by
// experiments) through its points at line speedups 35%-65%, read at 50%. A
// plain weighted mean of those points read 4-6 points low whenever a run's
// first experiments there happened to fall below 50% (lock_contention).
double estimate_at_half(const json::Value& effect) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const json::Value& point : effect["curve"].array) {
    const double s = point["line_speedup"].num(), w = point["experiments"].num(), v = point["program_speedup"].num();
    if (s < 0.35 - 1e-9 || s > 0.65 + 1e-9 || !(w > 0) || std::isnan(v)) continue;
    n += w;
    sx += w * s;
    sy += w * v;
    sxx += w * s * s;
    sxy += w * s * v;
  }
  if (!(n > 0)) return std::nan("");
  const double mean_s = sx / n, mean_v = sy / n, var_s = sxx / n - mean_s * mean_s;
  if (var_s < 1e-6) return mean_v;  // one speedup only
  return mean_v + (sxy / n - mean_s * mean_v) / var_s * (0.5 - mean_s);
}

Verdict judge(const json::Value& report, const BenchProgram& program, const Truth& truth) {
  const json::Value* top = nullptr;
  std::map<std::string, std::string> no_effect_labels;
  for (const json::Value& effect : report["effects"].array) {
    if (!point_matches(program, effect["point"].str())) continue;
    if (!top) top = &effect;
    for (const std::string& line : truth.no_effect)
      if (location_matches(effect["line"].str(), line)) no_effect_labels[line] = effect["label"].str();
  }
  if (!top) return {false, "no line yet"};
  const std::string top_line = file_line((*top)["line"].str());
  if (!matches_any((*top)["line"].str(), truth.first)) return {false, top_line + " first"};
  if ((*top)["label"].str() != "positive") return {false, top_line + " " + (*top)["label"].str()};
  const double estimate = estimate_at_half(*top);
  if (std::isnan(estimate)) return {false, top_line + " not measured near 50%"};
  if (std::fabs(estimate - truth.actual) * 100 > kEstimateTargetPoints)
    return {false, fmt::format("{} at {} (real {})", top_line, percent(estimate), percent(truth.actual))};
  for (const std::string& line : truth.no_effect) {
    const auto label = no_effect_labels.find(line);
    if (label == no_effect_labels.end()) return {false, line + " unmeasured"};
    if (label->second != "no-effect") return {false, line + " " + label->second};
  }
  return {true, ""};
}

// The analysis of the first `size` bytes of a growing profile, cut before
// its last experiment record (the point records that belong to it may still
// be on their way).
Verdict judge_prefix(const Config& config, const BenchProgram& program, const Truth& truth,
                     const std::string& profile, uintmax_t size) {
  std::ifstream in(profile, std::ios::binary);
  std::string text(size, '\0');
  if (!in.read(text.data(), std::streamsize(size))) return {false, "profile unreadable"};
  const size_t last_experiment = text.rfind("\nexperiment\t");
  text.resize(last_experiment == std::string::npos ? 0 : last_experiment + 1);
  const std::string prefix = profile + ".prefix";
  std::ofstream(prefix, std::ios::binary | std::ios::trunc) << text;
  std::string error;
  const std::optional<json::Value> report = report_json(config, prefix, error, 19);
  if (!report) return {false, "report failed"};
  return judge(*report, program, truth);
}

uintmax_t file_size(const std::string& path) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  return error ? 0 : size;
}

struct Attempt {
  double seconds = std::numeric_limits<double>::infinity();  // to the first correct answer; inf: not within the cap
  std::string why;    // what was still wrong at the end, when never correct
  std::string error;  // the run failed
};

// One run of `argv` (writing `profile`), watched: the profile's size every
// 0.2 s, its analysis every second; the run is ended at the first correct
// analysis, and the moment is then narrowed down to the first of the sizes
// seen since the last failed analysis that is correct.
Attempt watch_run(const Config& config, const BenchProgram& program, const Truth& truth,
                  const std::vector<std::string>& argv, const std::string& cwd, const std::string& profile,
                  double cap_s) {
  struct Snapshot {
    double t;
    uintmax_t size;
  };
  std::vector<Snapshot> snapshots;
  size_t checked = 0;  // snapshots before this index were seen by a failed analysis
  double next_check = kCheckInterval;
  Verdict last;
  bool found = false;
  std::filesystem::remove(profile);

  RunOptions options = measured(config, cap_s, cwd);
  options.timeout_s = cap_s;
  options.watch = [&](double t) {
    const uintmax_t size = file_size(profile);
    if (size == 0) return false;
    if (snapshots.empty() || snapshots.back().size != size) snapshots.push_back({t, size});
    if (t < next_check) return false;
    next_check = t + kCheckInterval;
    last = judge_prefix(config, program, truth, profile, size);
    if (last.correct) return found = true;
    checked = snapshots.size();
    return false;
  };
  const RunResult r = run_process(argv, options);
  Attempt attempt;
  if (!found) {
    // Ended on its own or at the cap: the whole profile is the last chance.
    const uintmax_t size = file_size(profile);
    if (size > 0 && (snapshots.empty() || snapshots.back().size != size)) snapshots.push_back({r.wall_s, size});
    if (!snapshots.empty()) last = judge_prefix(config, program, truth, profile, snapshots.back().size);
    found = last.correct;
    if (!found && !r.ok() && !r.timed_out) attempt.error = r.describe();
  }
  if (!found) {
    attempt.why = last.why;
    return attempt;
  }
  for (size_t i = checked; i < snapshots.size(); ++i) {
    if (judge_prefix(config, program, truth, profile, snapshots[i].size).correct) {
      attempt.seconds = snapshots[i].t;
      break;
    }
  }
  return attempt;
}

// The real speedup of the bottleneck's variant: medians of interleaved plain runs.
double real_speedup(const Config& config, const BenchProgram& program, const std::string& variant) {
  const std::vector<std::string> args = program_args(program, config.run_s);
  std::map<std::string, std::vector<double>> values;
  for (int round = 0; round < config.answer_truth_rounds; ++round) {
    for (const std::string& binary : {program.name, variant}) {
      std::string error;  // a failed run only leaves a run out of the median
      const double v = plain_metric(config, program, binary, args, error);
      if (!std::isnan(v)) values[binary].push_back(v);
    }
  }
  const double base = median(values[program.name]), fast = median(values[variant]);
  return (base - fast) / base;
}

std::optional<Truth> truth_of(const Config& config, const BenchProgram& program) {
  const LineCase* bottleneck = nullptr;
  Truth truth;
  for (const LineCase& c : program.lines) {
    if (c.no_effect) truth.no_effect.push_back(marked_line(program, c.marker));
    else if (!bottleneck || c.designed > bottleneck->designed) bottleneck = &c;
  }
  if (!bottleneck) return std::nullopt;
  truth.bottleneck_marker = bottleneck->marker;
  truth.first.push_back(marked_line(program, bottleneck->marker));
  const auto also = kAlsoFirst.find(program.name);
  if (also != kAlsoFirst.end())
    for (const std::string& marker : also->second) truth.first.push_back(marked_line(program, marker));
  truth.actual = real_speedup(config, program, bottleneck->variant);
  return truth;
}

// A run beyond the cap counts as infinitely long: a median with it in its
// middle is beyond the cap too.
double median_attempt(const std::vector<Attempt>& attempts) {
  std::vector<double> seconds;
  for (const Attempt& a : attempts) seconds.push_back(a.seconds);
  return median(seconds);
}

std::string seconds_text(double s, double cap_s) {
  if (std::isnan(s)) return "n/a";
  if (std::isinf(s)) return fmt::format(">{:.0f} s", cap_s);
  return fmt::format("{:.1f} s", s);
}

// Each run's figure, then the reason the censored ones never got right.
std::string attempts_text(const std::vector<Attempt>& attempts, double cap_s) {
  std::string runs, reasons;
  for (const Attempt& a : attempts) {
    runs += (runs.empty() ? "" : " ") + (std::isinf(a.seconds) ? fmt::format(">{:.0f}", cap_s) : fmt::format("{:.1f}", a.seconds));
    const std::string why = !a.error.empty() ? a.error : a.why;
    if (std::isinf(a.seconds) && !why.empty() && reasons.find(why) == std::string::npos)
      reasons += (reasons.empty() ? "" : "; ") + why;
  }
  return reasons.empty() ? runs : runs + " (" + reasons + ")";
}

// Ratio of two medians; when theirs is beyond the cap only a bound is known.
std::string ratio_text(double ours, double theirs, bool& pass, double target, double cap_s) {
  pass = false;
  if (std::isnan(ours) || std::isnan(theirs)) return "n/a";
  if (std::isinf(ours)) return std::isinf(theirs) ? "neither" : "never";
  if (std::isinf(theirs)) {
    pass = ours / cap_s <= target;
    return fmt::format("<{:.2f}", ours / cap_s);
  }
  pass = ours / theirs <= target;
  return fmt::format("{:.2f}", ours / theirs);
}

}  // namespace

Section measure_time_to_answer(const Config& config) {
  Section section;
  section.title = "Time to a correct answer, from start";
  section.load_before = load_average();
  section.table.header = {"program", "bottleneck (real @50%)", "ours by samples (before)", "ours aimed",
                          "coz-profiler", "aimed / before", "aimed / coz-profiler"};
  const std::string scratch = config.scratch + "/time_to_answer";
  std::filesystem::create_directories(scratch);
  const bool have_coz = !config.coz_profiler.empty();
  enum Mode { kBefore, kAimed, kCoz, kModes };
  const char* const mode_names[kModes] = {"samples", "aimed", "coz-profiler"};
  int vs_before_met = 0, vs_coz_met = 0, rows = 0;

  for (const BenchProgram& program : suite()) {
    // Not the programs of several processes: coz-profiler, the yardstick here, has no system mode.
    if (!included(config, program) || program.lines.empty() || program.system) continue;
    progress(fmt::format("time to answer: {}: real speedups", program.name));
    const std::optional<Truth> truth = truth_of(config, program);
    if (!truth) continue;
    // Never the program's end before the cap: twice the cap's worth of plain work.
    const std::vector<std::string> args = program_args(program, 2 * config.answer_cap_s);
    std::vector<Attempt> attempts[kModes];
    for (int run = 0; run < config.answer_runs; ++run) {
      for (int k = 0; k < kModes; ++k) {
        const Mode mode = Mode((k + run) % kModes);  // rotated: load changes hit every mode
        if (mode == kCoz && !have_coz) continue;
        progress(fmt::format("time to answer: {} run {}/{} {}", program.name, run + 1, config.answer_runs,
                             mode_names[mode]));
        const std::string cwd = scratch + "/" + program.name + "." + mode_names[mode];
        std::filesystem::create_directories(cwd);
        const std::string profile = cwd + "/profile.coz";
        std::vector<std::string> argv;
        if (mode == kCoz) argv = {config.coz_profiler, "run", "---", config.programs + "/" + program.name + "_dwarf3"};
        else argv = {config.coz, "run", "-q", "-o", profile, "--allocation", mode == kAimed ? "aimed" : "samples",
                     "---", config.programs + "/" + program.name};
        argv.insert(argv.end(), args.begin(), args.end());
        attempts[mode].push_back(watch_run(config, program, *truth, argv, cwd, profile, config.answer_cap_s));
      }
    }
    const double before = median_attempt(attempts[kBefore]), aimed = median_attempt(attempts[kAimed]);
    const double coz = have_coz ? median_attempt(attempts[kCoz]) : std::nan("");
    bool vs_before = false, vs_coz = false;
    const std::string before_ratio = ratio_text(aimed, before, vs_before, kAimedVsBeforeTarget, config.answer_cap_s);
    const std::string coz_ratio = ratio_text(aimed, coz, vs_coz, kAimedVsCozTarget, config.answer_cap_s);
    ++rows;
    vs_before_met += vs_before;
    vs_coz_met += vs_coz;
    auto cell = [&](Mode m, double med) {
      if (m == kCoz && !have_coz) return std::string("not installed");
      return seconds_text(med, config.answer_cap_s) + ": " + attempts_text(attempts[m], config.answer_cap_s);
    };
    section.table.rows.push_back({
        program.name,
        fmt::format("{} {} ({})", truth->first.front(), truth->bottleneck_marker, percent(truth->actual)),
        cell(kBefore, before),
        cell(kAimed, aimed),
        cell(kCoz, coz),
        before_ratio + (vs_before ? "" : " MISS"),
        coz_ratio + (vs_coz ? "" : " MISS"),
    });
  }
  section.load_after = load_average();
  section.targets = {
      {"time to answer: ours aimed <= 1/2 of ours by samples (before), every program",
       fmt::format("{} of {} programs", vs_before_met, rows), pass_miss(vs_before_met == rows)},
      {"time to answer: ours aimed <= 1/4 of coz-profiler, every program",
       fmt::format("{} of {} programs", vs_coz_met, rows), pass_miss(rows > 0 && vs_coz_met == rows)},
  };
  section.notes = {
      fmt::format("each cell: the median over {} runs of the seconds from start until the analysis of the profile "
                  "written so far is right, then every run's figure; '>{:.0f}' = not right when the run was ended at "
                  "{:.0f} s, with what was still wrong at its end.",
                  config.answer_runs, config.answer_cap_s, config.answer_cap_s),
      fmt::format(
          "right: the progress point's top-ranked line is the bottleneck (any of hot_no_effect's three equal stages), "
          "labelled as speeding the program up (its adjusted 95% interval excludes 0); its estimate at 50% (a straight "
          "line through the curve's points at 35-65%, weighted by experiments, read at 50%) is within 5 points of the "
          "real speedup, measured on the variant in which that line does half the work (medians of {} interleaved "
          "plain runs of each); every line designed to have no effect is labelled 'no effect'. The same analysis "
          "(`coz report --json`) judges ours and coz-profiler's profiles.",
          config.answer_truth_rounds),
      "watched: the profile's size every 0.2 s and its analysis (at nice 19) every second; the run ends at the first "
      "right analysis, and its time is the first size seen since the last wrong analysis whose analysis is right.",
      "ours by samples: `coz run --allocation samples` (experiments chosen by samples, as before issue #16); ours aimed: "
      "`coz run` (the default); coz-profiler: Debian's /usr/bin/coz on the program's `_dwarf3` copy. Runs rotate "
      "between the three.",
      "ratios: of medians; '<x' when the other's median is beyond the cap (only a bound is known); 'never': ours was "
      "not right within the cap.",
  };
  return section;
}

}  // namespace coz_bench
