// Reads profile records (docs/profile-format.md) into a Profile: ours, Coz's
// tab-separated form and Coz's JSON-lines. Mirrors tools/analysis/profile.cpp
// record for record (same validity rules, same warnings), and additionally
// keeps what only the viewer shows: functions, call stacks, blocked time.
import { decodeLatencyBuckets, latencySchemeName } from "./latency_buckets";
import { findField, RecordLine, splitRecordLine } from "./record_line";

export interface ThroughputMeasurement {
  name: string;
  delta: number;
}

export interface LatencyMeasurement {
  name: string;
  arrivals: number;
  departures: number;
  difference: number;
  meanInFlight: number; // < 0 when the file has none (Coz)
}

/** A `latency-histogram` record: the requests of latency point `name` measured in the experiment, by virtual latency (docs/analysis.md §13). */
export interface LatencyHistogram {
  name: string;
  buckets: Array<[number, number]>; // latency_buckets.ts: (bucket, requests), increasing
}

export interface Experiment {
  selected: string; // FILE:LINE
  speedup: number;
  durationNs: number;
  selectedSamples: number;
  /** docs/analysis.md §5.1: what its process's threads did with the cores; cores 0 without valid figures. */
  cores: number;
  coresBusy: number;
  waitingForCore: number;
  /** §5.2: the program's voluntary context switches over it (its hand-offs); null without a valid count. */
  voluntarySwitches: number | null;
  source: string; // file the experiment was read from
  throughput: ThroughputMeasurement[];
  latency: LatencyMeasurement[];
  latencyHistograms: LatencyHistogram[];
}

export interface BlockedTime {
  site: string;
  kind: string;
  timeNs: number;
  count: number;
}

/** How the samples were attributed, summed over the processes' `sampling` records. */
export interface SamplingTotals {
  processes: number; // sampling records read
  samples: number; // samples taken
  in_scope: number; // attributed to an in-scope line
  lost: number; // dropped by the kernel
  timed: number; // records that also had period= and cpu-time=
  attributed_ns: number; // Σ in-scope × period over those records
  cpu_time_ns: number; // Σ cpu-time over those records
  steal_ns: number; // Σ steal= over the records that had it with machine-time=: a hypervisor's share
  machine_ns: number; // Σ machine-time= over those records (wall time × online CPUs)
}

export interface Profile {
  experiments: Experiment[];
  samples: Map<string, number>; // FILE:LINE -> samples (summed)
  functions: Map<string, string>; // FILE:LINE -> function, when a samples record names it
  stacks: Map<string, number>; // frames (outermost first, ';'-separated) -> samples
  blocked: Map<string, BlockedTime>; // site + kind -> totals
  runtimeNs: number;
  // Why experiments stopped before a process ended (`experiments-stopped`
  // records: "settled", "max-time"), one per record, in file order.
  experimentsStopped: string[];
  sampling: SamplingTotals;
  sources: string[]; // names of the files read
  warnings: Array<{ file: string; line: number; message: string }>; // line 0: the whole file
  warningsDropped: number;
}

export const maxWarnings = 1000;
// Real records are well under 1 KiB; a longer line is garbage.
const maxLineBytes = 64 * 1024;
const u64Max = 18446744073709551615;

export function emptyProfile(): Profile {
  return {
    experiments: [],
    samples: new Map(),
    functions: new Map(),
    stacks: new Map(),
    blocked: new Map(),
    runtimeNs: 0,
    experimentsStopped: [],
    sampling: { processes: 0, samples: 0, in_scope: 0, lost: 0, timed: 0, attributed_ns: 0, cpu_time_ns: 0, steal_ns: 0, machine_ns: 0 },
    sources: [],
    warnings: [],
    warningsDropped: 0,
  };
}

function warn(p: Profile, file: string, line: number, message: string) {
  if (p.warnings.length < maxWarnings) p.warnings.push({ file, line, message });
  else ++p.warningsDropped;
}

/** "FILE:LINE: message", as `coz report` prints a warning. */
export const formatWarning = (w: { file: string; line: number; message: string }) =>
  w.line > 0 ? `${w.file}:${w.line}: ${w.message}` : w.message;

const saturatingAdd = (a: number, b: number) => Math.min(a + b, u64Max);

