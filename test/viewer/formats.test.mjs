// The viewer's reader on each record form it must accept: ours, Coz's
// tab-separated file (with the older `progress-point`), Coz's JSON-lines, and
// the viewer-only records of the conventional profile.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import {
  analyze,
  anytimeHalfWidth,
  emptyProfile,
  decodeLatencyBuckets,
  flameTree,
  formatWarning,
  latencyBucketHigh,
  latencyBucketLow,
  logEValue,
  mergeProfile,
  parseJsonObject,
  parseStackFrame,
  readProfile,
  samplingCoverage,
  secondsPerExperiment,
  stealShare,
  splitLocation,
  topCallees,
} from "../../viewer/dist/node/analysis.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const read = (text, name = "t.coz") => {
  const p = emptyProfile();
  readProfile(text, name, p);
  return p;
};

test("basic vector warns about the skipped experiment only (as the C++ reader)", () => {
  const path = join(here, "..", "vectors", "basic", "profile.coz");
  const p = read(readFileSync(path, "utf8"), path);
  assert.deepEqual(p.warnings.map((w) => w.line), [32, 33]);
  assert.match(formatWarning(p.warnings[0]), /basic\/profile\.coz:32: experiment record: negative duration, skipped/);
  assert.match(formatWarning(p.warnings[1]), /basic\/profile\.coz:33: point record after a skipped experiment, skipped/);
});

test("a profile written by Coz (tab format, progress-point) is analysed", () => {
  const path = join(here, "coz-format.coz");
  const p = read(readFileSync(path, "utf8"), path);
  assert.deepEqual(p.warnings, []);
  const a = analyze(p);
  assert.deepEqual(a.points.map((q) => [q.name, q.kind, q.experiments, q.baseline_experiments]), [["main.cpp:22", "throughput", 5, 3]]);
  const top = a.effects[0];
  assert.equal(top.line, "/home/user/app/main.cpp:15");
  assert.ok(top.measured);
  // Pooled P(0) = 300 ms / 150 = 2 ms; P(0.5) = 100 ms / 80 = 1.25 ms -> +37.5%. The default
  // baseline is local, but with 3 runs at 0% every experiment's neighbours are all of them.
  assert.equal(top.baseline, "local");
  assert.ok(Math.abs(top.curve.find((c) => c.line_speedup === 0.5).program_speedup - 0.375) < 1e-12);
  assert.equal(a.total_samples, 130);
});

test("Coz's JSON-lines form reads like the tab form", () => {
  const tab = read(readFileSync(join(here, "coz-format.coz"), "utf8"));
  const json = read(readFileSync(join(here, "coz-format.jsonl"), "utf8"));
  assert.deepEqual(json.warnings, []);
  assert.deepEqual(analyze(json), analyze(tab));
});

test("JSON oddities: nested values skipped, numbers as 1.2e1, bad lines warned", () => {
  const p = read(
    '{"type":"experiment","selected":"a.cpp:3","speedup":0.2,"duration":123,"selected-samples":4}\n' +
      '{"type":"latency-point","name":"r","arrivals":5,"departures":4,"difference":-1,"extra":{"nested":[1,2,"]"]},"flag":true}\n' +
      '{"type":"samples","location":"a.cpp:3","count":1.2e1}\n' +
      '{"type":"throughput-point","name":"q","delta":"seven"}\n' +
      '{"name":"q","delta":7}\n',
  );
  assert.equal(p.experiments.length, 1);
  assert.equal(p.experiments[0].latency[0].difference, -1);
  assert.equal(p.samples.get("a.cpp:3"), 12);
  assert.deepEqual(p.warnings.map(formatWarning), [
    "t.coz:4: throughput-point record: bad delta='seven', skipped",
    't.coz:5: JSON record without a "type" key, skipped',
  ]);
});

