// coz_verdict_sim: streams of experiments with known effects, run through the
// real analysis and the real stop rule of `coz run --until-settled`, to
// count how often a user who stops when the monitor says "settled" reads a
// false verdict (docs/analysis.md section 7; issue 49's simulator).
//
// Each simulated run draws a program: 1 to 500 lines, most without effect,
// some bottlenecks (a line made s faster makes the program slope * s
// faster), now and then a line that slows it; one throughput point whose
// visits per experiment are Poisson around the program's rate, times a
// noise that can be overdispersed, heavy-tailed (hiccups), drifting (slow
// waves, regime switches) and correlated between neighbouring experiments.
// Experiments are 40-60 ms, chosen as the runtime chooses them (by samples
// for the first ten, then three in four by the monitor's aim), and the
// profile is analysed every 5 experiments (~4 looks a second, the monitor's
// tick). A run stops at the first look whose answer is settled, or at
// --max-experiments. At the stop, a false verdict is "speeds up" or "slows
// down" on a line whose effect at 50% is within +-2 points (or of the other
// sign), or "no effect" on one whose effect at 50% is 5 points or more.
//
// Usage: coz_verdict_sim [--runs N] [--from RUN] [--seed S] [--max-experiments N]
//                        [--top N] [--verbose] [--fail-above PERCENT]
// --from: the first run's number, so that one seed's runs can be split
// between processes (runs 0-499 and 500-999 are the 1,000 of one call).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "analysis.h"
#include "profile.h"
#include "settling.h"

