#include "runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "coz_report.h"
#include "json.h"
#include "process.h"
#include "stats.h"

namespace coz_space {

namespace json = coz_bench::json;
using coz_bench::run_process;
using coz_bench::RunOptions;
using coz_bench::RunResult;

namespace {

// Two-sided 95% quantiles of Student's t, by degrees of freedom 1..30.
constexpr double kStudent95[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};

double student95(size_t dof) {
  if (dof == 0) return kNaN;
  if (dof <= std::size(kStudent95)) return kStudent95[dof - 1];
  return 1.960 + 2.4 / double(dof);  // within 0.002 of the quantile beyond 30
}

struct MeanInterval {
  double mean = kNaN, half_width = kNaN;
};

MeanInterval mean_interval(const std::vector<double>& xs) {
  MeanInterval m;
  if (xs.empty()) return m;
  double sum = 0;
  for (double x : xs) sum += x;
  m.mean = sum / double(xs.size());
  if (xs.size() < 2) return m;
  double squares = 0;
  for (double x : xs) squares += (x - m.mean) * (x - m.mean);
  const double sd = std::sqrt(squares / double(xs.size() - 1));
  m.half_width = student95(xs.size() - 1) * sd / std::sqrt(double(xs.size()));
  return m;
}

/// "space_lock.cpp:15": the line of `// @line:MARKER` in the structure's source.
std::string marker_location(const RunnerConfig& config, const SpaceProgram& p, const std::string& marker) {
  const std::string file = p.binary + ".cpp";
  std::ifstream in(config.source_dir + "/bench/space/" + file);
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    const size_t at = text.find("// @line:" + marker);
    if (at == std::string::npos) continue;
    const size_t end = at + 9 + marker.size();
    if (end == text.size() || text[end] == ' ') return fmt::format("{}:{}", file, number);
  }
  return "";
}

/// Whether a report's line ("/src/bench/space/space_lock.cpp:15", maybe
/// with " [program]" after it under --system) is `location`.
bool same_line(std::string reported, const std::string& location) {
  if (const size_t bracket = reported.find(" ["); bracket != std::string::npos) reported.resize(bracket);
  return reported == location ||
         (reported.size() > location.size() && reported.compare(reported.size() - location.size(), location.size(), location) == 0 &&
          reported[reported.size() - location.size() - 1] == '/');
}

RunOptions measured(const RunnerConfig& config, double expected_s) {
  RunOptions o;
  o.nice = config.nice;
  o.timeout_s = 60 + 4 * expected_s;
  return o;
}

std::vector<std::string> program_argv(const RunnerConfig& config, const SpaceProgram& p, double seconds,
                                      const std::string& halve) {
  std::vector<std::string> argv = {config.programs + "/" + p.binary, fmt::format("seconds={}", seconds)};
  for (const std::string& a : p.args()) argv.push_back(a);
  if (!halve.empty()) argv.push_back("halve=" + halve);
  return argv;
}

struct PlainRun {
  double rate = kNaN;  // items per second; NaN when the run failed
  double cores_busy = kNaN, waiting_for_core = kNaN;
};

/// One plain run; `error` set when it failed.
PlainRun plain_run(const RunnerConfig& config, const SpaceProgram& p, const std::string& halve, std::string& error) {
  const RunResult r = run_process(program_argv(config, p, config.truth_seconds, halve), measured(config, config.truth_seconds));
  PlainRun run;
  const double rate = coz_bench::find_number(r.stderr_text, "throughput");
  if (r.ok() && rate > 0) {
    run.rate = rate;
    run.cores_busy = coz_bench::find_number(r.stderr_text, "cores_busy");
    run.waiting_for_core = coz_bench::find_number(r.stderr_text, "waiting_for_core");
    return run;
  }
  error = fmt::format("plain run{}: {}", halve.empty() ? "" : " halve=" + halve, r.describe());
  return run;
}

/// The truth of every line of `p`: `rounds` more interleaved rounds into `runs`.
void measure_rounds(const RunnerConfig& config, const SpaceProgram& p, int rounds,
                    std::map<std::string, std::vector<PlainRun>>& runs, std::string& error) {
  std::vector<std::string> binaries = {""};  // "" is the program itself
  for (const std::string& line : p.lines) binaries.push_back(line);
  for (int r = 0; r < rounds; ++r) {
    // Rotated each round, so that no variant always runs right after another.
    std::vector<std::string> order = binaries;
    std::rotate(order.begin(), order.begin() + size_t(r) % order.size(), order.end());
    std::vector<PlainRun> round;
    for (const std::string& halve : order) round.push_back(plain_run(config, p, halve, error));
    // A round counts only whole: its pairs are what the interval is made of.
    if (std::any_of(round.begin(), round.end(), [](const PlainRun& r) { return std::isnan(r.rate); })) continue;
    for (size_t i = 0; i < order.size(); ++i) runs[order[i]].push_back(round[i]);
  }
}

/// The truth of every row of `p`: interleaved rounds, as many again when a
/// line's interval is wider than the bound.
void measure_truths(const RunnerConfig& config, const SpaceProgram& p, std::vector<LineRow>& rows) {
  std::map<std::string, std::vector<PlainRun>> runs;
  std::string error;
  auto truths = [&] {
    bool steady = true;
    for (LineRow& row : rows) {
      std::vector<double> speedups;
      for (size_t i = 0; i < runs[""].size(); ++i) speedups.push_back(1 - runs[""][i].rate / runs[row.marker][i].rate);
      const MeanInterval m = mean_interval(speedups);
      row.truth = m.mean;
      row.truth_half_width = m.half_width;
      row.truth_rounds = int(speedups.size());
      steady = steady && row.truth_steady(config.truth_max_half_width);
    }
    return steady;
  };
  measure_rounds(config, p, config.truth_rounds, runs, error);
  if (!truths()) {  // re-measured once
    measure_rounds(config, p, config.truth_rounds, runs, error);
    truths();
  }
  auto base_median = [&](double PlainRun::*field) {
    std::vector<double> values;
    for (const PlainRun& r : runs[""]) values.push_back(r.*field);
    return coz_bench::median(values);
  };
  for (LineRow& row : rows) {
    row.base_rate = base_median(&PlainRun::rate);
    row.cores_busy = base_median(&PlainRun::cores_busy);
    row.waiting_for_core = base_median(&PlainRun::waiting_for_core);
    if (runs[""].empty()) row.error += error + "; ";
  }
}

/// Each row's truth from `known` (rows of an earlier run of the same seed).
void take_known_truths(const std::vector<LineRow>& known, std::vector<LineRow>& rows) {
  for (LineRow& row : rows) {
    for (const LineRow& k : known) {
      if (k.program != row.program || k.marker != row.marker || k.description != row.description) continue;
      row.truth = k.truth;
      row.truth_half_width = k.truth_half_width;
      row.truth_rounds = k.truth_rounds;
      row.base_rate = k.base_rate;
      row.cores_busy = k.cores_busy;
      row.waiting_for_core = k.waiting_for_core;
    }
    if (std::isnan(row.truth)) row.error += "no known truth; ";
  }
}

std::optional<json::Value> report(const RunnerConfig& config, const std::string& profile, std::string& error) {
  return coz_bench::coz_report_json(config.coz, profile, error);
}

const json::Value* find_effect(const json::Value& analysis, const std::string& location) {
  for (const json::Value& e : analysis["effects"].array)
    if (same_line(e["line"].str(), location)) return &e;
  return nullptr;
}

/// `coz run [extra] --- program` into `profile`; false with `error` set on failure.
bool profile_run(const RunnerConfig& config, const SpaceProgram& p, double seconds, std::vector<std::string> extra,
                 const std::string& profile, std::string& error) {
  std::filesystem::remove(profile);
  std::vector<std::string> argv = {config.coz, "run", "-o", profile};
  if (p.system) argv.push_back("--system");
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("---");
  for (const std::string& a : program_argv(config, p, seconds, "")) argv.push_back(a);
  const RunResult r = run_process(argv, measured(config, seconds));
  if (r.ok()) return true;
  error = fmt::format("coz run {}: {}", fmt::join(extra, " "), r.describe());
  return false;
}

/// The share of the machine's CPU time a hypervisor took during a profile's runs.
double steal_share(const json::Value& analysis) {
  const json::Value& s = analysis["sampling"];
  const double machine = s["machine_ns"].num();
  return machine > 0 ? s["steal_ns"].num() / machine : 0.0;
}

void predict(const RunnerConfig& config, const SpaceProgram& p, LineRow& row) {
  const std::string profile = fmt::format("{}/{:02}.{}.coz", config.scratch, p.index, row.marker);
  std::string error;
  std::optional<json::Value> analysis;
  // A run during which a hypervisor took a tenth of the machine or more
  // measured the host, not the program: taken once more.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!profile_run(config, p, config.predict_seconds, {"--fixed-line", row.location, "--fixed-speedup", "50"}, profile,
                     error)) {
      row.error += error + "; ";
      return;
    }
    analysis = report(config, profile, error);
    if (!analysis) break;
    row.steal = steal_share(*analysis);
    if (row.steal < config.max_steal) break;
    std::fprintf(stderr, "[space]   %s: %.0f%% of the machine stolen by the hypervisor during the prediction%s\n",
                 row.marker.c_str(), 100 * row.steal, attempt == 0 ? "; again" : "");
  }
  const json::Value* effect = analysis ? find_effect(*analysis, row.location) : nullptr;
  if (effect == nullptr) {
    row.error += analysis ? "line not in the fixed-line profile; " : error + "; ";
    return;
  }
  for (const json::Value& point : (*analysis)["points"].array)
    if (point["name"].str() == (*effect)["point"].str()) {
      row.contended = point["contended"].boolean;
      row.hand_offs = point["hand_offs_per_second"].num();
      row.fast_hand_offs = point["fast_hand_offs"].boolean;
    }
  for (const json::Value& point : (*effect)["curve"].array) {
    if (std::fabs(point["line_speedup"].num() - 0.5) > 1e-9) continue;
    row.predicted = point["program_speedup"].num();
    row.predicted_half_width = (point["high"].num() - point["low"].num()) / 2;
    row.predicted_experiments = int(point["experiments"].num());
  }
  if (std::isnan(row.predicted)) row.error += "no 50% estimate; ";
}

