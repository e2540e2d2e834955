// The conventional profile shown beside the causal one (docs/analysis.md §9):
// where the samples fell (lines, functions, call stacks), which out-of-scope
// function (memcpy, qsort...) each line's stacks continue in, and where threads waited.
import { compareStrings as cmp } from "./order";
import { Profile } from "./profile";

/** The out-of-scope function in which a line's sampled call stacks continue most often. */
export interface Callee {
  function: string; // demangled name, or the offset in hex ("0x1f40") without a symbol
  library: string; // the object's base name ("libc.so.6")
  samples: number; // the line's stack samples that continue in this callee
  stack_samples: number; // all stack samples whose innermost in-scope frame is the line
  share: number; // samples / stack_samples
}

export interface LineSamples {
  location: string;
  function: string;
  samples: number;
  share: number;
  callee: Callee | null;
}
export interface FunctionSamples {
  function: string;
  samples: number;
  share: number;
  lines: number;
}
export interface StackSamples {
  frames: string[];
  count: number;
  share: number;
}
export interface BlockedSite {
  site: string;
  kind: string;
  time_ns: number;
  count: number;
}
export interface ConventionalProfile {
  lines: LineSamples[];
  functions: FunctionSamples[];
  stacks: StackSamples[];
  blocked: BlockedSite[];
}

/**
 * One frame of a `stack` record: in-scope (`FILE:LINE`, `BINARY:FUNCTION`, either
 * followed by ` [PROGRAM]` under `coz run --system`: see isLocation), an
 * out-of-scope callee `FUNCTION [LIBRARY]` (ends with "]", contains " [";
 * LIBRARY is between the last " [" and the final "]"), or skipped: empty, or
 * callee-shaped with an empty FUNCTION or LIBRARY.
 */
export type StackFrame = { kind: "in-scope" } | { kind: "callee"; function: string; library: string } | { kind: "skipped" };

/** Whether `text` is an in-scope location without its ` [PROGRAM]`: it ends with `:LINE`, or is `/PATH:FUNCTION` (a callee's function name is neither). */
export function isLocation(text: string): boolean {
  const colon = text.lastIndexOf(":");
  if (colon < 0 || colon + 1 === text.length) return false;
  return text.startsWith("/") || /^[0-9]+$/.test(text.slice(colon + 1));
}

export function parseStackFrame(frame: string): StackFrame {
  if (frame === "") return { kind: "skipped" };
  const open = frame.lastIndexOf(" [");
  if (!frame.endsWith("]") || open < 0) return { kind: "in-scope" };
  const fn = frame.slice(0, open);
  if (isLocation(fn)) return { kind: "in-scope" }; // then [PROGRAM]
  const library = frame.slice(open + 2, -1);
  return fn === "" || library === "" ? { kind: "skipped" } : { kind: "callee", function: fn, library };
}

/** Per in-scope line: its top callee (docs/analysis.md §9, "Callees"); lines without one are absent. */
export function topCallees(stacks: Map<string, number>): Map<string, Callee> {
  const lines = new Map<string, { stackSamples: number; callees: Map<string, number> }>();
  for (const [raw, count] of stacks) {
    let line: string | null = null; // innermost in-scope frame so far
    let callee: string | null = null; // the frame right after it, when a callee
    let rightAfterLine = false;
    for (const frame of raw.split(";")) {
      const kind = parseStackFrame(frame).kind;
      if (kind === "in-scope") {
        line = frame;
        callee = null;
        rightAfterLine = true;
      } else if (kind === "callee") {
        if (rightAfterLine) callee = frame;
        rightAfterLine = false;
      }
    }
    if (line === null) continue; // only out-of-scope frames: no line to charge
    let t = lines.get(line);
    if (!t) lines.set(line, (t = { stackSamples: 0, callees: new Map() }));
    t.stackSamples = Math.min(t.stackSamples + count, 18446744073709551615);
    if (callee !== null) t.callees.set(callee, Math.min((t.callees.get(callee) ?? 0) + count, 18446744073709551615));
  }
  const out = new Map<string, Callee>();
  for (const [line, t] of lines) {
    let top: [string, number] | null = null;
    // Largest count; on a tie the first in byte order.
    for (const entry of t.callees) if (top === null || entry[1] > top[1] || (entry[1] === top[1] && cmp(entry[0], top[0]) < 0)) top = entry;
    if (top === null) continue;
    const frame = parseStackFrame(top[0]) as { function: string; library: string };
    out.set(line, { function: frame.function, library: frame.library, samples: top[1], stack_samples: t.stackSamples, share: top[1] / t.stackSamples });
  }
  return out;
}

