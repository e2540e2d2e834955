// What the runtime writes, the analysis library reads back unchanged.
#include "profile_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "profile.h"

namespace coz {
namespace {

ExperimentResult sample_experiment() {
  ExperimentResult e;
  e.selected = "/src/app/main.cpp:42";
  e.speedup = 0.35;
  e.duration_ns = 51'234'567;
  e.selected_samples = 12;
  e.pid = 4242;
  PointResult t;
  t.name = "main.cpp:60";
  t.delta = 118;
  PointResult l;
  l.name = "request";
  l.latency = true;
  l.arrivals = 40;
  l.departures = 39;
  l.difference = 1;
  l.mean_in_flight = 1.25;
  e.points = {t, l};
  return e;
}

TEST(ProfileWriter, ExperimentFormatIsCozCompatible) {
  std::string text = ProfileWriter::format_experiment(sample_experiment());
  EXPECT_EQ(text,
            "experiment\tselected=/src/app/main.cpp:42\tspeedup=0.35\tduration=51234567\tselected-samples=12\tpid=4242\n"
            "throughput-point\tname=main.cpp:60\tdelta=118\n"
            "latency-point\tname=request\tarrivals=40\tdepartures=39\tdifference=1\tmean-in-flight=1.25\n");
}

TEST(ProfileWriter, NamesCannotBreakTheRecordSyntax) {
  ExperimentResult e = sample_experiment();
  e.points[0].name = "bad\tname\nwith breaks";
  std::string text = ProfileWriter::format_experiment(e);
  EXPECT_NE(text.find("name=bad name with breaks\tdelta=118\n"), std::string::npos);
}

TEST(ProfileWriter, RoundTripThroughTheReader) {
  char path[] = "/tmp/coz-writer-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    ProfileWriter w;
    std::string error;
    ASSERT_TRUE(w.open(path, error)) << error;
    w.write_startup(123, 10, 1, "./app --flag");
    w.write_experiment(sample_experiment());
    w.write_samples({{"/src/app/main.cpp:42", 87, "main"}, {"/src/app/main.cpp:43", 3, ""}});
    w.write_samples({{"/src/app/main.cpp:42", 13, "main"}});
    w.write_runtime(999);
  }
  analysis::Profile p;
  ASSERT_TRUE(analysis::read_profile_file(path, p));
  unlink(path);
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
  ASSERT_EQ(p.experiments.size(), 1u);
  const auto& e = p.experiments[0];
  EXPECT_EQ(e.selected, "/src/app/main.cpp:42");
  EXPECT_DOUBLE_EQ(e.speedup, 0.35);
  EXPECT_EQ(e.duration_ns, 51'234'567u);
  EXPECT_EQ(e.selected_samples, 12u);
  ASSERT_EQ(e.throughput.size(), 1u);
  EXPECT_EQ(e.throughput[0].name, "main.cpp:60");
  EXPECT_EQ(e.throughput[0].delta, 118u);
  ASSERT_EQ(e.latency.size(), 1u);
  EXPECT_EQ(e.latency[0].arrivals, 40u);
  EXPECT_EQ(e.latency[0].departures, 39u);
  EXPECT_EQ(e.latency[0].difference, 1);
  EXPECT_DOUBLE_EQ(e.latency[0].mean_in_flight, 1.25);
  EXPECT_EQ(p.samples.at("/src/app/main.cpp:42").count, 100u);
  EXPECT_EQ(p.samples.at("/src/app/main.cpp:43").count, 3u);
  EXPECT_EQ(p.runtime_ns, 999u);
}

using Format = ProfileWriter::Format;

// Coz's records exactly as Coz writes them in JSON Lines (libcoz/profiler.cpp:
// no spaces, `selected_samples`, the speedup with two decimals as its stream
// is set to), our
// keys after Coz's with '_' for '-'.
TEST(ProfileWriter, JsonLinesAreCozs) {
  EXPECT_EQ(ProfileWriter::format_experiment(sample_experiment(), Format::CozJsonl),
            R"({"type":"experiment","selected":"/src/app/main.cpp:42","speedup":0.35,"duration":51234567,"selected_samples":12,"pid":4242})" "\n"
            R"({"type":"throughput-point","name":"main.cpp:60","delta":118})" "\n"
            R"({"type":"latency-point","name":"request","arrivals":40,"departures":39,"difference":1,"mean_in_flight":1.25})" "\n");
  EXPECT_EQ(ProfileWriter::format_startup(123, 10, 1, "./app --flag", Format::CozJsonl),
            R"({"type":"startup","time":123})" "\n"
            R"({"type":"process","pid":10,"parent":1,"command":"./app --flag"})" "\n");
  EXPECT_EQ(ProfileWriter::format_samples({{"/src/a.c:3", 87, "main"}, {"/src/a.c:4", 1, ""}}, Format::CozJsonl),
            R"({"type":"samples","location":"/src/a.c:3","count":87,"function":"main"})" "\n"
            R"({"type":"samples","location":"/src/a.c:4","count":1})" "\n");
  ExperimentResult e = sample_experiment();
  e.points.clear();
  e.pid = 0;
  for (auto [speedup, text] : {std::pair{0.0, "0.00"}, std::pair{0.5, "0.50"}, std::pair{1.0, "1.00"}, std::pair{0.05, "0.05"}}) {
    e.speedup = speedup;
    EXPECT_NE(ProfileWriter::format_experiment(e, Format::CozJsonl).find(std::string(",\"speedup\":") + text + ","),
              std::string::npos) << text;
  }
  e.end_ns = 77;
  e.cores = 4;
  e.cores_busy = 1.5;
  e.waiting_for_core = 0.25;
  EXPECT_NE(ProfileWriter::format_experiment(e, Format::CozJsonl)
                .find(R"(,"end":77,"cores":4,"cores_busy":1.500,"waiting_for_core":0.250})"),
            std::string::npos);
  e.voluntary_switches = 1234;
  EXPECT_NE(ProfileWriter::format_experiment(e, Format::CozJsonl).find(R"(,"waiting_for_core":0.250,"voluntary_switches":1234})"),
            std::string::npos);
  EXPECT_NE(ProfileWriter::format_experiment(e, Format::Coz).find("\twaiting-for-core=0.250\tvoluntary-switches=1234\n"),
            std::string::npos);
  ProfileWriter::SamplingTotals t;
  t.samples = 10;
  t.in_scope = 9;
  t.walks = {{"unwound", 8}, {"stopped-no-cfi", 1}};
  t.steal_ns = 5;
  t.machine_ns = 100;
  EXPECT_EQ(ProfileWriter::format_sampling(t, Format::CozJsonl),
            R"({"type":"sampling","samples":10,"in_scope":9,"lost":0,"unwound":8,"stopped_no_cfi":1,"steal":5,"machine_time":100})" "\n");
}

// JSON strings keep every character (the tab form turns tabs and newlines
// into spaces); the reader gives them back.
TEST(ProfileWriter, JsonStringsAreEscapedAndReadBack) {
  ExperimentResult e = sample_experiment();
  e.points.resize(1);
  e.points[0].name = "q\"uote\\back\tslash\nnew\x01 \xC3\xA9";
  std::string text = ProfileWriter::format_experiment(e, Format::CozJsonl);
  EXPECT_NE(text.find(R"("name":"q\"uote\\back\tslash\nnew\u0001 )" "\xC3\xA9\""), std::string::npos) << text;
  analysis::Profile p;
  std::istringstream in(text);
  analysis::read_profile(in, "p.jsonl", p);
  ASSERT_TRUE(p.warnings.empty()) << p.warnings.front();
  ASSERT_EQ(p.experiments.size(), 1u);
  ASSERT_EQ(p.experiments[0].throughput.size(), 1u);
  EXPECT_EQ(p.experiments[0].throughput[0].name, e.points[0].name);
}

// Every record the runtime writes, in both forms: the reader finds the same profile.
std::string every_record(Format format) {
  std::string out = ProfileWriter::format_startup(123, 10, 1, "./app", format);
  ExperimentResult e = sample_experiment();
  e.end_ns = 5000;
  e.cores = 2;
  e.cores_busy = 1.25;
  e.waiting_for_core = 0.125;
  e.voluntary_switches = 4321;
  out += ProfileWriter::format_experiment(e, format);
  e.speedup = 0;
  e.voluntary_switches = -1;  // not measured: no key
  e.points[0].delta = 90;
  out += ProfileWriter::format_experiment(e, format);
  out += ProfileWriter::format_samples({{"/src/app/main.cpp:42", 87, "main"}, {"/src/app/main.cpp:43", 3, ""}}, format);
  out += ProfileWriter::format_stacks({{"/src/app/main.cpp:10;/src/app/main.cpp:42;memcpy [libc.so.6]", 7}}, format);
  out += ProfileWriter::format_blocked({{"/src/app/main.cpp:50", "mutex", 1000, 4}}, format);
  ProfileWriter::SamplingTotals t;
  t.samples = 100;
  t.in_scope = 90;
  t.lost = 1;
  t.period_ns = 1'000'000;
  t.cpu_time_ns = 120'000'000;
  t.walks = {{"unwound", 80}, {"stopped-no-cfi", 10}};
  t.stacks_dropped = 2;
  t.waits_dropped = 3;
  t.steal_ns = 5;
  t.machine_ns = 1000;
  t.pid = 10;
  out += ProfileWriter::format_sampling(t, format);
  return out;
}

std::string describe(const analysis::Profile& p) {
  std::string d;
  for (const auto& e : p.experiments) {
    d += fmt::format("e {} {} {} {} {} {} {} {} {}\n", e.selected, e.speedup, e.duration_ns, e.selected_samples, e.end_ns,
                     e.cores, e.cores_busy, e.waiting_for_core, e.voluntary_switches);
    for (const auto& t : e.throughput) d += fmt::format(" t {} {}\n", t.name, t.delta);
    for (const auto& l : e.latency)
      d += fmt::format(" l {} {} {} {} {}\n", l.name, l.arrivals, l.departures, l.difference, l.mean_in_flight);
  }
  for (const auto& [k, s] : p.samples) d += fmt::format("s {} {} {}\n", k, s.count, s.function);
  for (const auto& [k, n] : p.stacks) d += fmt::format("k {} {}\n", k, n);
  for (const auto& [k, b] : p.blocked) d += fmt::format("b {} {} {} {}\n", k.first, k.second, b.time_ns, b.count);
  const auto& s = p.sampling;
  d += fmt::format("p {} {} {} {} {} {} {} {} {} {} {}\n", s.processes, s.samples, s.in_scope, s.lost, s.timed,
                   s.attributed_ns, s.cpu_time_ns, s.stacks_dropped, s.waits_dropped, s.steal_ns, s.machine_ns);
  d += fmt::format("r {} w {}\n", p.runtime_ns, p.warnings.size());
  return d;
}

TEST(ProfileWriter, BothFormsReadBackTheSame) {
  analysis::Profile tab, json;
  std::istringstream tab_in(every_record(Format::Coz)), json_in(every_record(Format::CozJsonl));
  analysis::read_profile(tab_in, "p.coz", tab);
  analysis::read_profile(json_in, "p.jsonl", json);
  EXPECT_TRUE(json.warnings.empty()) << json.warnings.front();
  EXPECT_EQ(tab.experiments.size(), 2u);
  EXPECT_EQ(tab.sampling.processes, 1u);
  EXPECT_EQ(describe(json), describe(tab));
}

TEST(ProfileWriter, AppendsWithoutTruncating) {
  char path[] = "/tmp/coz-writer-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "runtime\ttime=1\n", 15), 15);
  close(fd);
  {
    ProfileWriter w;
    std::string error;
    ASSERT_TRUE(w.open(path, error));
    w.write_runtime(2);
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  unlink(path);
  EXPECT_EQ(ss.str(), "runtime\ttime=1\nruntime\ttime=2\n");
}

// The profiler thread and an exiting thread may write at once (the last
// records of a run): the deferred startup record and the lazily created file
// are the writer's own state, handed over exactly once.
TEST(ProfileWriter, ThreadsWritingAtOnceShareOneStartupRecord) {
  constexpr int threads = 4, records = 200, rounds = 100;
  for (int round = 0; round < rounds; ++round) {
    char dir[] = "/tmp/coz-writer-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string path = std::string(dir) + "/profile.coz";
    {
      ProfileWriter w;
      w.open_when_written(path);
      w.defer_startup(123, 10, 1, "./app");
      std::vector<std::thread> writers;
      for (int t = 0; t < threads; ++t) {
        writers.emplace_back([&w, t] {
          for (int i = 0; i < records; ++i) w.write_runtime(static_cast<uint64_t>(t) * records + i);
        });
      }
      for (auto& th : writers) th.join();
    }
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    unlink(path.c_str());
    rmdir(dir);
    std::string text = ss.str();
    size_t startups = 0, runtimes = 0;
    std::set<std::string> seen;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("startup\t", 0) == 0) ++startups;
      if (line.rfind("runtime\ttime=", 0) == 0) {
        ++runtimes;
        EXPECT_TRUE(seen.insert(line).second) << "written twice: " << line;
      }
    }
    ASSERT_EQ(startups, 1u) << "round " << round;
    ASSERT_EQ(runtimes, static_cast<size_t>(threads * records)) << "round " << round;
    ASSERT_EQ(text.rfind("startup\t", 0), 0u) << "the startup record is not first, round " << round;
  }
}

