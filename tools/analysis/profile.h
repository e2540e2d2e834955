// A profile as read from one or more `.coz` files (ours or Coz's).
// See docs/profile-format.md for the records.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace coz::analysis {

struct ThroughputMeasurement {
  std::string name;
  uint64_t delta = 0;  // visits during the experiment
};

struct LatencyMeasurement {
  std::string name;
  uint64_t arrivals = 0;
  uint64_t departures = 0;
  int64_t difference = 0;        // in flight at the end of the experiment
  double mean_in_flight = -1.0;  // time-averaged in flight; < 0 when the file has none (Coz)
};

/// The requests of a latency point that began and ended in one experiment,
/// by virtual latency (a `latency-histogram` record; docs/analysis.md section 13).
struct LatencyHistogramRecord {
  std::string name;
  std::vector<std::pair<uint32_t, uint64_t>> buckets;  // latency_buckets.h: (bucket, requests), increasing
};

struct Experiment {
  std::string selected;  // "FILE:LINE"
  double speedup = 0.0;  // 0..1
  uint64_t duration_ns = 0;  // effective duration (pauses already subtracted)
  uint64_t selected_samples = 0;
  uint64_t end_ns = 0;   // when it ended, ns after its process's start (`end=`); 0 when the file has none
  // What its process's threads did with the cores (docs/analysis.md section
  // 5.1): `cores` 0 when the record has no valid core figures.
  uint64_t cores = 0;
  double cores_busy = 0.0;
  double waiting_for_core = 0.0;
  // The program's voluntary context switches over it (`voluntary-switches`):
  // hand-offs between its threads and waits (section 5.2); -1 when the record has none.
  int64_t voluntary_switches = -1;
  std::vector<ThroughputMeasurement> throughput;
  std::vector<LatencyMeasurement> latency;
  std::vector<LatencyHistogramRecord> latency_histograms;
};

/// Time blocked at one wait site (a `blocked` record's key).
struct BlockedTime {
  uint64_t time_ns = 0;
  uint64_t count = 0;
};

/// Where warnings[i] was found; line 0 for a problem with the whole file.
struct WarningPlace {
  std::string file;
  uint64_t line = 0;
  std::string message;  // warnings[i] without the "file:line: " prefix
};

/// How the samples were attributed, summed over the processes' `sampling` records.
struct SamplingTotals {
  uint64_t processes = 0;  // `sampling` records read
  uint64_t samples = 0;    // samples taken
  uint64_t in_scope = 0;   // attributed to an in-scope line
  uint64_t lost = 0;       // dropped by the kernel
  // From the records that say their sampling period and the process's CPU
  // time (docs/analysis.md section 1): how much of that time became samples
  // attributed to a line.
  uint64_t timed = 0;          // records with both `period=` and `cpu-time=`
  uint64_t attributed_ns = 0;  // sum of in-scope * period
  uint64_t cpu_time_ns = 0;    // sum of cpu-time
  // No room in the runtime's fixed tables: in-scope samples without a
  // `stack` record, waits without a `blocked` record.
  uint64_t stacks_dropped = 0;
  uint64_t waits_dropped = 0;
  // The machine's steal time during the processes' runs (a hypervisor
  // keeping its vCPUs off their cores), and their wall time times the
  // machine's CPUs: sums over the records that say them.
  uint64_t steal_ns = 0;
  uint64_t machine_ns = 0;
  /// The share of the machine's CPU time a hypervisor took: 0 when unknown.
  double steal_share() const {
    return machine_ns == 0 ? 0.0 : static_cast<double>(steal_ns) / static_cast<double>(machine_ns);
  }
};

/// The samples of one location, and the function it is in.
struct LocationSamples {
  uint64_t count = 0;    // summed over records
  std::string function;  // the last non-empty `function=` of its records; empty if none
};

struct Profile {
  std::vector<Experiment> experiments;
  // "FILE:LINE" -> its samples and function. One map, each location stored
  // once: a long run of a big program writes millions of locations.
  std::map<std::string, LocationSamples> samples;
  std::map<std::string, uint64_t> stacks;   // raw `frames` ("a.cpp:1;b.cpp:2") -> samples
  std::map<std::pair<std::string, std::string>, BlockedTime> blocked;  // (site, kind) -> sums
  uint64_t runtime_ns = 0;                  // summed over processes/runs
  // Why experiments stopped before a process ended (`experiments-stopped`
  // records: "settled", "max-time"), one per record.
  std::vector<std::string> experiments_stopped;
  SamplingTotals sampling;
  std::vector<std::string> warnings;        // "file:line: what was wrong" for each skipped line
  std::vector<WarningPlace> warning_places;  // parallel to warnings
  // A garbage file can have millions of bad lines: past max_warnings they
  // are only counted, so memory stays bounded.
  uint64_t warnings_dropped = 0;
  static constexpr size_t max_warnings = 1000;
};

/// Appends the records read from `in` to `profile`. `source_name` is used in
/// warnings. Accepts our format, Coz's tab-separated format and Coz's
/// JSON-lines form. Never throws on bad input: a malformed line is skipped
/// with a warning.
void read_profile(std::istream& in, const std::string& source_name, Profile& profile);

/// Reads a file; returns false (with a warning) if it cannot be opened.
bool read_profile_file(const std::string& path, Profile& profile);

/// Appends `from` to `into` (runs merge: experiments concatenated, counts summed).
void merge_profile(Profile& into, Profile&& from);

}  // namespace coz::analysis
