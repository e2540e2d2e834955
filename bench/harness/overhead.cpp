// Overhead: wall time of each program plain, under our profiler and under
// Debian's coz-profiler, in interleaved rounds (every mode once per round,
// the order rotated each round), as ratios to the plain run. Two modes per
// profiler: sampling alone (--fixed-speedup 0: every experiment a 0%
// baseline, so no delays are inserted) and the full experiments (a normal
// `coz run`: random lines, random speedups, delays).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "profile.h"
#include "sections.h"

namespace coz_bench {
namespace {

constexpr double kSamplingTarget = 0.05;   // sampling alone: at most 5% over plain
constexpr double kVersusCozTarget = 0.5;   // full experiments: at most half coz-profiler's overhead

enum Mode { kPlain, kOursSampling, kOursFull, kPlainDwarf3, kCozSampling, kCozFull, kModes };

struct ModeRuns {
  std::vector<double> wall;
  std::vector<size_t> experiments;
  std::vector<double> delay_asked_s;
  std::string failure;  // last failure, if any
};

// The delay a run's experiments called for: each sample in the selected
// line asks every other thread to pause speedup x one sample period (1 ms
// in both profilers by default). Read from the `experiment` records (with
// the analysis's profile reader), which both profilers write alike. Whether
// a pause slows the program depends on where it lands (a thread off the
// critical path absorbs it), so this is what the experiments asked, not
// what they cost.
double delay_asked_s(const std::string& path) {
  constexpr double kSamplePeriodS = 1e-3;
  coz::analysis::Profile profile;
  if (!coz::analysis::read_profile_file(path, profile)) return 0.0;
  double total = 0;
  for (const coz::analysis::Experiment& e : profile.experiments)
    total += e.speedup * double(e.selected_samples) * kSamplePeriodS;
  return total;
}

// The last non-empty line of `text`, fit for a table cell.
std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  std::string line = text.substr(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
  for (char& c : line)
    if (c == '|' || c == '\r') c = '/';
  return line;
}

// Why coz-profiler gets `_dwarf3` copies: one short run on the default build.
std::string coz_profiler_on_dwarf5(const Config& config, const std::string& scratch) {
  const std::string dir = scratch + "/coz-profiler-dwarf5";
  std::filesystem::create_directories(dir);
  const RunResult r = run_process({config.coz_profiler, "run", "---", config.programs + "/pipeline", "-n", "200"},
                                  measured(config, 5.0, dir));
  std::string what;
  for (const char* key : {"what():", "error", "Error"}) {
    const size_t pos = r.stderr_text.find(key);
    if (pos != std::string::npos) {
      what = r.stderr_text.substr(pos, r.stderr_text.find('\n', pos) - pos);
      break;
    }
  }
  const bool profile = std::filesystem::exists(dir + "/profile.coz") && std::filesystem::file_size(dir + "/profile.coz") > 0;
  return fmt::format("coz-profiler on the default (DWARF 5) build of `pipeline`: {}{}, {}.", r.describe(),
                     what.empty() ? "" : " (" + what + ")", profile ? "profile written" : "no profile written");
}

}  // namespace

Section measure_overhead(const Config& config) {
  Section section;
  section.title = "Overhead: wall time under each profiler / plain";
  section.load_before = load_average();
  section.table.header = {"program",
                          "plain",
                          "ours: sampling only",
                          "ours: full",
                          "coz-profiler: sampling only",
                          "coz-profiler: full",
                          "sampling <= 5%",
                          "full <= 1/2 coz-profiler's"};
  const bool have_coz = !config.coz_profiler.empty();
  const std::string scratch = config.scratch + "/overhead";
  std::filesystem::create_directories(scratch);

  int programs = 0, sampling_pass = 0, versus_pass = 0;
  for (const BenchProgram& program : suite()) {
    if (!included(config, program)) continue;
    const std::vector<std::string> args = program_args(program, config.overhead_run_s);
    const std::string binary = config.programs + "/" + program.name;
    const std::string binary3 = config.programs + "/" + program.name + "_dwarf3";
    ModeRuns runs[kModes];
    for (int round = 0; round < config.overhead_rounds; ++round) {
      progress(fmt::format("overhead: {} round {}/{}", program.name, round + 1, config.overhead_rounds));
      for (int k = 0; k < kModes; ++k) {
        const Mode mode = Mode((k + round) % kModes);
        if (!have_coz && (mode == kCozSampling || mode == kCozFull)) continue;
        const std::string dir = fmt::format("{}/{}.mode{}", scratch, program.name, int(mode));
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
        const std::string profile = dir + "/profile.coz";
        std::vector<std::string> argv;
        switch (mode) {
          case kPlain: argv = {binary}; break;
          case kPlainDwarf3: argv = {binary3}; break;
          case kOursSampling: argv = {config.coz, "run", "-o", profile, "--fixed-speedup", "0", "---", binary}; break;
          case kOursFull: argv = {config.coz, "run", "-o", profile, "---", binary}; break;
          case kCozSampling: argv = {config.coz_profiler, "run", "--fixed-speedup", "0", "---", binary3}; break;
          case kCozFull: argv = {config.coz_profiler, "run", "---", binary3}; break;
          default: break;
        }
        // A program of several processes is profiled as one (accuracy.cpp).
        if (program.system && (mode == kOursSampling || mode == kOursFull)) argv.insert(argv.begin() + 2, "--system");
        argv.insert(argv.end(), args.begin(), args.end());
        // coz-profiler writes profile.coz into its working directory.
        const RunResult r = run_process(argv, measured(config, 3 * config.overhead_run_s, dir));
        ModeRuns& m = runs[mode];
        if (!r.ok()) {
          m.failure = r.describe();
          const std::string last = last_line(r.stderr_text);
          if (!last.empty()) m.failure += ": " + last.substr(0, 80);
          continue;
        }
        m.wall.push_back(r.wall_s);
        std::string error;
        const std::optional<json::Value> report =
            std::filesystem::exists(profile) ? report_json(config, profile, error) : std::nullopt;
        m.experiments.push_back(report ? size_t((*report)["experiments"].num()) : 0);
        m.delay_asked_s.push_back(delay_asked_s(profile));
      }
    }

    auto cell = [&](Mode mode, Mode base) -> std::string {
      if (!have_coz && (mode == kCozSampling || mode == kCozFull)) return "not installed";
      const ModeRuns& m = runs[mode];
      if (m.wall.empty()) return "failed (" + m.failure + ")";
      const double ratio = median(m.wall) / median(runs[base].wall);
      std::string s = fmt::format("{}x ({})", fixed(ratio, 3), percent(ratio - 1.0));
      if (mode != kPlain && mode != kPlainDwarf3) {
        std::vector<double> e(m.experiments.begin(), m.experiments.end());
        s += fmt::format(", {:.0f} exp.", median(e));
        if (mode == kOursFull || mode == kCozFull)
          s += fmt::format(", delays asked {:.0f}% of plain", 100 * median(m.delay_asked_s) / median(runs[base].wall));
      }
      if (!m.failure.empty()) s += " (some runs failed: " + m.failure + ")";
      return s;
    };
    auto overhead = [&](Mode mode, Mode base) {
      if (runs[mode].wall.empty() || runs[base].wall.empty()) return std::nan("");
      return median(runs[mode].wall) / median(runs[base].wall) - 1.0;
    };
    const double sampling = overhead(kOursSampling, kPlain);
    const double ours_full = overhead(kOursFull, kPlain);
    const double coz_full = have_coz ? overhead(kCozFull, kPlainDwarf3) : std::nan("");
    ++programs;
    if (!std::isnan(sampling) && sampling <= kSamplingTarget) ++sampling_pass;
    std::string versus = "n/a (coz-profiler failed)";
    if (!have_coz) versus = "n/a (coz-profiler not installed)";
    if (!std::isnan(ours_full) && !std::isnan(coz_full)) {
      // With coz-profiler at no measurable overhead, "half of it" means none.
      const bool pass = ours_full <= kVersusCozTarget * std::max(coz_full, 0.0);
      versus_pass += pass;
      versus = fmt::format("{} ({} vs {})", pass_miss(pass), percent(ours_full), percent(coz_full));
    }
    section.table.rows.push_back({
        program.name,
        fmt::format("{} s", fixed(median(runs[kPlain].wall), 3)),
        cell(kOursSampling, kPlain),
        cell(kOursFull, kPlain),
        cell(kCozSampling, kPlainDwarf3),
        cell(kCozFull, kPlainDwarf3),
        std::isnan(sampling) ? "MISS (failed)" : fmt::format("{} ({})", pass_miss(sampling <= kSamplingTarget), percent(sampling)),
        versus,
    });
  }
  section.load_after = load_average();
  section.targets = {
      {"sampling alone <= 5% over plain", fmt::format("{} of {} programs", sampling_pass, programs),
       pass_miss(sampling_pass == programs)},
      {"full overhead <= 1/2 of coz-profiler's", fmt::format("{} of {} programs", versus_pass, programs),
       have_coz ? pass_miss(versus_pass == programs) : "n/a"},
  };
  section.notes = {
      fmt::format("Median wall time (fork to exit, start-up included) of {} interleaved rounds; each round runs every "
                  "mode once, order rotated. Programs scaled to ~{:.1f} s plain.",
                  config.overhead_rounds, config.overhead_run_s),
      "ours: the `coz` under test; sampling only = `--fixed-speedup 0` (every experiment a 0% baseline, no delays, "
      "one sample per ms of thread CPU time; where threads sample with traps (Linux 6.0+, docs/signals.md) each "
      "sample is a SIGTRAP handled in its thread, else nothing can be owed, threads take no signal per sample and "
      "the profiler thread drains their rings); full = plain `coz run` (random lines and speedups; its experiments "
      "sample every 0.5 ms so that each pause is shorter, and signal every sample so that delays are paid at "
      "once, so the sampling part of a full run costs more than twice the sampling-only figure).",
      "coz-profiler: Debian's /usr/bin/coz (0.2.2) on the `_dwarf3` copy of the same program (-gdwarf-3: it cannot "
      "read DWARF 5); its ratios are to a plain run of that copy. `exp.` = experiments written to the profile.",
      "Full-experiment overhead includes the inserted delays, which is the cost a user pays per run.",
      "delays asked: the pauses a run's experiments called for (selected-line samples x speedup x the 1 ms sample "
      "period, summed over the experiment records of the profile), as a share of the plain run time. A pause "
      "slows the program only where it lands on the critical path; the rest of the full overhead is the cost of "
      "sampling (previous column) and of running the experiments.",
  };
  if (have_coz) section.notes.push_back(coz_profiler_on_dwarf5(config, scratch));
  return section;
}

}  // namespace coz_bench