function addSampling(into: SamplingTotals, t: SamplingTotals) {
  into.processes = saturatingAdd(into.processes, t.processes);
  into.samples = saturatingAdd(into.samples, t.samples);
  into.in_scope = saturatingAdd(into.in_scope, t.in_scope);
  into.lost = saturatingAdd(into.lost, t.lost);
  into.timed = saturatingAdd(into.timed, t.timed);
  into.attributed_ns = saturatingAdd(into.attributed_ns, t.attributed_ns);
  into.cpu_time_ns = saturatingAdd(into.cpu_time_ns, t.cpu_time_ns);
  into.steal_ns = saturatingAdd(into.steal_ns, t.steal_ns);
  into.machine_ns = saturatingAdd(into.machine_ns, t.machine_ns);
}

// std::from_chars grammar: no leading '+', no spaces, no hex.
const unsignedText = /^[0-9]+$/;
const signedText = /^-?[0-9]+$/;
const realText = /^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/;

function toU64(s: string): number | null {
  if (!unsignedText.test(s)) return null;
  const v = Number(s);
  return v <= u64Max ? v : null;
}

function toDouble(s: string): number | null {
  if (!realText.test(s)) return null;
  const v = Number(s);
  return Number.isFinite(v) ? v : null;
}

// Counts are integers, but a JSON writer may well emit 1.2e8 or 118.0.
function toCount(s: string): number | null {
  const u = toU64(s);
  if (u !== null) return u;
  const d = toDouble(s);
  if (d === null || d < 0 || d >= 18446744073709551616.0 || Math.floor(d) !== d) return null;
  return d;
}

const clip = (v: string) => (v.length > 40 ? v.slice(0, 40) + "..." : v);

// Field access that turns the first problem into the warning's reason.
class Fields {
  error = "";
  constructor(private readonly r: RecordLine) {}

  get ok() {
    return this.error === "";
  }
  fail(why: string) {
    if (this.error === "") this.error = why;
  }
  has(key: string) {
    return findField(this.r, key) !== undefined;
  }
  text(key: string): string {
    const v = findField(this.r, key);
    if (v === undefined || v === "") {
      this.fail(`missing ${key}=`);
      return "";
    }
    return v;
  }
  optionalText(key: string): string | undefined {
    const v = findField(this.r, key);
    return v === "" ? undefined : v;
  }
  count(key: string): number {
    const v = findField(this.r, key);
    if (v === undefined) return this.fail(`missing ${key}=`), 0;
    if (v.startsWith("-")) return this.fail(`negative ${key}`), 0;
    const n = toCount(v);
    if (n === null) return this.fail(`bad ${key}='${clip(v)}'`), 0;
    return n;
  }
  signedCount(key: string): number {
    const v = findField(this.r, key);
    if (v === undefined) return this.fail(`missing ${key}=`), 0;
    if (!signedText.test(v) || Math.abs(Number(v)) > 9223372036854775807) {
      return this.fail(`bad ${key}='${clip(v)}'`), 0;
    }
    return Number(v);
  }
  /** A count whose absence or bad value is no error (the caller ignores it). */
  lenientCount(key: string): number | null {
    const v = findField(this.r, key);
    if (v === undefined || v === "" || v.startsWith("-")) return null;
    return toCount(v);
  }
  /** An optional non-negative number whose absence or bad value is not an error. */
  lenientReal(key: string): number | null {
    const v = findField(this.r, key);
    if (v === undefined) return null;
    const d = toDouble(v);
    return d !== null && d >= 0 ? d : null;
  }
  optionalReal(key: string): number | null {
    const v = findField(this.r, key);
    if (v === undefined) return null;
    const d = toDouble(v);
    if (d === null) this.fail(`bad ${key}='${clip(v)}'`);
    return d;
  }
  real(key: string): number {
    if (findField(this.r, key) === undefined) return this.fail(`missing ${key}=`), 0;
    return this.optionalReal(key) ?? 0;
  }
}

function parseExperiment(f: Fields, source: string): Experiment | null {
  const e: Experiment = {
    selected: f.text("selected"),
    speedup: f.real("speedup"),
    durationNs: f.count("duration"),
    selectedSamples: f.count("selected-samples"),
    cores: 0,
    coresBusy: 0,
    waitingForCore: 0,
    voluntarySwitches: f.lenientCount("voluntary-switches"),
    source,
    throughput: [],
    latency: [],
    latencyHistograms: [],
  };
  // §5.1: core figures count only whole, all three valid.
  const cores = f.lenientCount("cores");
  const busy = f.lenientReal("cores-busy");
  const waiting = f.lenientReal("waiting-for-core");
  if (cores !== null && cores >= 1 && busy !== null && waiting !== null) {
    e.cores = cores;
    e.coresBusy = busy;
    e.waitingForCore = waiting;
  }
  if (f.ok && !(e.speedup >= 0 && e.speedup <= 1)) f.fail(`speedup ${e.speedup} outside [0, 1]`);
  return f.ok ? e : null;
}