void judge_verdicts(const RunnerConfig& config, const SpaceProgram& p, std::vector<LineRow>& rows) {
  const std::string profile = fmt::format("{}/{:02}.default.coz", config.scratch, p.index);
  std::string error;
  std::optional<json::Value> analysis;
  if (profile_run(config, p, config.default_seconds, {}, profile, error)) analysis = report(config, profile, error);
  for (LineRow& row : rows) {
    if (!analysis) {
      row.label = "failed";
      row.error += error + "; ";
    } else if (const json::Value* effect = find_effect(*analysis, row.location)) {
      row.label = (*effect)["label"].str();
    }
  }
}

std::string number_or_null(double v) { return std::isnan(v) ? "null" : fmt::format("{:.6g}", v); }

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out + "\"";
}

void append_row(const std::string& path, const LineRow& row) {
  if (path.empty()) return;
  std::ofstream out(path, std::ios::app);
  out << fmt::format(
      "{{\"program\":{},\"structure\":{},\"description\":{},\"marker\":{},\"location\":{},\"base_rate\":{},"
      "\"cores_busy\":{},\"waiting_for_core\":{},"
      "\"truth\":{},\"truth_half_width\":{},\"truth_rounds\":{},\"predicted\":{},\"predicted_half_width\":{},"
      "\"predicted_experiments\":{},\"contended\":{},\"hand_offs\":{},\"fast_hand_offs\":{},\"steal\":{},"
      "\"label\":{},\"error\":{}}}\n",
      row.program, json_string(row.structure), json_string(row.description), json_string(row.marker),
      json_string(row.location), number_or_null(row.base_rate), number_or_null(row.cores_busy),
      number_or_null(row.waiting_for_core), number_or_null(row.truth),
      number_or_null(row.truth_half_width), row.truth_rounds, number_or_null(row.predicted),
      number_or_null(row.predicted_half_width), row.predicted_experiments, row.contended ? "true" : "false", number_or_null(row.hand_offs),
      row.fast_hand_offs ? "true" : "false", number_or_null(row.steal),
      json_string(row.label), json_string(row.error));
}