TEST(ProfileWriter, SamplingRecordSaysWhatTheTablesDropped) {
  ProfileWriter::SamplingTotals t;
  t.samples = 10;
  t.in_scope = 9;
  EXPECT_EQ(ProfileWriter::format_sampling(t), "sampling\tsamples=10\tin-scope=9\tlost=0\n") << "nothing dropped, no key";
  t.stacks_dropped = 4;
  t.waits_dropped = 2;
  EXPECT_EQ(ProfileWriter::format_sampling(t),
            "sampling\tsamples=10\tin-scope=9\tlost=0\tstacks-dropped=4\twaits-dropped=2\n");
}

TEST(ProfileWriter, SamplingRecordSaysTheMachinesStealTime) {
  ProfileWriter::SamplingTotals t;
  t.samples = 10;
  t.in_scope = 9;
  t.steal_ns = 0;
  t.machine_ns = 8'000'000'000;
  EXPECT_EQ(ProfileWriter::format_sampling(t), "sampling\tsamples=10\tin-scope=9\tlost=0\n") << "no steal, no key";
  t.steal_ns = 120'000'000;
  EXPECT_EQ(ProfileWriter::format_sampling(t),
            "sampling\tsamples=10\tin-scope=9\tlost=0\tsteal=120000000\tmachine-time=8000000000\n");
}