test("the JSON object reader: escapes, the number grammar, literals, the C++ reader's errors", () => {
  const ok = (text) => {
    const m = [];
    assert.equal(parseJsonObject(text, m), null, text);
    return m;
  };
  const bad = (text) => {
    const error = parseJsonObject(text, []);
    assert.notEqual(error, null, text);
    return error;
  };
  assert.deepEqual(ok(String.raw`{"s":"q\"b\\s\/b\bf\fn\nr\rt\t"}`)[0], { key: "s", kind: "string", text: 'q"b\\s/b\bf\fn\nr\rt\t' });
  assert.equal(ok(String.raw`{"s":"\u0041\u00e9\u20AC\ud83d\ude00"}`)[0].text, "A\u00e9\u20ac\u{1f600}");
  for (const e of [String.raw`\x41`, String.raw`\u12`, String.raw`\ud83d`, String.raw`\ude00`, "a\tb"]) bad(`{"s":"${e}"}`);
  for (const n of ["0", "-0", "12", "0.5", "1e8", "1.2E+8", "3e-2"]) assert.deepEqual(ok(`{"n":${n}}`)[0], { key: "n", kind: "number", text: n });
  for (const n of ["01", "+1", ".5", "5.", "1e", "-", "0x10", "NaN", "Infinity", "tru", "True"]) bad(`{"n":${n}}`);
  assert.deepEqual(ok('{"a":true,"b":false,"c":null,"d":[1,{"x":"]}"}]}').map((m) => m.kind), ["true", "false", "null", "nested"]);
  assert.equal(bad('{"a" 1}'), "malformed JSON (expected ':' at column 6)");
  assert.equal(bad('{"a":1} x'), "malformed JSON (text after the JSON object at column 9)");
  assert.equal(bad("[1]"), "malformed JSON (expected '{' at column 1)");
  for (const t of ["", "{", '{"a":1,}', '{"a":1 "b":2}', "{a:1}", '{"type":"experiment","sel\tcut=write-failed', '{"type":"runtime","time":12}\tcut=write-failed']) bad(t);
});

test("a profile Coz itself wrote (JSON Lines, test/fixtures/coz-jsonl): every experiment read", () => {
  const path = join(here, "..", "fixtures", "coz-jsonl", "toy.jsonl");
  const text = readFileSync(path, "utf8");
  const p = read(text, path);
  assert.deepEqual(p.warnings, []);
  const experiments = text.split("\n").filter((l) => l.includes('"type":"experiment"')).length;
  assert.ok(experiments > 20);
  assert.equal(p.experiments.length, experiments);
  assert.ok(p.experiments.every((e) => e.selectedSamples > 0 && e.throughput.length === 1));
  const a = analyze(p);
  assert.deepEqual(a.points.map((q) => q.name), ["toy.cpp:49"]);
  const lines = new Set(a.effects.map((e) => e.line));
  assert.ok(lines.has("/tmp/coz-run/toy/toy.cpp:18") && lines.has("/tmp/coz-run/toy/toy.cpp:23"));
});

test("JSON Lines: Coz's '_' keys and 0.2.5's types, mixed with tab records, cut lines skipped (as the C++ reader)", () => {
  const p = read(
    [
      '{"type":"experiment","selected":"/src/a.cpp:3","speedup":0.35,"duration":100,"selected_samples":4}',
      '{"type":"throughput_point","name":"a.cpp:9","delta":7}',
      '{"type":"latency_point","name":"req","arrivals":5,"departures":4,"difference":1,"mean_in_flight":0.5}',
      "experiment\tselected=/src/b.cpp:5\tspeedup=0.40\tduration=200\tselected-samples=2",
      "throughput-point\tname=a.cpp:9\tdelta=11",
      '{"type":"experiment","selected":"/src/a.cpp:3","spe\tcut=write-failed',
      '{"type":"throughput-point","name":"a.cpp:9","delta":7}',
      '{"type":"runtime","time":12}\tcut=write-failed',
      '{"type":"samples","location":"/src/a.cpp:3","count":5,"function":null}',
      "samples\tlocation=/src/a.cpp:3\tcount=10",
      '{"type":"runtime","time":3}',
      "",
    ].join("\n"),
  );
  // The point after the cut experiment is not credited to the experiment before it.
  assert.deepEqual(p.warnings.map(formatWarning), [
    "t.coz:6: record cut short by a failed write (disk full?), skipped",
    "t.coz:7: point record after a skipped experiment, skipped",
    "t.coz:8: record cut short by a failed write (disk full?), skipped",
  ]);
  assert.equal(p.experiments.length, 2);
  assert.equal(p.experiments[0].selectedSamples, 4);
  assert.equal(p.experiments[0].throughput[0].delta, 7);
  assert.equal(p.experiments[0].latency[0].meanInFlight, 0.5);
  assert.equal(p.experiments[1].throughput[0].delta, 11);
  assert.equal(p.samples.get("/src/a.cpp:3"), 15);
  assert.equal(p.runtimeNs, 3);
});