namespace {

using coz::analysis::Label;

struct Options {
  int runs = 1000;
  int from = 0;
  uint64_t seed = 49;
  int max_experiments = 2400;  // ~2 minutes of 50-ms experiments
  size_t top = coz::analysis::default_settle_top;
  bool verbose = false;
  double fail_above = -1;  // percent of runs with a false verdict; exit 1 above it (< 0: never)
};

/// One simulated program.
struct Program {
  std::vector<std::string> lines;
  std::vector<double> slopes;   // program speedup per unit of line speedup
  std::vector<uint64_t> samples;
  double period_ns = 0;         // untreated: ns per visit
  double overdispersion = 1.0;  // gamma-mixed visits: variance ~ (1 + rate / shape)
  double gamma_shape = 0;       // 0: plain Poisson
  double hiccup_chance = 0;     // an experiment that loses part of its time
  double wave_amplitude = 0;    // slow drift of the rate
  double wave_period_s = 30;
  double regime_switch_s = 0;   // 0: none; else mean seconds between two rates
  double regime_ratio = 1.0;
  double ar_rho = 0;            // neighbouring experiments' shared noise
  double ar_sigma = 0;
  std::string describe() const;
};

std::string Program::describe() const {
  int effects = 0;
  for (double s : slopes) effects += s != 0.0;
  return fmt::format("lines={} effects={} visits/50ms={:.0f} gamma={:.0f} hiccups={:.2f} wave={:.2f} regimes={:.1f}x{:.2f} "
                     "ar={:.1f}/{:.2f}",
                     lines.size(), effects, 50e6 / period_ns, gamma_shape, hiccup_chance, wave_amplitude,
                     regime_switch_s, regime_ratio, ar_rho, ar_sigma);
}

Program draw_program(std::mt19937_64& rng) {
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto chance = [&](double p) { return uniform(0, 1) < p; };
  Program p;
  static const int counts[] = {1, 2, 3, 5, 8, 20, 50, 100, 500};
  const int n = counts[std::uniform_int_distribution<int>(0, 8)(rng)];
  for (int i = 0; i < n; ++i) {
    p.lines.push_back(fmt::format("src/f{}.cpp:{}", i % 17, 10 + i));
    p.slopes.push_back(0.0);
    // Zipf-like samples: a few hot lines, a long tail.
    p.samples.push_back(static_cast<uint64_t>(20000.0 / std::pow(i + 1.0, uniform(0.8, 1.5))) + 1);
  }
  // A third of the programs have no line with an effect (every verdict but
  // "no effect" is false there); the others one or two bottlenecks, placed
  // among the hot lines or not, and sometimes a line that slows.
  if (!chance(1.0 / 3.0)) {
    const int bottlenecks = chance(0.5) ? 1 : std::min(n, 2);
    for (int b = 0; b < bottlenecks; ++b) {
      const int at = chance(0.7) ? std::uniform_int_distribution<int>(0, std::min(n, 5) - 1)(rng)
                                 : std::uniform_int_distribution<int>(0, n - 1)(rng);
      p.slopes[at] = uniform(0.15, 0.9);
    }
    if (n > 3 && chance(0.2)) p.slopes[std::uniform_int_distribution<int>(0, n - 1)(rng)] = -uniform(0.1, 0.4);
  }
  p.period_ns = 50e6 / std::exp(uniform(std::log(30.0), std::log(5000.0)));
  if (chance(0.6)) p.gamma_shape = std::exp(uniform(std::log(20.0), std::log(2000.0)));
  if (chance(0.3)) p.hiccup_chance = uniform(0.005, 0.05);
  if (chance(0.3)) {
    p.wave_amplitude = uniform(0.02, 0.15);
    p.wave_period_s = uniform(3, 60);
  }
  if (chance(0.2)) {
    p.regime_switch_s = uniform(1, 10);
    p.regime_ratio = uniform(1.1, 1.7);
  }
  if (chance(0.4)) {
    p.ar_rho = uniform(0.3, 0.95);
    p.ar_sigma = uniform(0.01, 0.08);
  }
  return p;
}

/// The truth a verdict is judged against: the effect at a 50% line speedup.
struct Judged {
  int false_verdicts = 0;
  bool bottleneck_found = false;  // every line with an effect of 10+ points at 50% says "speeds up"
  bool has_bottleneck = false;
  std::vector<std::string> wrong;
};

Judged judge(const Program& p, const coz::analysis::Analysis& a) {
  Judged j;
  int big = 0, found = 0;
  for (size_t i = 0; i < p.lines.size(); ++i) big += p.slopes[i] * 0.5 >= 0.10;
  for (const coz::analysis::LineEffect& e : a.effects) {
    const auto at = std::find(p.lines.begin(), p.lines.end(), e.line);
    if (at == p.lines.end()) continue;
    const double truth = p.slopes[at - p.lines.begin()] * 0.5;
    bool wrong = false;
    if (e.label == Label::Positive) wrong = truth <= 0.02;
    if (e.label == Label::Negative) wrong = truth >= -0.02;
    if (e.label == Label::NoEffect) wrong = std::abs(truth) >= 0.05;
    if (e.label == Label::Positive && truth >= 0.10) ++found;
    if (wrong) {
      ++j.false_verdicts;
      j.wrong.push_back(fmt::format("{} {} truth {:+.1f} read {:+.1f} [{:+.1f}, {:+.1f}] {} exps", e.line,
                                    coz::analysis::to_string(e.label), 100 * truth, 100 * e.impact,
                                    100 * e.impact_low, 100 * e.impact_high, e.measured_experiments));
    }
  }
  j.has_bottleneck = big > 0;
  j.bottleneck_found = big > 0 && found == big;
  return j;
}

struct RunResult {
  Judged judged;
  int experiments = 0;
  bool settled = false;
  int false_at_any_look = 0;  // looks whose settled answer held a false verdict
  // What the status line stated at the look after kStatedLook experiments,
  // when not settled by then: the experiments still needed (-1: not stated).
  double stated_left = -1;
};

/// The runtime's share of experiments chosen by the monitor's aim
/// (ExperimentScheduler::aimed_share in libcoz/core/experiment.h).
constexpr double kAimedShare = 0.75;

/// The look whose stated time left is checked against the real stop: ~5 s
/// into a run, once the warm-up and the first aimed experiments are in.
constexpr int kStatedLook = 100;

/// Picks an index with probability proportional to `weights` (all zero: uniform).
size_t pick(std::mt19937_64& rng, const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  if (!(total > 0)) return std::uniform_int_distribution<size_t>(0, weights.size() - 1)(rng);
  double u = std::uniform_real_distribution<double>(0, total)(rng);
  for (size_t i = 0; i < weights.size(); ++i) {
    if ((u -= weights[i]) < 0) return i;
  }
  return weights.size() - 1;
}

RunResult simulate(const Program& p, std::mt19937_64& rng, const Options& o) {
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  coz::analysis::Profile profile;
  {
    std::ostringstream head;
    head << "startup\ttime=1732190000000000000\nprocess\tpid=100\tparent=1\tcommand=./sim\n";
    uint64_t total = 0;
    for (size_t i = 0; i < p.lines.size(); ++i) {
      head << "samples\tlocation=" << p.lines[i] << "\tcount=" << p.samples[i] << "\n";
      total += p.samples[i];
    }
    head << "sampling\tsamples=" << total << "\tin-scope=" << total << "\tlost=0\tperiod=1000000\tcpu-time=" << total * 1000000
         << "\n";
    std::istringstream in(head.str());
    coz::analysis::read_profile(in, "sim.coz", profile);
  }
  std::vector<double> by_samples(p.samples.begin(), p.samples.end());
  std::vector<double> aimed;  // the monitor's weights, per line; empty before the warm-up
  double baseline_share = 0.25;
  double clock_s = 0, ar = 0, regime = 1.0, next_switch = p.regime_switch_s > 0 ? uniform(0, 2 * p.regime_switch_s) : 1e18;
  RunResult r;
  std::string chunk;
  for (int n = 1; n <= o.max_experiments; ++n) {
    const bool aim = !aimed.empty() && uniform(0, 1) < kAimedShare;
    const size_t line = pick(rng, aim ? aimed : by_samples);
    const double share0 = aim ? baseline_share : 0.25;
    const double s = uniform(0, 1) < share0 ? 0.0 : std::uniform_int_distribution<int>(1, 20)(rng) / 20.0;
    const double d_ns = std::uniform_int_distribution<int>(40, 60)(rng) * 1e6;
    clock_s += d_ns / 1e9;
    // The program's rate in this experiment: treated, drifting, correlated, hiccuping.
    if (clock_s >= next_switch) {
      regime = regime == 1.0 ? p.regime_ratio : 1.0;
      next_switch = clock_s + std::exponential_distribution<double>(1.0 / p.regime_switch_s)(rng);
    }
    ar = p.ar_rho * ar + p.ar_sigma * std::normal_distribution<double>(0, 1)(rng);
    double rate = d_ns / (p.period_ns * (1.0 - p.slopes[line] * s));
    rate *= regime * std::exp(ar) * (1.0 + p.wave_amplitude * std::sin(2 * M_PI * clock_s / p.wave_period_s));
    if (p.hiccup_chance > 0 && uniform(0, 1) < p.hiccup_chance) rate *= uniform(0.2, 0.7);
    if (p.gamma_shape > 0) rate *= std::gamma_distribution<double>(p.gamma_shape, 1.0 / p.gamma_shape)(rng);
    const uint64_t visits = std::poisson_distribution<uint64_t>(std::max(rate, 1e-9))(rng);
    chunk += fmt::format("experiment\tselected={}\tspeedup={:.2f}\tduration={:.0f}\tselected-samples=5\tpid=100\n",
                         p.lines[line], s, d_ns);
    chunk += fmt::format("throughput-point\tname=items\tdelta={}\n", visits);
    if (n % 5 != 0 && n != o.max_experiments) continue;
    std::istringstream in(chunk);
    coz::analysis::read_profile(in, "sim.coz", profile);
    chunk.clear();
    const coz::analysis::Analysis a = coz::analysis::analyze(profile);
    const coz::analysis::Settling state = coz::analysis::settle_state(a, o.top);
    r.experiments = n;
    if (state.settled) {
      r.settled = true;
      r.judged = judge(p, a);
      return r;
    }
    if (n >= 10) {
      const std::vector<coz::analysis::AimWeight> weights = coz::analysis::aim_weights(a, state);
      if (n == kStatedLook) r.stated_left = coz::analysis::run_experiments_left(a, state, weights, kAimedShare);
      aimed.assign(p.lines.size(), 0.0);
      for (const coz::analysis::AimWeight& w : weights) {
        const auto at = std::find(p.lines.begin(), p.lines.end(), w.unit);
        if (at != p.lines.end()) aimed[at - p.lines.begin()] = w.weight;
      }
      const double share = coz::analysis::aim_baseline_share(state);
      baseline_share = share > 0 ? share : 0.25;
    }
    if (n == o.max_experiments) r.judged = judge(p, a);
  }
  return r;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "coz_verdict_sim: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--runs") o.runs = std::stoi(value());
    else if (arg == "--from") o.from = std::stoi(value());
    else if (arg == "--seed") o.seed = std::stoull(value());
    else if (arg == "--max-experiments") o.max_experiments = std::stoi(value());
    else if (arg == "--top") o.top = static_cast<size_t>(std::stoul(value()));
    else if (arg == "--verbose") o.verbose = true;
    else if (arg == "--fail-above") o.fail_above = std::stod(value());
    else {
      std::fprintf(stderr, "coz_verdict_sim: unknown argument '%s'\n", arg.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int with_false = 0, settled = 0, with_bottleneck = 0, found = 0, null_programs = 0, null_false = 0;
  std::vector<int> stops;
  // The stated time left, against the real stop: within it, within twice it,
  // or past twice it (a run stopped unsettled at the cap counts as past when
  // twice the statement ended before the cap, and is left out otherwise).
  int stated = 0, within_stated = 0, within_twice = 0, past_twice = 0;
  std::vector<double> real_over_stated;
  for (int run = o.from; run < o.from + o.runs; ++run) {
    // Each run's program and its noise from their own streams: the same seed
    // gives the same programs whatever the analysis decides.
    std::mt19937_64 program_rng(o.seed * 1000003 + static_cast<uint64_t>(run));
    std::mt19937_64 noise_rng(o.seed * 7919 + static_cast<uint64_t>(run) * 104729 + 1);
    const Program p = draw_program(program_rng);
    const RunResult r = simulate(p, noise_rng, o);
    stops.push_back(r.experiments);
    if (r.stated_left > 0) {
      const double left = r.experiments - kStatedLook;
      if (r.settled) {
        ++stated;
        within_stated += left <= r.stated_left;
        within_twice += left <= 2 * r.stated_left;
        past_twice += left > 2 * r.stated_left;
        real_over_stated.push_back(left / r.stated_left);
      } else if (kStatedLook + 2 * r.stated_left < o.max_experiments) {
        ++stated;
        ++past_twice;
        real_over_stated.push_back(1e9);
      }
    }
    settled += r.settled;
    with_false += r.judged.false_verdicts > 0;
    with_bottleneck += r.judged.has_bottleneck;
    found += r.judged.bottleneck_found;
    const bool null_program = std::all_of(p.slopes.begin(), p.slopes.end(), [](double s) { return s == 0.0; });
    null_programs += null_program;
    null_false += null_program && r.judged.false_verdicts > 0;
    if (o.verbose || r.judged.false_verdicts > 0) {
      std::printf("run %d: %s: %s after %d experiments%s\n", run, p.describe().c_str(),
                  r.settled ? "settled" : "not settled", r.experiments, r.judged.false_verdicts ? ": FALSE" : "");
      for (const std::string& w : r.judged.wrong) std::printf("    %s\n", w.c_str());
    }
  }
  std::sort(stops.begin(), stops.end());
  const double median_s = stops.empty() ? 0 : stops[stops.size() / 2] * 0.05;
  std::printf("\nseed %llu, %d runs (stop at %d experiments, top %zu)\n", static_cast<unsigned long long>(o.seed),
              o.runs, o.max_experiments, o.top);
  std::printf("runs with a false verdict at the stop: %d of %d (%.1f%%); of the %d programs without an effect: %d\n",
              with_false, o.runs, 100.0 * with_false / std::max(1, o.runs), null_programs, null_false);
  std::printf("settled: %d of %d; median stop %d experiments (~%.0f s)\n", settled, o.runs,
              stops.empty() ? 0 : stops[stops.size() / 2], median_s);
  std::printf("bottlenecks (10+ points at 50%%) all found: %d of %d runs that have one\n", found, with_bottleneck);
  std::sort(real_over_stated.begin(), real_over_stated.end());
  const double median_ratio = real_over_stated.empty() ? 0 : real_over_stated[real_over_stated.size() / 2];
  std::printf("time left stated at %d experiments, against the stop (%d runs judged): within it %d, within twice it %d, "
              "past twice it %d; median real/stated %s\n",
              kStatedLook, stated, within_stated, within_twice, past_twice,
              median_ratio >= 1e9 ? "past the cap" : fmt::format("{:.2f}", median_ratio).c_str());
  const double false_share = 100.0 * with_false / std::max(1, o.runs);
  if (o.fail_above >= 0 && false_share > o.fail_above) {
    std::printf("FAILED: %.1f%% of runs with a false verdict, more than %.1f%%\n", false_share, o.fail_above);
    return 1;
  }
  return 0;
}