std::string points(double fraction, double half_width) {
  if (std::isnan(fraction)) return "n/a";
  std::string s = fmt::format("{:+.1f}", 100 * fraction);
  if (!std::isnan(half_width)) s += fmt::format(" ±{:.1f}", 100 * half_width);
  return s;
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

}  // namespace

bool LineRow::covered() const {
  if (std::isnan(predicted) || std::isnan(predicted_half_width) || std::isnan(truth)) return false;
  const double ht = std::isnan(truth_half_width) ? 0 : truth_half_width;
  return std::fabs(predicted - truth) <= std::hypot(predicted_half_width, ht);
}

bool LineRow::false_verdict() const {
  if (std::isnan(truth)) return false;
  const double ht = std::isnan(truth_half_width) ? 0 : truth_half_width;
  if (label == "positive") return truth <= 0.02;
  if (label == "negative") return truth >= -0.02;
  if (label == "no-effect") return std::fabs(truth) - ht > 0.025;
  return false;
}

std::vector<LineRow> run(const RunnerConfig& config, const std::vector<SpaceProgram>& programs) {
  std::filesystem::create_directories(config.scratch);
  std::vector<LineRow> all;
  for (const SpaceProgram& p : programs) {
    std::fprintf(stderr, "[space] #%d %s\n", p.index, p.describe().c_str());
    std::vector<LineRow> rows;
    for (const std::string& marker : p.lines) {
      LineRow row;
      row.program = p.index;
      row.structure = p.structure;
      row.description = p.describe();
      row.marker = marker;
      row.location = marker_location(config, p, marker);
      if (row.location.empty()) row.error = "marker not found in the source; ";
      rows.push_back(row);
    }

    if (config.known_truths) take_known_truths(*config.known_truths, rows);
    else measure_truths(config, p, rows);
    for (LineRow& row : rows) {
      if (!row.location.empty()) predict(config, p, row);
    }
    if (config.verdicts) judge_verdicts(config, p, rows);
    for (LineRow& row : rows) {
      std::fprintf(stderr, "[space]   %-9s truth %s (%d rounds), predicted %s (%d exps), error %s, %s%s\n",
                   row.marker.c_str(), points(row.truth, row.truth_half_width).c_str(), row.truth_rounds,
                   points(row.predicted, row.predicted_half_width).c_str(), row.predicted_experiments,
                   std::isnan(row.error_points()) ? "n/a" : fmt::format("{:+.1f}", row.error_points()).c_str(),
                   row.label.c_str(), row.error.empty() ? "" : (" (" + row.error + ")").c_str());
      append_row(config.rows_path, row);
      all.push_back(row);
    }
  }
  return all;
}