test("the same records as JSON Lines and tab records give the same analysis", () => {
  let tab = "";
  let json = "";
  let seed = 7;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  for (let i = 0; i < 120; ++i) {
    const line = ["/src/a.cpp:3", "/src/b.cpp:5", "/src/c.cpp:8"][i % 3];
    const speedup = (rand(11) * 5) / 100;
    const duration = 100000000 + rand(1000);
    const delta = 100 + rand(20) + (i % 3 === 0 ? Math.round(speedup * 100) : 0);
    const arrivals = 50 + rand(5);
    tab += `experiment\tselected=${line}\tspeedup=${speedup.toFixed(2)}\tduration=${duration}\tselected-samples=${10 + (i % 7)}\tcores=4\tcores-busy=1.500\twaiting-for-core=0.000\n`;
    tab += `throughput-point\tname=main.cpp:9\tdelta=${delta}\n`;
    tab += `latency-point\tname=req\tarrivals=${arrivals}\tdepartures=${arrivals - 1}\tdifference=1\tmean-in-flight=2.5\n`;
    json += `{"type":"experiment","selected":"${line}","speedup":${speedup.toFixed(2)},"duration":${duration},"selected_samples":${10 + (i % 7)},"cores":4,"cores_busy":1.500,"waiting_for_core":0.000}\n`;
    json += `{"type":"throughput-point","name":"main.cpp:9","delta":${delta}}\n`;
    json += `{"type":"latency-point","name":"req","arrivals":${arrivals},"departures":${arrivals - 1},"difference":1,"mean_in_flight":2.5}\n`;
  }
  tab += "samples\tlocation=/src/a.cpp:3\tcount=500\tfunction=f\nsampling\tsamples=900\tin-scope=800\tlost=0\tperiod=1000000\tcpu-time=1000000000\nruntime\ttime=13000000000\n";
  json += '{"type":"samples","location":"/src/a.cpp:3","count":500,"function":"f"}\n{"type":"sampling","samples":900,"in_scope":800,"lost":0,"period":1000000,"cpu_time":1000000000}\n{"type":"runtime","time":13000000000}\n';
  const fromTab = read(tab);
  const fromJson = read(json);
  assert.deepEqual(fromJson.warnings, []);
  assert.equal(fromJson.experiments.length, 120);
  assert.deepEqual(fromJson, fromTab);
  assert.deepEqual(analyze(fromJson), analyze(fromTab));
});

test("a cut-off last line is reported as truncated", () => {
  const p = read('experiment\tselected=a.c:1\tspeedup=0.00\tduration=5\tselected-samples=1\nthroughput-point\tname=p\tdel');
  assert.deepEqual(p.warnings.map(formatWarning), ["t.coz:2: truncated last line (missing delta=), skipped"]);
});

test("conventional profile: functions, stacks and blocked time are summed", () => {
  const p = read(
    [
      "samples\tlocation=/s/a.cpp:10\tcount=6\tfunction=work(int)",
      "samples\tlocation=/s/a.cpp:11\tcount=2\tfunction=work(int)",
      "samples\tlocation=/bin/tool:helper\tcount=2",
      "stack\tframes=/s/m.cpp:5;/s/a.cpp:10\tcount=4",
      "stack\tframes=/s/m.cpp:5;/s/a.cpp:11\tcount=2",
      "stack\tframes=/s/m.cpp:5;/s/a.cpp:10\tcount=2",
      "blocked\tsite=/s/q.cpp:7\tkind=mutex\ttime=3000\tcount=3",
      "blocked\tsite=/s/q.cpp:7\tkind=mutex\ttime=1000\tcount=1",
      "blocked\tsite=?\tkind=sleep\ttime=9000\tcount=1",
      "",
    ].join("\n"),
  );
  assert.deepEqual(p.warnings, []);
  const a = analyze(p);
  const c = a.profile;
  assert.equal(a.total_samples, 10);
  assert.deepEqual(c.lines.map((l) => [l.location, l.function, l.samples]), [
    ["/s/a.cpp:10", "work(int)", 6],
    ["/bin/tool:helper", "", 2],
    ["/s/a.cpp:11", "work(int)", 2],
  ]);
  assert.deepEqual(c.functions.map((f) => [f.function, f.samples, f.lines, f.share]), [["work(int)", 8, 2, 0.8]]);
  assert.deepEqual(c.stacks.map((s) => [s.frames, s.count, s.share]), [
    [["/s/m.cpp:5", "/s/a.cpp:10"], 6, 0.75],
    [["/s/m.cpp:5", "/s/a.cpp:11"], 2, 0.25],
  ]);
  const flame = flameTree(c.stacks);
  assert.equal(flame.value, 8);
  assert.equal(flame.children[0].name, "/s/m.cpp:5");
  assert.deepEqual(flame.children[0].children.map((n) => [n.name, n.value]), [["/s/a.cpp:10", 6], ["/s/a.cpp:11", 2]]);
  assert.deepEqual(c.blocked.map((b) => [b.site, b.kind, b.time_ns, b.count]), [["?", "sleep", 9000, 1], ["/s/q.cpp:7", "mutex", 4000, 4]]);
});