export function conventionalProfile(profile: Profile): { total_samples: number; profile: ConventionalProfile; callees: Map<string, Callee> } {
  let total = 0;
  for (const c of profile.samples.values()) total = Math.min(total + c, 18446744073709551615);
  const share = (n: number) => (total > 0 ? n / total : 0);

  const callees = topCallees(profile.stacks);
  const lines: LineSamples[] = [];
  const byFunction = new Map<string, FunctionSamples>();
  for (const [location, samples] of profile.samples) {
    const fn = profile.functions.get(location) ?? "";
    lines.push({ location, function: fn, samples, share: share(samples), callee: callees.get(location) ?? null });
    if (fn === "") continue; // a location without a name is in no function
    const f = byFunction.get(fn) ?? { function: fn, samples: 0, share: 0, lines: 0 };
    f.samples += samples;
    f.lines += 1;
    byFunction.set(fn, f);
  }
  lines.sort((a, b) => b.samples - a.samples || cmp(a.location, b.location));
  const functions = [...byFunction.values()];
  for (const f of functions) f.share = share(f.samples);
  functions.sort((a, b) => b.samples - a.samples || cmp(a.function, b.function));

  let stackTotal = 0;
  for (const c of profile.stacks.values()) stackTotal += c;
  const raw = [...profile.stacks.entries()].sort((a, b) => b[1] - a[1] || cmp(a[0], b[0]));
  const stacks = raw.map(([frames, count]) => ({
    frames: frames.split(";"),
    count,
    share: stackTotal > 0 ? count / stackTotal : 0,
  }));

  const blocked = [...profile.blocked.values()]
    .map((b) => ({ site: b.site, kind: b.kind, time_ns: b.timeNs, count: b.count }))
    .sort((a, b) => b.time_ns - a.time_ns || cmp(a.site, b.site) || cmp(a.kind, b.kind));
  return { total_samples: total, profile: { lines, functions, stacks, blocked }, callees };
}

/** A node of the flame graph: a frame, its samples inclusive of callees. */
export interface FlameNode {
  name: string;
  value: number;
  children: FlameNode[];
}

/** Merges the folded stacks into a tree (outermost frame at the root's children); null without stacks. */
export function flameTree(stacks: StackSamples[]): FlameNode | null {
  const root: FlameNode = { name: "all samples", value: 0, children: [] };
  const index = new Map<FlameNode, Map<string, FlameNode>>();
  for (const { frames, count } of stacks) {
    if (count === 0) continue;
    root.value += count;
    let node = root;
    for (const frame of frames) {
      if (parseStackFrame(frame).kind === "skipped") continue; // empty or malformed: as the analysis does
      let kids = index.get(node);
      if (!kids) index.set(node, (kids = new Map()));
      let child = kids.get(frame);
      if (!child) {
        child = { name: frame, value: 0, children: [] };
        kids.set(frame, child);
        node.children.push(child);
      }
      child.value += count;
      node = child;
    }
  }
  const order = (n: FlameNode) => {
    n.children.sort((a, b) => b.value - a.value || cmp(a.name, b.name));
    n.children.forEach(order);
  };
  order(root);
  return root.value > 0 ? root : null;
}

/**
 * "FILE", "LINE" and "PROGRAM" of a location ("FILE:LINE", followed by " [PROGRAM]" under `coz run --system`);
 * LINE is "" when the part after the last ':' is not a number, PROGRAM "" when there is none.
 */
export function splitLocation(loc: string): { file: string; line: string; program: string } {
  let program = "";
  const open = loc.lastIndexOf(" [");
  if (loc.endsWith("]") && open > 0 && isLocation(loc.slice(0, open))) {
    program = loc.slice(open + 2, -1);
    loc = loc.slice(0, open);
  }
  const colon = loc.lastIndexOf(":");
  if (colon < 0) return { file: loc, line: "", program };
  const tail = loc.slice(colon + 1);
  return /^[0-9]+$/.test(tail) ? { file: loc.slice(0, colon), line: tail, program } : { file: loc, line: "", program };
}
