// Tests of read_profile: both text forms, and that bad input is skipped with
// a "NAME:LINENO: reason" warning instead of being thrown, crashed or hung on.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>

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