test("several profiles merge like one", () => {
  const text = readFileSync(join(here, "coz-format.coz"), "utf8");
  const lines = text.split("\n");
  const cut = lines.findIndex((l, i) => i > 5 && l.startsWith("experiment"));
  const merged = emptyProfile();
  mergeProfile(merged, read(lines.slice(0, cut).join("\n") + "\n", "a.coz"));
  mergeProfile(merged, read(lines.slice(cut).join("\n"), "b.coz"));
  const strip = (a) => ({ ...a, warnings: [] });
  assert.deepEqual(strip(analyze(merged)), strip(analyze(read(text))));
  assert.deepEqual(merged.sources, ["a.coz", "b.coz"]);
});

test("stack frames: in-scope, callee FUNCTION [LIBRARY], skipped (the C++ rule)", () => {
  const kind = (f) => parseStackFrame(f).kind;
  assert.equal(kind("/src/a.c:42"), "in-scope");
  assert.equal(kind("/usr/lib/libfoo.so:bar"), "in-scope", "function-level in-scope frame");
  assert.equal(kind("/usr/lib/libfoo.so:operator[]"), "in-scope", "no ' ['");
  assert.equal(kind("memcpy[libc.so.6]"), "in-scope");
  assert.equal(kind("memcpy [libc.so.6"), "in-scope", "no closing bracket");
  assert.equal(kind(""), "skipped");
  assert.equal(kind(" [libc.so.6]"), "skipped", "empty function");
  assert.equal(kind("memcpy []"), "skipped", "empty library");
  // Under coz run --system, in-scope frames name their program.
  assert.equal(kind("/src/a.c:42 [server]"), "in-scope");
  assert.equal(kind("a.c:42 [server]"), "in-scope", "a relative FILE:LINE");
  assert.equal(kind("/usr/lib/libfoo.so:ns::bar [server]"), "in-scope");
  assert.equal(kind("ns::bar:: [server]"), "callee", "a function name is no location");
  assert.deepEqual(parseStackFrame("std::vector<int>::operator[](unsigned long) [libstdc++.so.6]"), {
    kind: "callee",
    function: "std::vector<int>::operator[](unsigned long)",
    library: "libstdc++.so.6",
  });
  assert.deepEqual(parseStackFrame("handler [x] [libweird.so]"), { kind: "callee", function: "handler [x]", library: "libweird.so" });
});

test("locations: FILE:LINE, and under coz run --system FILE:LINE [PROGRAM]", () => {
  assert.deepEqual(splitLocation("/src/a.c:42"), { file: "/src/a.c", line: "42", program: "" });
  assert.deepEqual(splitLocation("/src/a.c:42 [server]"), { file: "/src/a.c", line: "42", program: "server" });
  assert.deepEqual(splitLocation("/usr/bin/x:main [x]"), { file: "/usr/bin/x:main", line: "", program: "x" });
  assert.deepEqual(splitLocation("a.c"), { file: "a.c", line: "", program: "" });
});

test("top callee: the frame right after the innermost in-scope frame, over that line's stack samples", () => {
  const c = topCallees(
    new Map([
      ["m.c:1;sort.c:2;qsort [libc.so.6];cmp.c:3", 3], // the comparator's own sample
      ["m.c:1;sort.c:2;qsort [libc.so.6]", 4],
      ["m.c:1;a.c:1;b [l]", 2],
      ["m.c:1;a.c:1;a [m];free [libc.so.6]", 2], // a tie: "a [m]" < "b [l]"
      ["m.c:1;a.c:1", 1],
      ["strlen [libc.so.6]", 9], // no in-scope frame: charged to no line
    ]),
  );
  assert.deepEqual([...c.keys()].sort(), ["a.c:1", "sort.c:2"]);
  assert.deepEqual(c.get("a.c:1"), { function: "a", library: "m", samples: 2, stack_samples: 5, share: 0.4 });
  assert.deepEqual(c.get("sort.c:2"), { function: "qsort", library: "libc.so.6", samples: 4, stack_samples: 4, share: 1 });
});