function parseThroughput(f: Fields): ThroughputMeasurement | null {
  const m = { name: f.text("name"), delta: f.count("delta") };
  return f.ok ? m : null;
}

function parseLatency(f: Fields): LatencyMeasurement | null {
  const m: LatencyMeasurement = {
    name: f.text("name"),
    arrivals: f.count("arrivals"),
    departures: f.count("departures"),
    difference: 0,
    meanInFlight: -1,
  };
  const mean = f.optionalReal("mean-in-flight");
  if (mean !== null && mean < 0) f.fail("negative mean-in-flight");
  if (mean !== null) m.meanInFlight = mean;
  // With mean-in-flight present, Little's law does not need `difference`.
  if (mean === null || f.has("difference")) m.difference = f.signedCount("difference");
  return f.ok ? m : null;
}

function parseLatencyHistogram(f: Fields): LatencyHistogram | null {
  const name = f.text("name");
  const scheme = f.text("scheme");
  const text = f.text("buckets");
  if (!f.ok) return null;
  if (scheme !== latencySchemeName) {
    f.fail(`latency-histogram scheme ${scheme} unknown (this coz reads ${latencySchemeName})`);
    return null;
  }
  const buckets = decodeLatencyBuckets(text);
  if (typeof buckets === "string") {
    f.fail(`latency-histogram buckets: ${buckets}`);
    return null;
  }
  return { name, buckets };
}

class Reader {
  // The experiment that point records attach to; null before the first one
  // or after a malformed one (its points must not go to the one before).
  private current: Experiment | null = null;
  private currentWasSkipped = false;
  constructor(
    private readonly profile: Profile,
    private readonly source: string,
  ) {}

  warnAt(lineno: number, why: string) {
    warn(this.profile, this.source, lineno, why);
  }

  private pointOwner(lineno: number): Experiment | null {
    if (this.current) return this.current;
    this.warnAt(
      lineno,
      this.currentWasSkipped ? "point record after a skipped experiment, skipped" : "point record before any experiment, skipped",
    );
    return null;
  }