Summary summarize(const std::vector<LineRow>& rows, double truth_max_half_width) {
  Summary s;
  for (const LineRow& row : rows) {
    ++s.rows;
    if (row.label != "absent" && row.label != "failed") ++s.verdict_rows;
    if (row.label == "positive" || row.label == "negative" || row.label == "no-effect") ++s.confident_rows;
    if (row.false_verdict()) ++s.false_verdicts;
    if (std::isnan(row.predicted)) continue;
    ++s.predicted_rows;
    const bool open = !row.contended, slow = open && !row.fast_hand_offs;
    s.open_predicted_rows += open;
    s.slow_predicted_rows += slow;
    if (row.covered()) ++s.covered, s.open_covered += open, s.slow_covered += slow;
    if (!row.truth_steady(truth_max_half_width)) continue;
    ++s.steady_rows;
    s.open_steady_rows += open;
    s.slow_steady_rows += slow;
    if (std::fabs(row.error_points()) <= 5) ++s.within, s.open_within += open, s.slow_within += slow;
  }
  return s;
}

std::vector<std::string> Summary::lines() const {
  auto share = [](int n, int of) { return of == 0 ? std::string("n/a") : fmt::format("{:.1f}%", 100.0 * n / of); };
  return {
      fmt::format("rows within 5 points of the truth: {} of {} rows with a steady truth ({}; target >= 95%)", within,
                  steady_rows, share(within, steady_rows)),
      fmt::format("coverage: {} of {} predicted rows ({}; target >= 90%)", covered, predicted_rows,
                  share(covered, predicted_rows)),
      fmt::format("false verdicts in default runs: {} of {} confident verdicts, over {} lines judged (target 0)",
                  false_verdicts, confident_rows, verdict_rows),
      fmt::format("rows: {} ({} without a prediction, {} with a truth wider than the bound, listed apart)", rows,
                  rows - predicted_rows, predicted_rows - steady_rows),
      fmt::format("programs the report did not call contended (threads waiting for cores): within 5 points {} of {} "
                  "({}), coverage {} of {} ({})",
                  open_within, open_steady_rows, share(open_within, open_steady_rows), open_covered, open_predicted_rows,
                  share(open_covered, open_predicted_rows)),
      fmt::format("of those, programs whose hand-offs it did not call fast: within 5 points {} of {} ({}), coverage {} of "
                  "{} ({})",
                  slow_within, slow_steady_rows, share(slow_within, slow_steady_rows), slow_covered, slow_predicted_rows,
                  share(slow_covered, slow_predicted_rows)),
  };
}