test("sampling records are summed, a bad one is warned about", () => {
  const p = read("sampling\tsamples=100\tin-scope=90\tlost=1\tunwound=99\nsampling\tsamples=5\tlost=0\n");
  assert.deepEqual(p.sampling, {
    processes: 1,
    samples: 100,
    in_scope: 90,
    lost: 1,
    timed: 0,
    attributed_ns: 0,
    cpu_time_ns: 0,
    steal_ns: 0,
    machine_ns: 0,
  });
  assert.deepEqual(p.warnings.map(formatWarning), ["t.coz:2: sampling record: missing in-scope=, skipped"]);
  const merged = emptyProfile();
  mergeProfile(merged, p);
  mergeProfile(merged, read("sampling\tsamples=10\tin-scope=10\tlost=0\n"));
  // Without period= and cpu-time= the times are unknown, not 0.
  const a = analyze(merged);
  assert.deepEqual(a.sampling, {
    processes: 2,
    samples: 110,
    in_scope: 100,
    lost: 1,
    attributed_ns: null,
    cpu_time_ns: null,
    steal_ns: 0,
    machine_ns: 0,
  });
  assert.equal(samplingCoverage(a.sampling), null);
  assert.equal(analyze(read("runtime\ttime=5\n")).sampling, null);
});

test("sampling period= and cpu-time= give the coverage; a bad pair is ignored, the record still counts", () => {
  const p = read(
    [
      "sampling\tsamples=100\tin-scope=90\tlost=0\tperiod=1000000\tcpu-time=300000000",
      "sampling\tsamples=10\tin-scope=10\tlost=0\tperiod=1e6\tcpu-time=100000000.0", // integral JSON-style numbers
      "sampling\tsamples=7\tin-scope=7\tlost=0\tperiod=-5\tcpu-time=100", // bad period: the pair is ignored
      "sampling\tsamples=3\tin-scope=3\tlost=0\tperiod=1000000", // no cpu-time=
      "",
    ].join("\n"),
  );
  assert.deepEqual(p.warnings, []);
  const a = analyze(p);
  assert.deepEqual(a.sampling, {
    processes: 4,
    samples: 120,
    in_scope: 110,
    lost: 0,
    attributed_ns: 100e6,
    cpu_time_ns: 400e6,
    steal_ns: 0,
    machine_ns: 0,
  });
  assert.equal(samplingCoverage(a.sampling), 0.25);
  // A CPU time of 0 leaves the coverage undefined.
  assert.equal(samplingCoverage(analyze(read("sampling\tsamples=1\tin-scope=1\tlost=0\tperiod=5\tcpu-time=0\n")).sampling), null);
});

test("steal= and machine-time= are summed over processes as a pair (as the C++ reader); their share", () => {
  const p = read(
    [
      "sampling\tsamples=10\tin-scope=10\tlost=0\tsteal=30000000\tmachine-time=1000000000",
      "sampling\tsamples=10\tin-scope=10\tlost=0\tsteal=10000000\tmachine-time=1000000000",
      "sampling\tsamples=10\tin-scope=10\tlost=0\tsteal=50000000", // no machine-time=: the pair is ignored
      "",
    ].join("\n"),
  );
  assert.deepEqual(p.warnings, []);
  const a = analyze(p);
  assert.equal(a.sampling.steal_ns, 40e6);
  assert.equal(a.sampling.machine_ns, 2e9);
  assert.equal(stealShare(a.sampling), 0.02);
  // Without the pair (older runtimes, or no steal), the share is 0.
  assert.equal(stealShare(analyze(read("sampling\tsamples=1\tin-scope=1\tlost=0\n")).sampling), 0);
  assert.equal(stealShare(null), 0);
});

test("the confidence sequence of section 7 and its e-value", () => {
  // se 0.04: u = 1.5625, 0.04 * sqrt(1.64 * log(2.5625 / 0.0025)) (verdicts_test has the same figure).
  assert.ok(Math.abs(anytimeHalfWidth(0.04, 0.05) - 0.13487306353563067) < 1e-12);
  assert.equal(anytimeHalfWidth(0, 0.05), 0);
  assert.equal(anytimeHalfWidth(null, 0.05), null);
  for (const se of [0.001, 0.01, 0.04, 0.2]) {
    for (const alpha of [0.0005, 0.05, 0.1]) {
      assert.ok(Math.abs(logEValue(anytimeHalfWidth(se, alpha), se) - Math.log(1 / alpha)) < 1e-9);
    }
  }
});

