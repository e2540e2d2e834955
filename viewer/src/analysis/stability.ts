// Split-half stability of the ranking (docs/analysis.md section 8): the
// even- and odd-numbered experiments are analysed alone, and each point's top
// lines are compared between the two halves. A ranking whose top lines agree
// would likely come out the same in a second run.
import type { LineEffect, PointKind, PointSummary } from "./analysis";
import { stabilityTop } from "./constants";
import type { Experiment } from "./profile";

export interface Stability {
  name: string;
  kind: PointKind;
  top: number; // K: lines compared
  agree: number; // of them, in both halves' top K
}

/** The lines of the first `k` measured effects of `point` in a ranking. */
function topLines(ranked: LineEffect[], point: PointSummary, k: number): string[] {
  const top: string[] = [];
  for (const e of ranked) {
    if (top.length === k) break;
    if (e.measured && e.point === point.name && e.kind === point.kind) top.push(e.line);
  }
  return top;
}

/**
 * `rank(experiments)` is the ranked, filtered effects of an analysis of those
 * experiments alone (same options as the whole); `points` and `ranked` are the
 * whole analysis's. Points without a measured effect get no entry.
 */
export function splitHalfStability(
  experiments: Experiment[],
  points: PointSummary[],
  ranked: LineEffect[],
  rank: (experiments: Experiment[]) => LineEffect[],
): Stability[] {
  const a = rank(experiments.filter((_, i) => i % 2 === 0));
  const b = rank(experiments.filter((_, i) => i % 2 === 1));
  const out: Stability[] = [];
  for (const p of points) {
    const K = topLines(ranked, p, stabilityTop).length;
    if (K === 0) continue;
    const topB = new Set(topLines(b, p, K));
    const agree = topLines(a, p, K).filter((line) => topB.has(line)).length;
    out.push({ name: p.name, kind: p.kind, top: K, agree });
  }
  return out;
}