TEST(ProfileWriter, OpenFailureIsReportedNotThrown) {
  ProfileWriter w;
  std::string error;
  EXPECT_FALSE(w.open("/nonexistent-dir/profile.coz", error));
  EXPECT_NE(error.find("/nonexistent-dir/profile.coz"), std::string::npos);
  w.write_runtime(1);  // harmless when closed
}

// A file system that fills up, then gets room again: a stand-in for write(2)
// appending to `disk` while `room` lasts (a short write at the boundary, as
// the kernel does, then ENOSPC).
struct SmallDisk {
  static inline std::string disk;
  static inline size_t room = 0;
  static ssize_t write(int, const void* data, size_t size) {
    if (room == 0) return errno = ENOSPC, -1;
    size_t n = std::min(size, room);
    disk.append(static_cast<const char*>(data), n);
    room -= n;
    return static_cast<ssize_t>(n);
  }
};

std::string temporary_profile() {
  char path[] = "/tmp/coz-writer-test-XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  return path;
}

// A record cut by a full disk is ended with `cut=write-failed` at the next
// write that succeeds, so no record is glued to half of another; records
// that did not fit are lost; the reader skips the cut one, with a warning,
// and reads every other record whole.
TEST(ProfileWriter, AFullDiskCutsNoRecordIntoAnother) {
  const std::string path = temporary_profile();
  ProfileWriter w(&SmallDisk::write);
  std::string error;
  ASSERT_TRUE(w.open(path, error)) << error;
  SmallDisk::disk.clear();
  SmallDisk::room = 1000;
  w.write_runtime(1);                                 // fits
  w.write_samples({{"a.c:1", 12345, "f"}, {"a.c:2", 1, "f"}});
  const std::string before = SmallDisk::disk;
  SmallDisk::room = 20;                               // the samples block is cut in its first record
  w.write_samples({{"b.c:1", 777777, "g"}, {"b.c:2", 5, "g"}});
  w.write_runtime(2);                                 // ENOSPC: lost
  SmallDisk::room = 1000;                             // room again
  w.write_runtime(3);
  w.write_experiment(sample_experiment());
  unlink(path.c_str());

  const std::string& text = SmallDisk::disk;
  ASSERT_EQ(text.compare(0, before.size(), before), 0);
  EXPECT_EQ(text.substr(before.size()), std::string("samples\tlocation=b.c") + ProfileWriter::cut_marker +
                                            "runtime\ttime=3\n" + ProfileWriter::format_experiment(sample_experiment()));
  analysis::Profile p;
  std::istringstream in(text);
  analysis::read_profile(in, "p.coz", p);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("p.coz:4: record cut short by a failed write"), std::string::npos) << p.warnings[0];
  EXPECT_EQ(p.samples.count("b.c:1"), 0u);
  EXPECT_EQ(p.runtime_ns, 4u);
  EXPECT_EQ(p.experiments.size(), 1u);
}

