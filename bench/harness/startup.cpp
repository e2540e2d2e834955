// Start-up: the time from exec to the first sample-ready state on a program
// with tens of MB of DWARF (generated: bench/bigdwarf). The program exits at
// once (a --help-like run), so its wall time under a profiler is the
// profiler's start-up (line map included) plus its shutdown. Ours also says
// how long its line map took (`coz run -v`: "line map: ... built in X ms").
#include <elf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "sections.h"

namespace coz_bench {
namespace {

constexpr double kStartupTarget = 5.0;  // ours at least 5x faster than coz-profiler

/// Section name -> size, from the ELF section headers (64-bit little-endian only).
std::map<std::string, uint64_t> section_sizes(const std::string& path) {
  std::map<std::string, uint64_t> sizes;
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64)
    return sizes;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  in.seekg(std::streamoff(eh.e_shoff));
  in.read(reinterpret_cast<char*>(sh.data()), std::streamsize(sh.size() * sizeof(Elf64_Shdr)));
  if (!in || eh.e_shstrndx >= sh.size()) return sizes;
  std::string names(sh[eh.e_shstrndx].sh_size, '\0');
  in.seekg(std::streamoff(sh[eh.e_shstrndx].sh_offset));
  in.read(names.data(), std::streamsize(names.size()));
  for (const Elf64_Shdr& s : sh)
    if (s.sh_name < names.size()) sizes[names.c_str() + s.sh_name] = s.sh_size;
  return sizes;
}

std::string megabytes(uint64_t bytes) { return fmt::format("{:.1f} MB", double(bytes) / 1e6); }

}  // namespace

