#include "coz_report.h"

#include "process.h"

namespace coz_bench {

std::optional<json::Value> coz_report_json(const std::string& coz, const std::string& profile, std::string& error,
                                           int nice) {
  RunOptions options;
  options.nice = nice;
  options.capture_stdout = true;
  options.timeout_s = 120;
  const RunResult r = run_process({coz, "report", "--json", profile}, options);
  if (!r.ok()) {
    error = "coz report --json: " + r.describe();
    return std::nullopt;
  }
  std::optional<json::Value> v = json::parse(r.stdout_text, error);
  if (!v) error = "coz report --json: " + error;
  return v;
}

}  // namespace coz_bench