const undecided = () => {
  const dir = join(here, "..", "vectors", "undecided");
  const p = emptyProfile();
  readProfile(readFileSync(join(dir, "profile.coz"), "utf8"), "profile.coz", p);
  return p;
};
const verdictOf = (e) => [e.line, e.point, e.label, e.p_value, e.adjusted_low, e.adjusted_high, e.experiments_needed];

test("verdicts are made over every line of a point, before --point and --min-experiments", () => {
  const all = analyze(undecided());
  const byKey = new Map(all.effects.map((e) => [`${e.line} ${e.point}`, verdictOf(e)]));
  for (const options of [{ point: "ops" }, { minExperiments: 5 }, { point: "rare-op", minExperiments: 2 }]) {
    const some = analyze(undecided(), options);
    assert.ok(some.effects.length > 0 && some.effects.length < all.effects.length, JSON.stringify(options));
    for (const e of some.effects) assert.deepEqual(verdictOf(e), byKey.get(`${e.line} ${e.point}`), JSON.stringify(options));
    assert.deepEqual(some.points, all.points);
  }
  // The discoveries have widened intervals that exclude 0 and hold the 95% one; those whose
  // effect at a 50% speedup (slope * 0.5) is ±2.5% or more are the positive and negative
  // lines, the others are no-effect.
  for (const p of all.points) {
    const mine = all.effects.filter((e) => e.point === p.name && e.kind === p.kind);
    assert.equal(p.tested, mine.filter((e) => e.p_value !== null).length);
    const found = mine.filter((e) => e.adjusted_low !== null);
    assert.equal(p.discoveries, found.length);
    for (const e of found) {
      assert.ok(e.measured_experiments >= 10);
      assert.ok(e.adjusted_low > 0 || e.adjusted_high < 0);
      assert.ok(e.adjusted_low <= e.impact_low && e.adjusted_high >= e.impact_high);
      const material = e.slope === null || Math.abs(e.slope) * 0.5 >= 0.025;
      assert.equal(e.label, material ? (e.impact > 0 ? "positive" : "negative") : "no-effect", e.line);
    }
    for (const e of mine.filter((e) => e.label === "positive" || e.label === "negative")) assert.ok(found.includes(e));
  }
});

test("a thin line gets no verdict, and needs at least its missing measured experiments", () => {
  const a = analyze(undecided());
  const rare = a.effects.find((e) => e.line === "src/rare.cpp:77" && e.point === "ops");
  // 3 measured experiments settle nothing.
  assert.ok(rare.measured_experiments === 3);
  assert.equal(rare.label, "undecided");
  assert.ok(rare.experiments_needed >= 10 - 3);
  // Nor do a few, even where the line's 95% confidence sequence excludes 0 (the fdr vector's
  // queue.cpp:582, 3 measured; rare.cpp:77's sequence, wider than the pointwise interval it had,
  // no longer does).
  const p = emptyProfile();
  readProfile(readFileSync(join(here, "..", "vectors", "fdr", "profile.coz"), "utf8"), "profile.coz", p);
  const queue = analyze(p).effects.find((e) => e.line === "src/queue.cpp:582" && e.point === "requests");
  assert.ok(queue.impact_low > 0 && queue.measured_experiments === 3);
  assert.equal(queue.label, "undecided");
  assert.ok(queue.experiments_needed >= 10 - 3);
});

test("ranking: label group first, then the conservative bound; stability over the same options", () => {
  const a = analyze(undecided());
  const groups = ["positive", "negative", "no-effect", "undecided", "insufficient-data", "unmeasured"];
  const order = a.effects.map((e) => groups.indexOf(e.label));
  assert.deepEqual(order, [...order].sort((x, y) => x - y));
  const undecidedLows = a.effects.filter((e) => e.label === "undecided").map((e) => e.impact_low);
  assert.deepEqual(undecidedLows, [...undecidedLows].sort((x, y) => y - x));
  // --point keeps the stability of that point only; its halves are filtered alike.
  assert.deepEqual(
    analyze(undecided(), { point: "ops" }).stability,
    a.stability.filter((s) => s.name === "ops"),
  );
  for (const s of a.stability) assert.ok(s.top >= 1 && s.top <= 5 && s.agree <= s.top);
});

