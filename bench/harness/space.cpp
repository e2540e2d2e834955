// The generated accuracy space (bench/space/README.md) as a section of the
// results: one row per marked line of each generated program, rows whose
// truth is too wide listed apart, and the three targets of issue #48.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "generator.h"
#include "runner.h"
#include "sections.h"

namespace coz_bench {

Section measure_space(const Config& config) {
  coz_space::RunnerConfig runner;
  runner.coz = config.coz;
  runner.programs = config.space_programs;
  runner.source_dir = config.source_dir;
  runner.scratch = config.scratch + "/space";
  runner.nice = config.nice;
  runner.rows_path = config.scratch + "/space/rows.jsonl";
  int count = config.space_count;
  if (config.quick) {
    runner.truth_seconds = 0.5;
    runner.truth_rounds = 2;
    runner.predict_seconds = 3;
    runner.default_seconds = 3;
    count = std::min(count, 3);
  }
  const uint64_t seed = config.space_seed ? config.space_seed : coz_space::fresh_seed();
  const int cores = int(std::thread::hardware_concurrency());

  Section section;
  section.title = fmt::format("Accuracy across generated programs (seed {}, {} programs, {} cores)", seed, count, cores);
  section.load_before = load_average();
  std::filesystem::remove(runner.rows_path);
  std::vector<coz_space::SpaceProgram> programs = coz_space::generate(seed, count, cores);
  progress(fmt::format("space: seed {}, {} programs", seed, programs.size()));
  const std::vector<coz_space::LineRow> rows = coz_space::run(runner, programs);
  section.load_after = load_average();
  section.text = coz_space::render_rows(rows, runner.truth_max_half_width);

  const coz_space::Summary s = coz_space::summarize(rows, runner.truth_max_half_width);
  auto share = [](int n, int of) { return of == 0 ? 0.0 : double(n) / of; };
  section.targets = {
      {"generated programs: rows within 5 points of the truth >= 95%",
       fmt::format("{} of {} rows ({:.1f}%)", s.within, s.steady_rows, 100 * share(s.within, s.steady_rows)),
       pass_miss(s.steady_rows > 0 && share(s.within, s.steady_rows) >= 0.95)},
      {"generated programs: coverage of the intervals >= 90%",
       fmt::format("{} of {} rows ({:.1f}%)", s.covered, s.predicted_rows, 100 * share(s.covered, s.predicted_rows)),
       pass_miss(s.predicted_rows > 0 && share(s.covered, s.predicted_rows) >= 0.90)},
      {"generated programs: false verdicts in default runs = 0",
       fmt::format("{} of {} lines with a verdict", s.false_verdicts, s.verdict_rows), pass_miss(s.false_verdicts == 0)},
  };
  section.notes = s.lines();
  section.notes.push_back(fmt::format(
      "truth: {} interleaved rounds of {} s plain runs of the program and each variant (`halve=LINE`), paired speedups "
      "1 - base/variant, mean with its Student-t 95% interval; wider than ±{:.0f} points: as many rounds again, then "
      "listed apart. predicted: `coz run --fixed-line L --fixed-speedup 50`, {} s. default run: `coz run`, {} s, the "
      "label `coz report` gives the line. `coz_space --seed {} --list` shows the programs; rows of this run: {}.",
      runner.truth_rounds, runner.truth_seconds, 100 * runner.truth_max_half_width, runner.predict_seconds,
      runner.default_seconds, seed, runner.rows_path));
  return section;
}

}  // namespace coz_bench