Section measure_startup(const Config& config) {
  Section section;
  section.title = "Start-up on a program with tens of MB of DWARF";
  section.load_before = load_average();
  section.table.header = {"run", "wall (median)", "over plain", "line map built in", "coz-profiler / ours (over plain)",
                          "target >= 5x"};
  if (!std::filesystem::exists(config.bigdwarf)) {
    section.load_after = load_average();
    section.notes = {"not measured: " + config.bigdwarf + " was not built"};
    return section;
  }
  const bool have_coz = !config.coz_profiler.empty();
  const std::string scratch = config.scratch + "/startup";
  std::filesystem::create_directories(scratch);

  // coz-profiler's runtime preloaded directly, the way its Python wrapper
  // /usr/bin/coz sets it up: the runtime's own start-up without the wrapper.
  const std::string coz_runtime = "/usr/lib/coz-profiler/libcoz.so";
  const bool have_runtime = have_coz && std::filesystem::exists(coz_runtime);
  RunOptions direct = measured(config, 30.0, scratch);
  direct.env = {"LD_PRELOAD=" + coz_runtime, "COZ_BINARY_SCOPE=MAIN", "COZ_SOURCE_SCOPE=%", "COZ_PROGRESS_POINTS=",
                "COZ_OUTPUT=" + scratch + "/direct.coz"};
  std::vector<double> plain, ours, coz, coz_direct, line_map_ms;
  std::string ours_failure, coz_failure, direct_failure, line_map_text;
  const std::regex line_map_re(R"(line map: (.*?),? built in ([0-9.]+) ms)");
  for (int round = 0; round < config.startup_rounds; ++round) {
    progress(fmt::format("start-up: round {}/{}", round + 1, config.startup_rounds));
    const RunResult p = run_process({config.bigdwarf}, measured(config, 1.0, scratch));
    if (p.ok()) plain.push_back(p.wall_s);
    const RunResult o = run_process({config.coz, "run", "-v", "-o", scratch + "/ours.coz", "---", config.bigdwarf},
                                    measured(config, 10.0, scratch));
    std::smatch m;
    if (o.ok()) {
      ours.push_back(o.wall_s);
      if (std::regex_search(o.stderr_text, m, line_map_re)) {
        line_map_ms.push_back(std::stod(m[2]));
        line_map_text = m[1];
      }
    } else {
      ours_failure = o.describe();
    }
    if (have_coz) {
      const RunResult c = run_process({config.coz_profiler, "run", "---", config.bigdwarf}, measured(config, 30.0, scratch));
      if (c.ok())
        coz.push_back(c.wall_s);
      else
        coz_failure = c.describe();
    }
    if (have_runtime) {
      const RunResult d = run_process({config.bigdwarf}, direct);
      if (d.ok())
        coz_direct.push_back(d.wall_s);
      else
        direct_failure = d.describe();
    }
  }

  const double plain_s = median(plain);
  const double ours_over = median(ours) - plain_s;
  const double coz_over = median(coz) - plain_s;
  const double direct_over = median(coz_direct) - plain_s;
  // The target is judged on coz-profiler's runtime alone (the smaller of its
  // two figures), so the Python wrapper's start-up does not flatter ours.
  const double ratio = (have_runtime ? std::min(coz_over, direct_over) : coz_over) / ours_over;
  const double wrapper_ratio = coz_over / ours_over;
  auto ms = [](double s) { return std::isnan(s) ? std::string("n/a") : fmt::format("{:.1f} ms", 1000.0 * s); };
  section.table.rows.push_back({"plain", ms(plain_s), "", "", "", ""});
  section.table.rows.push_back({"ours (`coz run -v`)", ours.empty() ? "failed (" + ours_failure + ")" : ms(median(ours)),
                                ms(ours_over), line_map_ms.empty() ? "n/a" : fmt::format("{:.1f} ms", median(line_map_ms)),
                                "", ""});
  std::string coz_row = have_coz ? (coz.empty() ? "failed (" + coz_failure + ")" : ms(median(coz))) : "not installed";
  section.table.rows.push_back({"coz-profiler (`/usr/bin/coz run`, Python wrapper)", coz_row, ms(coz_over),
                                "(not reported)", std::isnan(wrapper_ratio) ? "n/a" : fmt::format("{:.1f}x", wrapper_ratio),
                                ""});
  if (have_runtime) {
    section.table.rows.push_back(
        {"coz-profiler runtime alone (LD_PRELOAD=" + coz_runtime + ")",
         coz_direct.empty() ? "failed (" + direct_failure + ")" : ms(median(coz_direct)), ms(direct_over),
         "(not reported)", std::isnan(direct_over / ours_over) ? "n/a" : fmt::format("{:.1f}x", direct_over / ours_over), ""});
  }
  section.table.rows.back().back() = std::isnan(ratio) ? "n/a" : pass_miss(ratio >= kStartupTarget);
  section.load_after = load_average();
  section.targets = {{"start-up >= 5x faster than coz-profiler",
                      std::isnan(ratio) ? "n/a" : fmt::format("{:.1f}x ({} vs {} over plain)", ratio, ms(ours_over),
                                                                 ms(ratio * ours_over)),
                      std::isnan(ratio) ? "n/a" : pass_miss(ratio >= kStartupTarget)}};

  const auto sizes = section_sizes(config.bigdwarf);
  auto size_of = [&](const char* name) {
    auto it = sizes.find(name);
    return it == sizes.end() ? std::string("none") : megabytes(it->second);
  };
  section.notes = {
      fmt::format("program: {} ({} on disk; .debug_info {}, .debug_line {}, .debug_str {}; -O1 -gdwarf-3, generated by "
                  "bench/bigdwarf/generate.cpp), run with no arguments: main returns at once.",
                  std::filesystem::path(config.bigdwarf).filename().string(),
                  megabytes(std::filesystem::file_size(config.bigdwarf)), size_of(".debug_info"),
                  size_of(".debug_line"), size_of(".debug_str")),
      "Both profilers read the very same binary (DWARF 3, which coz-profiler needs; ours reads DWARF 2-5).",
      fmt::format("Medians of {} interleaved rounds (plain, ours, coz-profiler with and without its wrapper). "
                  "\"over plain\" = the profiler's start-up and shutdown; the target compares ours with the smaller "
                  "of coz-profiler's two figures.",
                  config.startup_rounds),
      line_map_text.empty() ? "ours printed no line-map timing"
                            : "ours, `coz run -v`: line map: " + line_map_text + " (last run).",
  };
  return section;
}

}  // namespace coz_bench
