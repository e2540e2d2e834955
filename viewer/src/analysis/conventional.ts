// The conventional profile shown beside the causal one (docs/analysis.md §9):
// where the samples fell (lines, functions, call stacks) and where threads waited.
import { compareStrings as cmp } from "./order";
import { Profile } from "./profile";

export interface LineSamples {
  location: string;
  function: string;
  samples: number;
  share: number;
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


export function conventionalProfile(profile: Profile): { total_samples: number; profile: ConventionalProfile } {
  let total = 0;
  for (const c of profile.samples.values()) total = Math.min(total + c, 18446744073709551615);
  const share = (n: number) => (total > 0 ? n / total : 0);

  const lines: LineSamples[] = [];
  const byFunction = new Map<string, FunctionSamples>();
  for (const [location, samples] of profile.samples) {
    const fn = profile.functions.get(location) ?? "";
    lines.push({ location, function: fn, samples, share: share(samples) });
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
  return { total_samples: total, profile: { lines, functions, stacks, blocked } };
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
      if (frame === "") continue;
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

/** "FILE" and "LINE" of a location; LINE is "" when the part after the last ':' is not a number. */
export function splitLocation(loc: string): { file: string; line: string } {
  const colon = loc.lastIndexOf(":");
  if (colon < 0) return { file: loc, line: "" };
  const tail = loc.slice(colon + 1);
  return /^[0-9]+$/.test(tail) ? { file: loc.slice(0, colon), line: tail } : { file: loc, line: "" };
}
