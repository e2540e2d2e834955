// coz_space: generates programs of the accuracy space from a seed, measures
// each marked line's truth, the profiler's prediction and a default run's
// verdicts, and prints one row per line and the summary
// (bench/space/README.md).
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "generator.h"
#include "runner.h"

namespace {

const char* const kUsage =
    "usage: coz_space --coz PATH --programs DIR [options]\n"
    "  --coz PATH              our coz\n"
    "  --programs DIR          the built space_* programs\n"
    "  --source DIR            the source tree (default: this build's)\n"
    "  --seed N                the space's seed (default: a fresh one, printed)\n"
    "  --count N               programs to generate (default 60)\n"
    "  --cores N               cores the draws scale threads to (default: this machine's)\n"
    "  --only LIST             only these program numbers (comma-separated), of the generated ones\n"
    "  --list                  print the generated programs and exit\n"
    "  --quick                 short runs and few rounds: a smoke test, no accuracy to read\n"
    "  --truth-seconds S  --truth-rounds N  --predict-seconds S  --default-seconds S\n"
    "  --no-verdicts           skip the default runs\n"
    "  --strict                exit 1 when a row lacks its truth or prediction (a run or report failed)\n"
    "  --rows FILE             append every row to FILE as JSON lines\n"
    "  --summarize FILE        print the table and summary of a rows file and exit\n"
    "  --truth-from FILE       take each line's truth from an earlier rows file (same seed) instead of measuring it\n"
    "  --out FILE              write the table and summary here (Markdown) too\n"
    "  --scratch DIR           profiles (default /tmp/coz_space)\n"
    "  --no-nice               do not run measured processes at nice -20 (the default as root)\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "coz_space: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

double positive_number(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v > 0)) usage_error(option + ": expected a positive number, got '" + text + "'");
  return v;
}

std::string report(const std::vector<coz_space::LineRow>& rows, double bound, const std::string& heading) {
  std::string out = heading + "\n\n" + coz_space::render_rows(rows, bound) + "\n";
  for (const std::string& line : coz_space::summarize(rows, bound).lines()) out += "- " + line + "\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  coz_space::RunnerConfig config;
  config.source_dir = COZ_SOURCE_DIR;
  config.scratch = "/tmp/coz_space";
  config.nice = geteuid() == 0 ? -20 : 0;
  uint64_t seed = coz_space::fresh_seed();
  int count = 60;
  int cores = int(std::thread::hardware_concurrency());
  std::set<int> only;
  bool list = false, quick = false, strict = false;
  std::string summarize_path, out_path, truth_path;
  double truth_seconds = -1, predict_seconds = -1, default_seconds = -1;
  int truth_rounds = -1;

  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--coz") config.coz = value();
    else if (a == "--programs") config.programs = value();
    else if (a == "--source") config.source_dir = value();
    else if (a == "--seed") seed = uint64_t(positive_number(a, value()));
    else if (a == "--count") count = int(positive_number(a, value()));
    else if (a == "--cores") cores = int(positive_number(a, value()));
    else if (a == "--only") {
      std::stringstream in(value());
      for (std::string item; std::getline(in, item, ',');) only.insert(std::atoi(item.c_str()));
    } else if (a == "--list") list = true;
    else if (a == "--quick") quick = true;
    else if (a == "--truth-seconds") truth_seconds = positive_number(a, value());
    else if (a == "--truth-rounds") truth_rounds = int(positive_number(a, value()));
    else if (a == "--predict-seconds") predict_seconds = positive_number(a, value());
    else if (a == "--default-seconds") default_seconds = positive_number(a, value());
    else if (a == "--no-verdicts") config.verdicts = false;
    else if (a == "--strict") strict = true;
    else if (a == "--rows") config.rows_path = value();
    else if (a == "--summarize") summarize_path = value();
    else if (a == "--truth-from") truth_path = value();
    else if (a == "--out") out_path = value();
    else if (a == "--scratch") config.scratch = value();
    else if (a == "--no-nice") config.nice = 0;
    else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else usage_error("unknown option '" + a + "'");
  }

  if (!summarize_path.empty()) {
    const std::vector<coz_space::LineRow> rows = coz_space::read_rows(summarize_path);
    if (rows.empty()) usage_error("no rows in " + summarize_path);
    std::fputs(report(rows, config.truth_max_half_width, "Rows of " + summarize_path).c_str(), stdout);
    return 0;
  }

  if (quick) {
    config.truth_seconds = 0.5;
    config.truth_rounds = 2;
    config.predict_seconds = 1.5;
    config.default_seconds = 2;
  }
  if (truth_seconds > 0) config.truth_seconds = truth_seconds;
  if (truth_rounds > 0) config.truth_rounds = truth_rounds;
  if (predict_seconds > 0) config.predict_seconds = predict_seconds;
  if (default_seconds > 0) config.default_seconds = default_seconds;

  std::vector<coz_space::LineRow> known_truths;
  if (!truth_path.empty()) {
    known_truths = coz_space::read_rows(truth_path);
    if (known_truths.empty()) usage_error("no rows in " + truth_path);
    config.known_truths = &known_truths;
  }
  std::vector<coz_space::SpaceProgram> programs;
  for (coz_space::SpaceProgram& p : coz_space::generate(seed, count, cores))
    if (only.empty() || only.count(p.index)) programs.push_back(std::move(p));
  std::printf("space: seed %llu, %d programs generated for %d cores%s\n", static_cast<unsigned long long>(seed), count,
              cores, only.empty() ? "" : fmt::format(", {} selected", programs.size()).c_str());
  for (const coz_space::SpaceProgram& p : programs)
    std::printf("  #%-2d %s (%d threads, aimed at %.0f hand-offs/s)%s\n", p.index, p.describe().c_str(), p.threads,
                p.drawn_rate, p.system ? ", --system" : "");
  std::fflush(stdout);
  if (list) return 0;
  if (config.coz.empty() || config.programs.empty()) usage_error("--coz and --programs are required");

  const std::vector<coz_space::LineRow> rows = coz_space::run(config, programs);
  const std::string text = report(
      rows, config.truth_max_half_width,
      fmt::format("Space of seed {} ({} programs, {} cores; truth {} rounds of {} s, prediction {} s, default run {} s)",
                  seed, programs.size(), cores, config.truth_rounds, config.truth_seconds, config.predict_seconds,
                  config.default_seconds));
  std::fputs(text.c_str(), stdout);
  if (!out_path.empty()) std::ofstream(out_path) << text;
  if (strict) {
    for (const coz_space::LineRow& row : rows) {
      if (std::isnan(row.truth) || std::isnan(row.predicted) || row.label == "failed") {
        std::fprintf(stderr, "coz_space: program #%d, line %s: %s\n", row.program, row.marker.c_str(),
                     row.error.empty() ? "no truth or no prediction" : row.error.c_str());
        return 1;
      }
    }
  }
  return 0;
}