// The same in JSON Lines: the marker ends the cut line (whatever the cut
// left, the line is then not JSON), and the reader skips it with the same warning.
TEST(ProfileWriter, AFullDiskCutsNoJsonLineIntoAnother) {
  const std::string path = temporary_profile();
  ProfileWriter w(&SmallDisk::write);
  w.set_format(Format::CozJsonl);
  std::string error;
  ASSERT_TRUE(w.open(path, error)) << error;
  SmallDisk::disk.clear();
  SmallDisk::room = 1000;
  w.write_runtime(1);
  SmallDisk::room = 25;  // into the first line of the experiment
  w.write_experiment(sample_experiment());
  SmallDisk::room = 1000;
  w.write_runtime(3);
  unlink(path.c_str());
  EXPECT_EQ(SmallDisk::disk, std::string(R"({"type":"runtime","time":1})" "\n" R"({"type":"experiment","sel)") +
                                 ProfileWriter::cut_marker + R"({"type":"runtime","time":3})" "\n");
  analysis::Profile p;
  std::istringstream in(SmallDisk::disk);
  analysis::read_profile(in, "p.jsonl", p);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("p.jsonl:2: record cut short by a failed write"), std::string::npos) << p.warnings[0];
  EXPECT_EQ(p.runtime_ns, 4u);
  EXPECT_TRUE(p.experiments.empty());
}