test("the flame graph skips empty and malformed frames, keeps callee frames", () => {
  const root = flameTree([{ frames: ["m.c:1", "", " [libc.so.6]", "memcpy [libc.so.6]"], count: 2, share: 1 }]);
  assert.deepEqual(root.children.map((n) => n.name), ["m.c:1"]);
  assert.deepEqual(root.children[0].children.map((n) => n.name), ["memcpy [libc.so.6]"]);
});

test("experiments-stopped records are kept in order and merged; a bad one is warned about", () => {
  const p = read("experiments-stopped\treason=settled\tend=12000000000\nexperiments-stopped\tend=5\nruntime\ttime=20000000000\n");
  assert.deepEqual(p.experimentsStopped, ["settled"]);
  assert.deepEqual(p.warnings.map(formatWarning), ["t.coz:2: experiments-stopped record: missing reason=, skipped"]);
  const merged = emptyProfile();
  mergeProfile(merged, p);
  mergeProfile(merged, read('{"type":"experiments-stopped","reason":"max-time","end":7}\n', "b.coz"));
  const a = analyze(merged);
  assert.deepEqual(a.experiments_stopped, ["settled", "max-time"]);
  assert.deepEqual(analyze(read("runtime\ttime=5\n")).experiments_stopped, []);
  // The end= of an experiment is read past (docs/profile-format.md: readers may ignore it).
  const e = read("experiment\tselected=a.c:1\tspeedup=0.10\tduration=5\tselected-samples=1\tend=99\n");
  assert.deepEqual(e.warnings, []);
  assert.equal(e.experiments.length, 1);
});

test("seconds per experiment: the run's pace, null without experiments or run time", () => {
  const a = analyze(undecided());
  assert.equal(secondsPerExperiment(a), 30 / 691);
  assert.equal(secondsPerExperiment(analyze(read("runtime\ttime=5\n"))), null);
  assert.equal(secondsPerExperiment(analyze(read("experiment\tselected=a.c:1\tspeedup=0\tduration=5\tselected-samples=1\n"))), null);
});

test("profile bytes: UTF-8 decoded, each invalid byte read as Latin-1 (as the C++ JSON writer escapes it)", async () => {
  const { decodeBytes } = await import("../../viewer/dist/node/analysis.mjs");
  const bytes = (...b) => new Uint8Array(b);
  assert.equal(decodeBytes(new TextEncoder().encode("caf\u00e9.c \u6771\u4eac")), "caf\u00e9.c \u6771\u4eac");
  assert.equal(decodeBytes(bytes(0x63, 0x61, 0x66, 0xe9, 0x2e, 0x63)), "caf\u00e9.c"); // Latin-1 file name
  assert.equal(decodeBytes(bytes(0x80)), "\u0080"); // lone continuation byte
  assert.equal(decodeBytes(bytes(0xc0, 0xaf)), "\u00c0\u00af"); // overlong
  assert.equal(decodeBytes(bytes(0xed, 0xa0, 0x80)), "\u00ed\u00a0\u0080"); // encoded surrogate
  assert.equal(decodeBytes(bytes(0x78, 0xe2, 0x82)), "x\u00e2\u0082"); // cut short at the end
  assert.equal(decodeBytes(bytes(0xe2, 0x82, 0x61, 0xe2, 0x82, 0xac)), "\u00e2\u0082a\u20ac");
  assert.notEqual(decodeBytes(bytes(0xe9)), decodeBytes(bytes(0xe8)));
  // A tab-separated profile with a Latin-1 path reads the same name the C++ JSON writer gives ("caf\u00e9.c").
  const text = decodeBytes(new Uint8Array([...new TextEncoder().encode("samples\tlocation=caf"), 0xe9, ...new TextEncoder().encode(".c:3\tcount=5\n")]));
  const p = read(text);
  assert.ok(text.includes("caf\u00e9.c:3"));
  assert.equal(p.warnings.length, 0);
});