  handle(line: string, lineno: number, truncated: boolean) {
    const rec = splitRecordLine(line);
    if (typeof rec === "string") {
      this.warnAt(lineno, truncated ? "truncated last line, skipped" : rec + ", skipped");
      return;
    }
    if (rec.cut) {
      // The first part of a record that a failed write cut short (a full disk): not a record.
      // Points after it belong to it if it was an experiment, never to the one before.
      this.current = null;
      this.currentWasSkipped = true;
      this.warnAt(lineno, "record cut short by a failed write (disk full?), skipped");
      return;
    }
    const f = new Fields(rec);
    const p = this.profile;
    const t = rec.type;
    if (t === "experiment") {
      const e = parseExperiment(f, this.source);
      if (e) {
        p.experiments.push(e);
        this.current = e;
      } else {
        this.current = null;
        this.currentWasSkipped = true;
      }
    } else if (t === "throughput-point" || t === "progress-point") {
      const m = parseThroughput(f);
      if (m) this.pointOwner(lineno)?.throughput.push(m);
    } else if (t === "latency-point") {
      const m = parseLatency(f);
      if (m) this.pointOwner(lineno)?.latency.push(m);
    } else if (t === "latency-histogram") {
      const hist = parseLatencyHistogram(f);
      if (hist) this.pointOwner(lineno)?.latencyHistograms.push(hist);
    } else if (t === "samples") {
      const location = f.text("location");
      const count = f.count("count");
      if (f.ok) {
        p.samples.set(location, saturatingAdd(p.samples.get(location) ?? 0, count));
        const fn = f.optionalText("function");
        if (fn !== undefined) p.functions.set(location, fn);
      }
    } else if (t === "experiments-stopped") {
      const reason = f.text("reason");
      if (f.ok) p.experimentsStopped.push(reason);
    } else if (t === "runtime") {
      const time = f.count("time");
      if (f.ok) p.runtimeNs = saturatingAdd(p.runtimeNs, time);
    } else if (t === "sampling") {
      const samples = f.count("samples");
      const inScope = f.count("in-scope");
      const lost = f.count("lost");
      // period= and cpu-time= (newer runtimes): both counts, else the pair is ignored.
      const period = f.lenientCount("period");
      const cpuTime = f.lenientCount("cpu-time");
      const timed = period !== null && cpuTime !== null;
      // steal= and machine-time= (written when a hypervisor took any): both, else neither counts.
      const steal = f.lenientCount("steal");
      const machine = f.lenientCount("machine-time");
      const stolen = steal !== null && machine !== null;
      if (f.ok) {
        addSampling(p.sampling, {
          processes: 1,
          samples,
          in_scope: inScope,
          lost,
          timed: timed ? 1 : 0,
          attributed_ns: timed ? Math.min(inScope * period, u64Max) : 0,
          cpu_time_ns: timed ? cpuTime : 0,
          steal_ns: stolen ? steal : 0,
          machine_ns: stolen ? machine : 0,
        });
      }
    } else if (t === "stack") {
      const frames = f.text("frames");
      const count = f.count("count");
      if (f.ok) p.stacks.set(frames, saturatingAdd(p.stacks.get(frames) ?? 0, count));
    } else if (t === "blocked") {
      const site = f.text("site");
      const kind = f.text("kind");
      const time = f.count("time");
      const count = f.count("count");
      if (f.ok) {
        const key = `${site}\u0000${kind}`;
        const b = p.blocked.get(key) ?? { site, kind, timeNs: 0, count: 0 };
        b.timeNs = saturatingAdd(b.timeNs, time);
        b.count = saturatingAdd(b.count, count);
        p.blocked.set(key, b);
      }
    }
    // Other types (startup, process, later additions) are ignored silently.
    if (!f.ok) {
      this.warnAt(lineno, truncated ? `truncated last line (${f.error}), skipped` : `${t} record: ${f.error}, skipped`);
    }
  }
}

const utf8 = new TextEncoder();

/** Appends the records of one file's text to `profile`. */
export function readProfile(text: string, sourceName: string, profile: Profile): void {
  profile.sources.push(sourceName);
  const reader = new Reader(profile, sourceName);
  const lines = text.split("\n");
  // Text after the last newline is a line without one: maybe cut off by a crash.
  const last = lines.pop() ?? "";
  const consider = (raw: string, lineno: number, truncated: boolean) => {
    let line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    // Cheap length test first: UTF-8 is at most 3 bytes per UTF-16 unit.
    if (line.length * 3 > maxLineBytes && utf8.encode(line).length > maxLineBytes) {
      reader.warnAt(lineno, `line longer than ${maxLineBytes} bytes, skipped`);
      return;
    }
    if (truncated) line = raw;
    if (/[^ \t]/.test(truncated ? line.replace(/\r/g, "") : line)) reader.handle(line, lineno, truncated);
  };
  lines.forEach((raw, i) => consider(raw, i + 1, false));
  if (last !== "") consider(last, lines.length + 1, true);
}

/** Merges `one` (a separately read file) into `into`. */
export function mergeProfile(into: Profile, one: Profile): void {
  into.experiments.push(...one.experiments);
  for (const [k, v] of one.samples) into.samples.set(k, saturatingAdd(into.samples.get(k) ?? 0, v));
  for (const [k, v] of one.functions) into.functions.set(k, v);
  for (const [k, v] of one.stacks) into.stacks.set(k, saturatingAdd(into.stacks.get(k) ?? 0, v));
  for (const [k, b] of one.blocked) {
    const t = into.blocked.get(k) ?? { ...b, timeNs: 0, count: 0 };
    t.timeNs = saturatingAdd(t.timeNs, b.timeNs);
    t.count = saturatingAdd(t.count, b.count);
    into.blocked.set(k, t);
  }
  into.runtimeNs = saturatingAdd(into.runtimeNs, one.runtimeNs);
  into.experimentsStopped.push(...one.experimentsStopped);
  addSampling(into.sampling, one.sampling);
  into.sources.push(...one.sources);
  for (const w of one.warnings) warn(into, w.file, w.line, w.message);
  into.warningsDropped += one.warningsDropped;
}