// Records after the cut one in the same block get their try: a short write
// that ends right after a record's newline cuts nothing.
TEST(ProfileWriter, AShortWriteAtARecordBoundaryCutsNothing) {
  const std::string path = temporary_profile();
  ProfileWriter w(&SmallDisk::write);
  std::string error;
  ASSERT_TRUE(w.open(path, error)) << error;
  SmallDisk::disk.clear();
  const std::string first = "samples\tlocation=a.c:1\tcount=1\n";
  SmallDisk::room = first.size();
  w.write_samples({{"a.c:1", 1, ""}, {"a.c:2", 2, ""}});
  SmallDisk::room = 1000;
  w.write_runtime(5);
  unlink(path.c_str());
  EXPECT_EQ(SmallDisk::disk, first + "runtime\ttime=5\n");
}

// Never through a symbolic link (one planted in a shared directory), never
// a FIFO (the open would block until a reader came), never a device.
TEST(ProfileWriter, OpensOnlyARegularFileAndNeverFollowsALink) {
  char dir[] = "/tmp/coz-writer-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string victim = std::string(dir) + "/victim", link = std::string(dir) + "/link";
  const std::string fifo = std::string(dir) + "/fifo";
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  for (const std::string& path : {link, fifo, std::string("/dev/null")}) {
    ProfileWriter w;
    std::string error;
    EXPECT_FALSE(w.open(path, error)) << path;
    EXPECT_NE(error.find(path), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
    w.write_runtime(1);
  }
  std::ifstream in(victim);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "precious\n");
  for (const std::string& path : {link, fifo, victim}) unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace coz
