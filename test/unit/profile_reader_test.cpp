// Tests of read_profile: both text forms, and that bad input is skipped with
// a "NAME:LINENO: reason" warning instead of being thrown, crashed or hung on.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "analysis.h"
#include "analysis_json.h"
#include "profile.h"

namespace coz::analysis {
namespace {

Profile read(const std::string& text, const std::string& name = "p.coz") {
  std::istringstream in(text);
  Profile p;
  read_profile(in, name, p);
  return p;
}

TEST(ProfileReader, ReadsTabSeparatedRecords) {
  Profile p = read(
      "startup\ttime=17\n"
      "experiment\tselected=/src/a.cpp:42\tspeedup=0.35\tduration=51234567\tselected-samples=12\n"
      "throughput-point\tname=/src/a.cpp:60\tdelta=118\n"
      "latency-point\tname=request\tarrivals=40\tdepartures=39\tdifference=1\n"
      "samples\tlocation=/src/a.cpp:42\tcount=87\n"
      "samples\tlocation=/src/a.cpp:42\tcount=13\n"
      "runtime\ttime=1000\n"
      "runtime\ttime=234\n");
  EXPECT_TRUE(p.warnings.empty());
  ASSERT_EQ(p.experiments.size(), 1u);
  const Experiment& e = p.experiments[0];
  EXPECT_EQ(e.selected, "/src/a.cpp:42");
  EXPECT_DOUBLE_EQ(e.speedup, 0.35);
  EXPECT_EQ(e.duration_ns, 51234567u);
  EXPECT_EQ(e.selected_samples, 12u);
  ASSERT_EQ(e.throughput.size(), 1u);
  EXPECT_EQ(e.throughput[0].name, "/src/a.cpp:60");
  EXPECT_EQ(e.throughput[0].delta, 118u);
  ASSERT_EQ(e.latency.size(), 1u);
  EXPECT_EQ(e.latency[0].name, "request");
  EXPECT_EQ(e.latency[0].arrivals, 40u);
  EXPECT_EQ(e.latency[0].departures, 39u);
  EXPECT_EQ(e.latency[0].difference, 1);
  EXPECT_LT(e.latency[0].mean_in_flight, 0.0) << "Coz files have no mean-in-flight";
  EXPECT_EQ(p.samples.at("/src/a.cpp:42").count, 100u) << "samples records sum per location";
  EXPECT_EQ(p.runtime_ns, 1234u) << "runtime records sum";
}

TEST(ProfileReader, ProgressPointIsASynonymOfThroughputPoint) {
  Profile p = read(
      "experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\n"
      "progress-point\tname=x\ttype=source\tdelta=3\n");
  EXPECT_TRUE(p.warnings.empty());
  ASSERT_EQ(p.experiments.size(), 1u);
  ASSERT_EQ(p.experiments[0].throughput.size(), 1u);
  EXPECT_EQ(p.experiments[0].throughput[0].delta, 3u);
}

TEST(ProfileReader, PointRecordsAttachToTheMostRecentExperiment) {
  Profile p = read(
      "experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\n"
      "throughput-point\tname=x\tdelta=1\n"
      "experiment\tselected=a.c:2\tspeedup=0.5\tduration=10\tselected-samples=0\n"
      "throughput-point\tname=x\tdelta=2\n"
      "throughput-point\tname=y\tdelta=3\n");
  ASSERT_EQ(p.experiments.size(), 2u);
  EXPECT_EQ(p.experiments[0].throughput.size(), 1u);
  ASSERT_EQ(p.experiments[1].throughput.size(), 2u);
  EXPECT_EQ(p.experiments[1].throughput[1].name, "y");
}

TEST(ProfileReader, OurMeanInFlightKey) {
  Profile p = read(
      "experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\n"
      "latency-point\tname=r\tarrivals=4\tdepartures=4\tdifference=0\tmean-in-flight=2.5\n"
      "latency-point\tname=s\tarrivals=4\tdepartures=4\tmean-in-flight=0.5\n");
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
  ASSERT_EQ(p.experiments.at(0).latency.size(), 2u);
  EXPECT_DOUBLE_EQ(p.experiments[0].latency[0].mean_in_flight, 2.5);
  EXPECT_DOUBLE_EQ(p.experiments[0].latency[1].mean_in_flight, 0.5);
}

TEST(ProfileReader, UnknownRecordTypesAndKeysAreIgnoredSilently) {
  Profile p = read(
      "process\tpid=1\tparent=0\tcommand=x\n"
      "callstack\tframes=a;b;c\n"
      "experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\tpid=9\tnew-key=zz\n"
      "throughput-point\tname=x\tdelta=1\tcolour=blue\n");
  EXPECT_TRUE(p.warnings.empty());
  ASSERT_EQ(p.experiments.size(), 1u);
  EXPECT_EQ(p.experiments[0].throughput.size(), 1u);
}

TEST(ProfileReader, ReadsCozJsonLines) {
  Profile p = read(
      "{\"type\":\"startup\",\"time\":1}\n"
      "{\"type\":\"experiment\",\"selected\":\"a.cpp:3\",\"speedup\":0.2,\"duration\":123,"
      "\"selected-samples\":4}\n"
      "  { \"type\" : \"throughput-point\" , \"name\" : \"q\\\"x\\u00e9\" , \"delta\" : 7 }\n"
      "{\"type\":\"latency-point\",\"name\":\"r\",\"arrivals\":5,\"departures\":4,\"difference\":-1,"
      "\"extra\":{\"nested\":[1,2,\"]\"]},\"flag\":true}\n"
      "{\"type\":\"samples\",\"location\":\"a.cpp:3\",\"count\":1.2e1}\n");
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
  ASSERT_EQ(p.experiments.size(), 1u);
  const Experiment& e = p.experiments[0];
  EXPECT_EQ(e.selected, "a.cpp:3");
  EXPECT_DOUBLE_EQ(e.speedup, 0.2);
  EXPECT_EQ(e.duration_ns, 123u);
  EXPECT_EQ(e.selected_samples, 4u);
  ASSERT_EQ(e.throughput.size(), 1u);
  EXPECT_EQ(e.throughput[0].name, "q\"x\xc3\xa9");
  EXPECT_EQ(e.throughput[0].delta, 7u);
  ASSERT_EQ(e.latency.size(), 1u);
  EXPECT_EQ(e.latency[0].difference, -1);
  EXPECT_EQ(p.samples.at("a.cpp:3").count, 12u);
}

TEST(ProfileReader, MalformedJsonLinesAreSkippedWithWarnings) {
  Profile p = read(
      "{\"type\":\"experiment\",\"selected\":\"a.cpp:3\",\"speedup\":0.2,\"duration\":123,\"selected-samples\":4}\n"
      "{\"type\":\"throughput-point\",\"name\":\"q\",\"delta\":7\n"
      "{\"name\":\"q\",\"delta\":7}\n"
      "{\"type\":\"throughput-point\",\"name\":\"q\",\"delta\":\"seven\"}\n");
  ASSERT_EQ(p.warnings.size(), 3u);
  EXPECT_EQ(p.warnings[0].rfind("p.coz:2: malformed JSON", 0), 0u) << p.warnings[0];
  EXPECT_EQ(p.warnings[1].rfind("p.coz:3: ", 0), 0u) << p.warnings[1];
  EXPECT_NE(p.warnings[1].find("type"), std::string::npos) << p.warnings[1];
  EXPECT_EQ(p.warnings[2].rfind("p.coz:4: ", 0), 0u) << p.warnings[2];
  EXPECT_TRUE(p.experiments.at(0).throughput.empty());
}

// Coz writes its keys with '_' (selected_samples), and its releases 0.2.4
// and 0.2.5 the point types too (throughput_point, latency_point).
TEST(ProfileReader, CozsUnderscoreKeysAndTypes) {
  Profile p = read(
      R"({"type":"experiment","selected":"/src/a.cpp:3","speedup":0.35,"duration":100,"selected_samples":4})" "\n"
      R"({"type":"throughput_point","name":"a.cpp:9","delta":7})" "\n"
      R"({"type":"latency_point","name":"req","arrivals":5,"departures":4,"difference":1})" "\n"
      R"({"type":"experiment","selected":"/src/a.cpp:3","speedup":0.00,"duration":100,"selected_samples":5})" "\n"
      R"({"type":"throughput-point","name":"a.cpp:9","delta":6})" "\n"
      R"({"type":"latency-point","name":"req","arrivals":5,"departures":5,"difference":0,"mean_in_flight":0.5})" "\n");
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
  ASSERT_EQ(p.experiments.size(), 2u);
  EXPECT_EQ(p.experiments[0].selected_samples, 4u);
  ASSERT_EQ(p.experiments[0].throughput.size(), 1u);
  EXPECT_EQ(p.experiments[0].throughput[0].delta, 7u);
  ASSERT_EQ(p.experiments[0].latency.size(), 1u);
  EXPECT_EQ(p.experiments[1].throughput[0].delta, 6u);
  EXPECT_DOUBLE_EQ(p.experiments[1].latency[0].mean_in_flight, 0.5);
}

// Processes appending to one profile may write different forms: each
// experiment block is whole in one form, and lines are read one by one.
TEST(ProfileReader, MixedTabAndJsonLines) {
  Profile p = read(
      "startup\ttime=1\n"
      R"({"type":"startup","time":2})" "\n"
      "experiment\tselected=/src/a.cpp:3\tspeedup=0.20\tduration=100\tselected-samples=4\n"
      "throughput-point\tname=a.cpp:9\tdelta=7\n"
      R"({"type":"experiment","selected":"/src/b.cpp:5","speedup":0.40,"duration":200,"selected_samples":2})" "\n"
      R"({"type":"throughput-point","name":"a.cpp:9","delta":11})" "\n"
      "samples\tlocation=/src/a.cpp:3\tcount=10\n"
      R"({"type":"samples","location":"/src/a.cpp:3","count":5})" "\n"
      R"({"type":"process","pid":7,"parent":1,"command":"./b"})" "\n"
      R"({"type":"some-later-record","x":1})" "\n"
      "runtime\ttime=1000\n"
      R"({"type":"runtime","time":500})" "\n");
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
  ASSERT_EQ(p.experiments.size(), 2u);
  EXPECT_EQ(p.experiments[0].selected, "/src/a.cpp:3");
  EXPECT_EQ(p.experiments[0].throughput.at(0).delta, 7u);
  EXPECT_EQ(p.experiments[1].selected, "/src/b.cpp:5");
  EXPECT_EQ(p.experiments[1].throughput.at(0).delta, 11u);
  EXPECT_EQ(p.samples.at("/src/a.cpp:3").count, 15u);
  EXPECT_EQ(p.runtime_ns, 1500u);
}

// A record cut by a failed write is ended with the tab form's marker in a
// JSON Lines profile too: skipped with the same warning, whatever the cut left.
TEST(ProfileReader, CutJsonLinesAreSkipped) {
  Profile p = read(
      "experiment\tselected=/src/b.cpp:1\tspeedup=0.00\tduration=1\tselected-samples=1\n"
      R"({"type":"experiment","selected":"/src/a.cpp:3","spe)" "\tcut=write-failed\n"
      R"({"type":"throughput-point","name":"a.cpp:9","delta":7})" "\n"
      R"({"type":"runtime","time":12})" "\tcut=write-failed\n"
      R"({"type":"samples","location":"/src/a.cpp:3","count":1)" "\tcut=write-failed\n"
      R"({"type":"runtime","time":3})" "\n");
  ASSERT_EQ(p.warnings.size(), 4u);
  EXPECT_EQ(p.warnings[0], "p.coz:2: record cut short by a failed write (disk full?), skipped");
  // Its point is not credited to the experiment before the cut one.
  EXPECT_EQ(p.warnings[1], "p.coz:3: point record after a skipped experiment, skipped");
  EXPECT_EQ(p.warnings[2], "p.coz:4: record cut short by a failed write (disk full?), skipped");
  EXPECT_EQ(p.warnings[3], "p.coz:5: record cut short by a failed write (disk full?), skipped");
  ASSERT_EQ(p.experiments.size(), 1u);
  EXPECT_TRUE(p.experiments[0].throughput.empty());
  EXPECT_TRUE(p.samples.empty());
  EXPECT_EQ(p.runtime_ns, 3u);
}

// The same records in both forms give the same analysis, byte for byte of
// `coz report --json`.
TEST(ProfileReader, BothFormsGiveTheSameAnalysis) {
  std::string tab, json;
  std::mt19937 rng(7);
  for (int i = 0; i < 120; ++i) {
    const char* line = i % 3 == 0 ? "/src/a.cpp:3" : (i % 3 == 1 ? "/src/b.cpp:5" : "/src/c.cpp:8");
    int speedup = static_cast<int>(rng() % 11) * 5;
    uint64_t duration = 100'000'000 + rng() % 1000;
    uint64_t delta = 100 + rng() % 20 + (i % 3 == 0 ? static_cast<uint64_t>(speedup) : 0);
    uint64_t arrivals = 50 + rng() % 5;
    tab += fmt::format("experiment\tselected={}\tspeedup={:.2f}\tduration={}\tselected-samples={}\tcores=4\tcores-busy=1.500\twaiting-for-core=0.000\n",
                       line, speedup / 100.0, duration, 10 + i % 7);
    tab += fmt::format("throughput-point\tname=main.cpp:9\tdelta={}\n", delta);
    tab += fmt::format("latency-point\tname=req\tarrivals={}\tdepartures={}\tdifference=1\tmean-in-flight=2.5\n",
                       arrivals, arrivals - 1);
    json += fmt::format(R"({{"type":"experiment","selected":"{}","speedup":{:.2f},"duration":{},"selected_samples":{},"cores":4,"cores_busy":1.500,"waiting_for_core":0.000}})" "\n",
                        line, speedup / 100.0, duration, 10 + i % 7);
    json += fmt::format(R"({{"type":"throughput-point","name":"main.cpp:9","delta":{}}})" "\n", delta);
    json += fmt::format(R"({{"type":"latency-point","name":"req","arrivals":{},"departures":{},"difference":1,"mean_in_flight":2.5}})" "\n",
                        arrivals, arrivals - 1);
  }
  tab += "samples\tlocation=/src/a.cpp:3\tcount=500\tfunction=f\nsampling\tsamples=900\tin-scope=800\tlost=0\tperiod=1000000\tcpu-time=1000000000\nruntime\ttime=13000000000\n";
  json += R"({"type":"samples","location":"/src/a.cpp:3","count":500,"function":"f"})" "\n"
          R"({"type":"sampling","samples":900,"in_scope":800,"lost":0,"period":1000000,"cpu_time":1000000000})" "\n"
          R"({"type":"runtime","time":13000000000})" "\n";
  Profile from_tab = read(tab), from_json = read(json);
  EXPECT_TRUE(from_json.warnings.empty()) << from_json.warnings.front();
  ASSERT_EQ(from_json.experiments.size(), 120u);
  EXPECT_EQ(to_json(analyze(from_json)), to_json(analyze(from_tab)));
}

// A profile Coz itself wrote (test/fixtures/coz-jsonl/README): every
// experiment is read, and the analysis finds both loops of the toy program.
TEST(ProfileReader, ReadsAProfileCozWrote) {
  const std::string path = std::string(COZ_FIXTURES_DIR) + "/coz-jsonl/toy.jsonl";
  Profile p;
  ASSERT_TRUE(read_profile_file(path, p));
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
  std::ifstream in(path);
  size_t experiment_lines = 0, point_lines = 0;
  for (std::string line; std::getline(in, line);) {
    experiment_lines += line.find(R"("type":"experiment")") != std::string::npos;
    point_lines += line.find(R"("type":"throughput-point")") != std::string::npos;
  }
  ASSERT_GT(experiment_lines, 20u);
  EXPECT_EQ(p.experiments.size(), experiment_lines);
  size_t points = 0;
  for (const auto& e : p.experiments) {
    EXPECT_GT(e.selected_samples, 0u) << e.selected;
    EXPECT_GT(e.duration_ns, 0u);
    points += e.throughput.size();
  }
  EXPECT_EQ(points, point_lines);
  EXPECT_GT(p.samples.size(), 1u);
  EXPECT_GT(p.runtime_ns, 0u);
  Analysis a = analyze(p);
  ASSERT_EQ(a.points.size(), 1u);
  EXPECT_EQ(a.points[0].name, "toy.cpp:49");
  std::set<std::string> lines;
  for (const auto& e : a.effects) lines.insert(e.line);
  EXPECT_TRUE(lines.count("/tmp/coz-run/toy/toy.cpp:18")) << "a()'s loop";
  EXPECT_TRUE(lines.count("/tmp/coz-run/toy/toy.cpp:23")) << "b()'s loop";
}

TEST(ProfileReader, MalformedLinesAreSkippedWithFileAndLine) {
  Profile p = read(
      "experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\n"    // 1 ok
      "throughput-point\tname=x\tdelta=1\n"                                          // 2 ok
      "experiment\tspeedup=0\tduration=10\tselected-samples=0\n"                     // 3 no selected
      "experiment\tselected=a.c:1\tspeedup=zero\tduration=10\tselected-samples=0\n"  // 4 bad speedup
      "experiment\tselected=a.c:1\tspeedup=0.5\tduration=-10\tselected-samples=0\n"  // 5 negative
      "experiment\tselected=a.c:1\tspeedup=1.5\tduration=10\tselected-samples=0\n"   // 6 range
      "experiment\tselected=a.c:1\tspeedup=-0.1\tduration=10\tselected-samples=0\n"  // 7 range
      "throughput-point\tname=x\tdelta=12x\n"                                        // 8 bad delta
      "samples\tlocation=a.c:1\n"                                                    // 9 no count
      "experiment\tselected=a.c:2\tspeedup=0.25\tduration=10\tselected-samples=0\n"  // 10 ok
      "throughput-point\tname=x\tdelta=4\n",                                         // 11 ok
      "prof.coz");
  ASSERT_EQ(p.warnings.size(), 7u);
  const char* expected_prefix[] = {"prof.coz:3: ", "prof.coz:4: ", "prof.coz:5: ", "prof.coz:6: ",
                                   "prof.coz:7: ", "prof.coz:8: ", "prof.coz:9: "};
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(p.warnings[i].rfind(expected_prefix[i], 0), 0u) << p.warnings[i];
  EXPECT_NE(p.warnings[0].find("selected"), std::string::npos) << p.warnings[0];
  EXPECT_NE(p.warnings[2].find("negative duration"), std::string::npos) << p.warnings[2];
  EXPECT_NE(p.warnings[3].find("outside [0, 1]"), std::string::npos) << p.warnings[3];
  ASSERT_EQ(p.experiments.size(), 2u);
  EXPECT_EQ(p.experiments[0].throughput.size(), 1u);
  ASSERT_EQ(p.experiments[1].throughput.size(), 1u);
  EXPECT_EQ(p.experiments[1].throughput[0].delta, 4u);
  EXPECT_TRUE(p.samples.empty());
}

TEST(ProfileReader, PointBeforeAnyExperimentIsSkipped) {
  Profile p = read(
      "throughput-point\tname=x\tdelta=1\n"
      "experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\n");
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_EQ(p.warnings[0].rfind("p.coz:1: ", 0), 0u) << p.warnings[0];
  EXPECT_NE(p.warnings[0].find("before any experiment"), std::string::npos);
  EXPECT_TRUE(p.experiments.at(0).throughput.empty());
}

TEST(ProfileReader, PointsOfASkippedExperimentDoNotJoinThePreviousOne) {
  Profile p = read(
      "experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\n"
      "throughput-point\tname=x\tdelta=1\n"
      "experiment\tselected=a.c:1\tspeedup=7\tduration=10\tselected-samples=0\n"
      "throughput-point\tname=x\tdelta=1000\n");
  EXPECT_EQ(p.warnings.size(), 2u);
  ASSERT_EQ(p.experiments.size(), 1u);
  ASSERT_EQ(p.experiments[0].throughput.size(), 1u);
  EXPECT_EQ(p.experiments[0].throughput[0].delta, 1u);
}

TEST(ProfileReader, PointsDoNotCarryAcrossFiles) {
  Profile p;
  std::istringstream a("experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\n");
  std::istringstream b("throughput-point\tname=x\tdelta=5\n");
  read_profile(a, "a.coz", p);
  read_profile(b, "b.coz", p);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_EQ(p.warnings[0].rfind("b.coz:1: ", 0), 0u);
  EXPECT_TRUE(p.experiments.at(0).throughput.empty());
}

TEST(ProfileReader, TruncatedLastLineIsSkippedWithAWarning) {
  Profile p = read(
      "experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\n"
      "throughput-point\tname=x\tdelta=1\n"
      "experiment\tselected=a.c:1\tspeedup=0.");
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_EQ(p.warnings[0].rfind("p.coz:3: truncated last line", 0), 0u) << p.warnings[0];
  EXPECT_EQ(p.experiments.size(), 1u);

  Profile json = read("{\"type\":\"experiment\",\"selected\":\"a.c:1\",\"spe");
  ASSERT_EQ(json.warnings.size(), 1u);
  EXPECT_EQ(json.warnings[0].rfind("p.coz:1: truncated last line", 0), 0u) << json.warnings[0];
}

TEST(ProfileReader, CompleteLastLineWithoutNewlineIsRead) {
  Profile p = read("experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0");
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(p.experiments.size(), 1u);
}

TEST(ProfileReader, CrLfLineEndingsAndBlankLines) {
  Profile p = read(
      "\r\n\n   \n"
      "experiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\r\n"
      "throughput-point\tname=x\tdelta=1\r\n");
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
  ASSERT_EQ(p.experiments.size(), 1u);
  EXPECT_EQ(p.experiments[0].throughput.at(0).name, "x");
}

TEST(ProfileReader, EmptyInput) {
  Profile p = read("");
  EXPECT_TRUE(p.experiments.empty());
  EXPECT_TRUE(p.warnings.empty());
}

TEST(ProfileReader, BinaryGarbageNeitherCrashesNorPasses) {
  std::mt19937 rng(1234);
  std::string garbage;
  for (int i = 0; i < 200000; ++i) garbage += static_cast<char>(rng() & 0xff);
  Profile p = read(garbage);
  EXPECT_TRUE(p.experiments.empty());
  EXPECT_FALSE(p.warnings.empty()) << "garbage must not pass silently as unknown records";
  EXPECT_LE(p.warnings.size(), Profile::max_warnings);
}

TEST(ProfileReader, HugeLineIsSkippedAndReadingContinues) {
  std::string text(5'000'000, 'x');
  text += "\nexperiment\tselected=a.c:1\tspeedup=0\tduration=10\tselected-samples=0\n";
  text += std::string(3'000'000, '{');  // unterminated, no newline
  Profile p = read(text);
  ASSERT_EQ(p.warnings.size(), 2u);
  EXPECT_EQ(p.warnings[0].rfind("p.coz:1: line longer than", 0), 0u) << p.warnings[0];
  EXPECT_EQ(p.warnings[1].rfind("p.coz:3: ", 0), 0u) << p.warnings[1];
  EXPECT_EQ(p.experiments.size(), 1u);
}

TEST(ProfileReader, WarningsAreCappedButCounted) {
  std::string text;
  for (int i = 0; i < 1500; ++i) text += "throughput-point\tname=x\tdelta=1\n";
  Profile p = read(text);
  EXPECT_EQ(p.warnings.size(), Profile::max_warnings);
  EXPECT_EQ(p.warnings_dropped, 1500u - Profile::max_warnings);
}

TEST(ProfileReader, ConventionalProfileRecords) {
  Profile p = read(
      "samples\tlocation=a.c:1\tcount=3\tfunction=f(int)\n"
      "samples\tlocation=a.c:1\tcount=2\n"
      "stack\tframes=m.c:1;a.c:1\tcount=4\n"
      "{\"type\":\"stack\",\"frames\":\"m.c:1;a.c:1\",\"count\":1}\n"
      "blocked\tsite=a.c:1\tkind=mutex\ttime=100\tcount=2\n"
      "blocked\tsite=a.c:1\tkind=mutex\ttime=50\tcount=1\n"
      "blocked\tsite=?\tkind=futex\ttime=7\tcount=1\n"
      "blocked\tsite=a.c:1\tkind=mutex\ttime=-5\tcount=1\n"
      "stack\tcount=1\n");
  EXPECT_EQ(p.samples.at("a.c:1").count, 5u);
  EXPECT_EQ(p.samples.at("a.c:1").function, "f(int)") << "a later record without function= keeps the name";
  EXPECT_EQ(p.stacks.at("m.c:1;a.c:1"), 5u);
  EXPECT_EQ(p.blocked.at({"a.c:1", "mutex"}).time_ns, 150u);
  EXPECT_EQ(p.blocked.at({"a.c:1", "mutex"}).count, 3u);
  EXPECT_EQ(p.blocked.at({"?", "futex"}).time_ns, 7u);
  ASSERT_EQ(p.warnings.size(), 2u);
  EXPECT_EQ(p.warning_places[0].line, 8u);
  EXPECT_EQ(p.warning_places[1].line, 9u);
  EXPECT_EQ(p.warning_places[1].file, "p.coz");
}

TEST(ProfileReader, CalleeFramesAreKeptWhole) {
  // Callee frames hold spaces, brackets, parentheses and '=': the tab form keeps them.
  const std::string frames =
      "m.c:1;a.c:2;std::vector<int>::operator=(std::vector<int> const&) [libstdc++.so.6];b.c:3;"
      "std::vector<int>::operator[](unsigned long) [libstdc++.so.6]";
  Profile p = read("stack\tframes=" + frames + "\tcount=2\n" +
                   "{\"type\":\"stack\",\"frames\":\"a.c:2;memcpy [libc.so.6]\",\"count\":1}\n");
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(p.stacks.at(frames), 2u);
  EXPECT_EQ(p.stacks.at("a.c:2;memcpy [libc.so.6]"), 1u);
}

TEST(ProfileReader, SamplingRecordsAreSummed) {
  Profile p = read(
      "sampling\tsamples=100\tin-scope=90\tlost=1\tunwound=99\tstopped-no-cfi=1\n"
      "sampling\tsamples=10\tin-scope=10\tlost=0\n"
      "sampling\tsamples=5\tlost=0\n");
  EXPECT_EQ(p.sampling.processes, 2u);
  EXPECT_EQ(p.sampling.samples, 110u);
  EXPECT_EQ(p.sampling.in_scope, 100u);
  EXPECT_EQ(p.sampling.lost, 1u);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_EQ(p.warning_places[0].message, "sampling record: missing in-scope=, skipped");
  Profile q = read("sampling\tsamples=7\tin-scope=3\tlost=2\n");
  merge_profile(p, std::move(q));
  EXPECT_EQ(p.sampling.processes, 3u);
  EXPECT_EQ(p.sampling.samples, 117u);
  EXPECT_EQ(p.sampling.lost, 3u);
}

// What the runtime's fixed tables had no room for, summed over processes
// and files; records without the keys (nothing dropped, older files) add 0.
TEST(ProfileReader, DroppedStacksAndWaitsAreSummed) {
  Profile p = read(
      "sampling\tsamples=100\tin-scope=90\tlost=0\tstacks-dropped=12\twaits-dropped=3\n"
      "sampling\tsamples=10\tin-scope=10\tlost=0\tstacks-dropped=5\n"
      "sampling\tsamples=10\tin-scope=10\tlost=0\n");
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(p.sampling.stacks_dropped, 17u);
  EXPECT_EQ(p.sampling.waits_dropped, 3u);
  merge_profile(p, read("sampling\tsamples=1\tin-scope=1\tlost=0\tstacks-dropped=1\n"));
  EXPECT_EQ(p.sampling.stacks_dropped, 18u);
}

// The machine's steal time during each process's run, and its CPU time
// then: summed, so the share is over all of them; a record without them adds 0.
TEST(ProfileReader, StealTimeIsSummed) {
  Profile p = read(
      "sampling\tsamples=100\tin-scope=90\tlost=0\tsteal=30\tmachine-time=1000\n"
      "sampling\tsamples=10\tin-scope=10\tlost=0\tsteal=10\tmachine-time=1000\n"
      "sampling\tsamples=10\tin-scope=10\tlost=0\n");
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(p.sampling.steal_ns, 40u);
  EXPECT_EQ(p.sampling.machine_ns, 2000u);
  EXPECT_DOUBLE_EQ(p.sampling.steal_share(), 0.02);
  merge_profile(p, read("sampling\tsamples=1\tin-scope=1\tlost=0\tsteal=60\tmachine-time=1000\n"));
  EXPECT_DOUBLE_EQ(p.sampling.steal_share(), 0.1 / 3);
}

TEST(ProfileReader, MergeAddsRuns) {
  Profile a = read("experiment\tselected=a.c:1\tspeedup=0\tduration=5\tselected-samples=0\n"
                   "samples\tlocation=a.c:1\tcount=2\n"
                   "stack\tframes=a.c:1\tcount=1\n"
                   "blocked\tsite=a.c:1\tkind=sleep\ttime=10\tcount=1\n"
                   "runtime\ttime=100\nexperiment\tselected=x.c:1\n");
  Profile b = read("experiment\tselected=b.c:1\tspeedup=0\tduration=5\tselected-samples=0\n"
                   "samples\tlocation=a.c:1\tcount=3\tfunction=g\n"
                   "stack\tframes=a.c:1\tcount=2\n"
                   "blocked\tsite=a.c:1\tkind=sleep\ttime=5\tcount=2\n"
                   "runtime\ttime=50\n");
  merge_profile(a, std::move(b));
  ASSERT_EQ(a.experiments.size(), 2u);
  EXPECT_EQ(a.experiments[1].selected, "b.c:1") << "the bad experiment of the first file is skipped";
  EXPECT_EQ(a.samples.at("a.c:1").count, 5u);
  EXPECT_EQ(a.samples.at("a.c:1").function, "g");
  EXPECT_EQ(a.stacks.at("a.c:1"), 3u);
  EXPECT_EQ(a.blocked.at({"a.c:1", "sleep"}).time_ns, 15u);
  EXPECT_EQ(a.runtime_ns, 150u);
  EXPECT_EQ(a.warnings.size(), 1u);
  EXPECT_EQ(a.warning_places.size(), 1u);
}

TEST(ProfileReader, MissingFile) {
  Profile p;
  EXPECT_FALSE(read_profile_file("/nonexistent/dir/profile.coz", p));
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("cannot open /nonexistent/dir/profile.coz"), std::string::npos) << p.warnings[0];
}

}  // namespace
}  // namespace coz::analysis