// docs/analysis.md section 13: latency-histogram records (docs/profile-format.md) and the percentiles.
test("latency-histogram records: read in both forms, bad ones skipped with the C++ reader's warnings", () => {
  const experiment = "experiment\tselected=a.c:1\tspeedup=0\tduration=1000000\tselected-samples=3\n";
  const h = (buckets, scheme = "log2-32") => `latency-histogram\tname=request\tscheme=${scheme}\tbuckets=${buckets}\n`;
  const p = read(
    h("1:2") + experiment + h("01:2,0005:7") + '{"type":"latency-histogram","name":"request","scheme":"log2-32","buckets":"600:5,601:7"}\n' +
      h("1:2", "log2-64") + h("") + h("1:2,1:3") + h("3:1,2:1") + h("1312:2") + h("99999999999999999999:2") + h("1:2,") + h("1:-2") + h("3:1;4:2") +
      "latency-histogram\tscheme=log2-32\tbuckets=1:2\n",
  );
  assert.deepEqual(p.experiments[0].latencyHistograms, [
    { name: "request", buckets: [[1, 2], [5, 7]] },
    { name: "request", buckets: [[600, 5], [601, 7]] },
  ]);
  const skipped = (why) => `latency-histogram record: ${why}, skipped`;
  const malformed = skipped("latency-histogram buckets: a bucket is not BUCKET:COUNT");
  assert.deepEqual(
    p.warnings.map((w) => [w.line, w.message]),
    [
      [1, "point record before any experiment, skipped"],
      [5, skipped("latency-histogram scheme log2-64 unknown (this coz reads log2-32)")],
      [6, skipped("missing buckets=")],
      [7, skipped("latency-histogram buckets: buckets out of order")],
      [8, skipped("latency-histogram buckets: buckets out of order")],
      [9, skipped("latency-histogram buckets: bucket 1312 out of range")],
      [10, malformed],
      [11, malformed],
      [12, malformed],
      [13, malformed],
      [14, skipped("missing name=")],
    ],
  );
  assert.deepEqual(decodeLatencyBuckets(""), []); // (an empty buckets= is "missing buckets=" before it gets here)
});

test("latency buckets: one per ns under 32, then 32 per power of two, the last from 2^45 ns", () => {
  assert.deepEqual([latencyBucketLow(0), latencyBucketHigh(0)], [0, 1]);
  assert.deepEqual([latencyBucketLow(31), latencyBucketHigh(31)], [31, 32]);
  assert.deepEqual([latencyBucketLow(32), latencyBucketHigh(32)], [32, 33]);
  assert.deepEqual([latencyBucketLow(64), latencyBucketHigh(64)], [64, 66]);
  assert.deepEqual([latencyBucketLow(95), latencyBucketHigh(95)], [126, 128]);
  assert.deepEqual([latencyBucketLow(1311), latencyBucketHigh(1311)], [63 * 2 ** 39, 64 * 2 ** 39]);
  for (let b = 33; b < 1312; ++b) assert.equal(latencyBucketLow(b), latencyBucketHigh(b - 1), `bucket ${b}`);
});

test("percentiles: only with request histograms; the fixture's as coz report --json gives them", () => {
  assert.ok(!("percentiles" in analyze(undecided())));
  const path = join(here, "latency-percentiles.coz");
  const a = analyze(read(readFileSync(path, "utf8"), path));
  assert.deepEqual(Object.keys(a).slice(Object.keys(a).indexOf("effects"), Object.keys(a).indexOf("effects") + 3), ["effects", "percentiles", "profile"]);
  assert.equal(a.percentiles.length, 1);
  const p = a.percentiles[0];
  // From `coz report --json test/viewer/latency-percentiles.coz` (the C++, tools/analysis/percentiles.cpp).
  const near = (x, y) => assert.ok(Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(y)), `${x} != ${y}`);
  assert.equal(p.name, "request");
  assert.equal(p.requests, 11921);
  assert.equal(p.baseline_experiments, 80);
  near(p.baseline_requests, 3578.23451830326);
  [1033023.1889206498, 5218369.113171297, 9150061.689935293].forEach((v, k) => near(p.baseline_ns[k], v));
  [7.077005456651729, 5.429592940419936, 2.630672090261551].forEach((v, k) => near(p.design_effect[k], v));
  assert.deepEqual(p.lines.map((l) => [l.line, l.curve.length]), [
    ["test/programs/latency.cpp:50", 18],
    ["test/programs/latency.cpp:55", 20],
    ["test/programs/latency.cpp:45", 17],
  ]);
  [0.030074275018543095, 0.061612076113048864, 0.5209298151144677].forEach((v, k) => near(p.lines[0].at_half[k].change, v));
  assert.equal(p.lines[2].at_half[2].change, null); // too few requests for its p99
  assert.equal(p.lines[0].at_half[0].latency_ns, null);
});
