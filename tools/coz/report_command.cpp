// `coz report`: reads one or more profiles, analyses them together and prints
// the ranked table (or JSON, or a before/after comparison), or exports the
// call stacks (flame graphs, pprof). Parsing,
// statistics and layout live in coz_analysis; this file only maps the command
// line and the terminal onto them.
#include "report_command.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli_conventions.h"
#include "profile_args.h"
#include <fmt/format.h>

#include "analysis.h"
#include "analysis_json.h"
#include "compare.h"
#include "export_collapsed.h"
#include "export_pprof.h"
#include "profile.h"
#include "text_report.h"

namespace coz {
namespace {

namespace po = boost::program_options;

constexpr size_t max_warning_lines = 20;  // enough to see the pattern, not a screenful of garbage
constexpr size_t default_width = 100;

struct ReportArgs {
  std::vector<std::string> files;
  // Signed on purpose: program_options would wrap "-1" into a huge unsigned.
  long long top = 20;
  std::string point;
  long long min_experiments = 1;
  std::string baseline = "local";
  bool json = false;
  bool compare = false;
  bool collapsed = false;
  std::string pprof;  // the file to write; "" for none
  bool no_color = false;
  bool help = false;
  bool version = false;
};

po::options_description visible_options(ReportArgs& args) {
  po::options_description opts("Options");
  opts.add_options()
      ("top", po::value(&args.top)->default_value(args.top)->value_name("N"),
       "show the N best lines per progress point (0: all)")
      ("point", po::value(&args.point)->value_name("NAME"), "only this progress point")
      ("min-experiments", po::value(&args.min_experiments)->default_value(args.min_experiments)->value_name("N"),
       "hide lines with fewer experiments")
      ("baseline", po::value(&args.baseline)->default_value(args.baseline)->value_name("local|pooled|line"),
       "0% baseline: the 0% experiments nearest in time to each experiment (local), all of them (pooled), "
       "or each line's own where it has them (line)")
      ("json", po::bool_switch(&args.json), "the full analysis as JSON (schema: docs/analysis.md)")
      ("compare", po::bool_switch(&args.compare),
       "compare two profiles, BEFORE AFTER: the program's change and each line's change in impact")
      ("collapsed", po::bool_switch(&args.collapsed),
       "the call stacks as folded stacks on stdout, for flamegraph.pl, inferno, speedscope (docs/exports.md)")
      ("pprof", po::value(&args.pprof)->value_name("FILE"),
       "write the call stacks to FILE as a gzipped pprof profile.proto, for go tool pprof (docs/exports.md)")
      ("no-color", po::bool_switch(&args.no_color), "no ANSI colours (also: NO_COLOR set)")
      ("help,h", po::bool_switch(&args.help), "show this help")
      ("version,V", po::bool_switch(&args.version), "print coz's version and license");
  return opts;
}

void print_usage(const po::options_description& opts) {
  std::cout << "Usage: coz report [options] [PROFILE...]\n"
               "       coz report --compare [options] BEFORE AFTER\n"
               "       coz report --collapsed | --pprof FILE [PROFILE...]\n"
               "Ranks source lines by how much making them faster would speed up the program.\n"
               "PROFILE defaults to profile.coz; several profiles are merged (runs add up).\n\n"
            << cli::format_options(opts);
}

// Fails with a message for the caller to print; nothing is written here.
bool parse(int argc, char** argv, ReportArgs& args, po::options_description& visible, std::string& error) {
  if (!cli::parse_with_profiles(argc, argv, visible, args.files, error)) return false;
  if (args.top < 0) return error = "--top must be 0 or more", false;
  if (args.min_experiments < 0) return error = "--min-experiments must be 0 or more", false;
  if (!analysis::baseline_named(args.baseline)) {
    return error = "--baseline must be 'local', 'pooled' or 'line'", false;
  }
  if (args.compare && args.files.size() != 2) return error = "--compare takes two profiles: BEFORE AFTER", false;
  if ((args.collapsed || !args.pprof.empty()) && (args.compare || args.json)) {
    return error = "--collapsed and --pprof export the call stacks instead of the report: not with --compare or --json",
           false;
  }
  if (args.files.empty()) args.files.push_back("profile.coz");
  return true;
}

size_t terminal_width() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return default_width;
}

void print_warnings(const analysis::Profile& profile) {
  size_t shown = std::min(profile.warnings.size(), max_warning_lines);
  for (size_t i = 0; i < shown; ++i) std::cerr << "coz report: warning: " << profile.warnings[i] << '\n';
  uint64_t rest = profile.warnings.size() - shown + profile.warnings_dropped;
  if (rest > 0) std::cerr << fmt::format("coz report: ... and {} more warning{}\n", rest, rest == 1 ? "" : "s");
}

// Reads every file before any output, so a missing file stops early.
bool read_all(const std::vector<std::string>& files, analysis::Profile& profile, std::string& error) {
  for (const std::string& file : files) {
    analysis::Profile one;
    if (!analysis::read_profile_file(file, one)) {
      error = one.warnings.empty() ? "cannot open " + file : one.warnings.back();
      return false;
    }
    analysis::merge_profile(profile, std::move(one));
  }
  return true;
}

// A --point that names nothing is a typo worth stopping for.
bool check_point(const std::string& point, const analysis::Analysis& result, std::string& error) {
  if (point.empty() || result.experiments == 0) return true;
  std::string known;
  for (const analysis::PointSummary& p : result.points) {
    if (analysis::point_is(p.name, point)) return true;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  error = fmt::format("no progress point named '{}' in the profile (points: {})", point,
                      known.empty() ? "none" : known);
  return false;
}

int fail(const std::string& message) {
  std::cerr << "coz report: " << message << '\n';
  return cli::exit_bad_input;
}

// --collapsed, --pprof: the conventional profile's stacks for other tools.
int export_stacks(const ReportArgs& args, const analysis::Profile& profile) {
  analysis::ExportedStacks stacks = analysis::exported_stacks(profile);
  if (stacks.stacks.empty()) {
    // Like a report without experiments: nothing to show is not an error.
    std::cerr << "coz report: no call stacks in the profile, nothing to export (Coz's profiles have none)\n";
    return 0;
  }
  std::string error;
  if (!args.pprof.empty()) {
    if (!analysis::write_pprof_file(profile, stacks, args.pprof, error)) return fail(error);
    std::cerr << fmt::format("coz report: wrote {}: {} samples in {} stacks\n", args.pprof, stacks.samples,
                             stacks.stacks.size());
  }
  if (args.collapsed) analysis::write_collapsed(std::cout, stacks);
  std::cout.flush();
  return 0;
}

}  // namespace

int report_main(int argc, char** argv) {
  ReportArgs args;
  po::options_description visible = visible_options(args);
  std::string error;
  if (!parse(argc, argv, args, visible, error)) return fail(error + " (see coz report --help)");
  if (args.help) {
    print_usage(visible);
    return 0;
  }
  if (args.version) {
    std::cout << cli::version_text();
    return 0;
  }

  analysis::AnalysisOptions options;
  options.point = args.point;
  options.min_experiments = static_cast<uint64_t>(args.min_experiments);
  options.baseline = *analysis::baseline_named(args.baseline);

  analysis::TextReportOptions text;
  text.top = static_cast<size_t>(args.top);
  bool tty = isatty(STDOUT_FILENO) == 1;
  text.colour = tty && !args.no_color && std::getenv("NO_COLOR") == nullptr;
  text.width = tty ? terminal_width() : default_width;

  if (args.compare) {
    analysis::Profile before;
    analysis::Profile after;
    if (!read_all({args.files[0]}, before, error) || !read_all({args.files[1]}, after, error)) return fail(error);
    analysis::Analysis a = analysis::analyze(before, options);
    analysis::Analysis b = analysis::analyze(after, options);
    if (!check_point(args.point, a, error) && !check_point(args.point, b, error)) return fail(error);
    print_warnings(before);
    print_warnings(after);
    analysis::Comparison c = analysis::compare(a, b);
    if (args.json) {
      std::cout << analysis::to_json(c, a, b, {args.files[0]}, {args.files[1]});
    } else {
      analysis::write_compare_report(std::cout, c, {args.files[0], args.files[1], a.experiments, b.experiments},
                                     text);
    }
    std::cout.flush();
    return 0;
  }

  analysis::Profile profile;
  if (!read_all(args.files, profile, error)) return fail(error);
  if (args.collapsed || !args.pprof.empty()) {
    print_warnings(profile);
    return export_stacks(args, profile);
  }
  analysis::Analysis result = analysis::analyze(profile, options);
  if (!check_point(args.point, result, error)) return fail(error);

  print_warnings(profile);
  if (args.json) {
    analysis::write_json(std::cout, result);
  } else {
    analysis::write_text_report(std::cout, result, text);
  }
  std::cout.flush();
  return 0;
}

}  // namespace coz