std::string render_rows(const std::vector<LineRow>& rows, double truth_max_half_width) {
  coz_bench::Table steady, wide;
  const std::vector<std::string> header = {"#", "program", "rate /s", "cores busy, waiting", "hand-offs /s", "line", "truth ±95%", "predicted @50% ±95%",
                                           "error", "within 5", "covered", "default run", "note"};
  steady.header = wide.header = header;
  for (const LineRow& row : rows) {
    std::vector<std::string> cells = {
        std::to_string(row.program),
        row.description,
        fmt::format("{:.0f}", row.base_rate),
        fmt::format("{:.2f}, {:.2f}", row.cores_busy, row.waiting_for_core),
        std::isnan(row.hand_offs) ? "n/a" : fmt::format("{:.0f}", row.hand_offs),
        fmt::format("{} ({})", row.marker, row.location),
        points(row.truth, row.truth_half_width),
        points(row.predicted, row.predicted_half_width),
        std::isnan(row.error_points()) ? "n/a" : fmt::format("{:+.1f}", row.error_points()),
        yes_no(std::fabs(row.error_points()) <= 5),
        yes_no(row.covered()),
        row.label + (row.false_verdict() ? " (FALSE)" : "") + (row.contended ? ", contended" : "") +
            (!row.contended && row.fast_hand_offs ? ", fast hand-offs" : ""),
        row.error,
    };
    (row.truth_steady(truth_max_half_width) || std::isnan(row.truth) ? steady : wide).rows.push_back(cells);
  }
  std::string out = steady.render();
  if (!wide.rows.empty())
    out += fmt::format("\nRows whose truth is wider than ±{:.0f} points after re-measuring (listed apart):\n\n{}",
                       100 * truth_max_half_width, wide.render());
  return out;
}

std::vector<LineRow> read_rows(const std::string& path) {
  std::vector<LineRow> rows;
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text)) {
    std::string error;
    const std::optional<json::Value> v = json::parse(text, error);
    if (!v) continue;
    LineRow r;
    r.program = int((*v)["program"].num());
    r.structure = (*v)["structure"].str();
    r.description = (*v)["description"].str();
    r.marker = (*v)["marker"].str();
    r.location = (*v)["location"].str();
    r.base_rate = (*v)["base_rate"].num();
    r.cores_busy = (*v)["cores_busy"].num();
    r.waiting_for_core = (*v)["waiting_for_core"].num();
    r.truth = (*v)["truth"].num();
    r.truth_half_width = (*v)["truth_half_width"].num();
    r.truth_rounds = int((*v)["truth_rounds"].num());
    r.predicted = (*v)["predicted"].num();
    r.predicted_half_width = (*v)["predicted_half_width"].num();
    r.predicted_experiments = int((*v)["predicted_experiments"].num());
    r.contended = (*v)["contended"].boolean;
    r.hand_offs = (*v)["hand_offs"].num();
    r.fast_hand_offs = (*v)["fast_hand_offs"].boolean;
    r.steal = (*v)["steal"].num();
    r.label = (*v)["label"].str();
    r.error = (*v)["error"].str();
    rows.push_back(r);
  }
  return rows;
}

}  // namespace coz_space
