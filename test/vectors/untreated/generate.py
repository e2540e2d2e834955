#!/usr/bin/env python3
"""Writes test/vectors/untreated/profile.coz (drawn once; the file is committed as data).

    python3 test/vectors/untreated/generate.py   # writes profile.coz with SEED, checks it

Simulated like test/vectors/fdr: one throughput point `responses`, experiments of
40-60 ms (effective), Poisson visits with mean duration / P(s), P(s) = P0 * (1 - slope * s).
What it covers (docs/analysis.md section 2, untreated experiments):
- src/rare.c:20 is tried 30 times at a speedup but never sampled (selected-samples=0), and
  all its experiments fall in a slow phase of the program (a server's load ramping up: 15%
  fewer visits). Nothing was tried: it is `unmeasured` with 30 untreated experiments; read
  as tries (checked below on a copy with selected-samples=1) it would be labelled
  `negative`, the wrong verdict this rule removes.
- src/mixed.c:30 (no effect) has 24 sampled experiments at a speedup and 12 unsampled ones.
  Its unsampled ones stay in its estimate (a speedup of a line that does not run in some
  phase does nothing there: leaving them out would measure the line only in the phases
  where it runs): measured_experiments 36, untreated_experiments 12.
- src/hot.c:10 (slope 0.6, always sampled) stays `positive`.
"""
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import simulate  # noqa: E402

SEED = 7
P0 = 500000.0  # ns per visit at 0%
SLOW_PHASE = 1.15  # P0 multiplier while the load ramps up


def draw(seed):
    rng = random.Random(seed)
    out = ["startup\ttime=1732190000000000000", "process\tpid=300\tparent=1\tcommand=./server"]

    def experiment(line, s, samples, slope=0.0, slow=False):
        d = rng.randint(40, 60) * 1000000
        period = P0 * (1 - slope * s) * (SLOW_PHASE if slow else 1.0)
        out.append(f"experiment\tselected={line}\tspeedup={s:.2f}\tduration={d}\tselected-samples={samples}\tpid=300")
        out.append(f"throughput-point\tname=responses\tdelta={simulate.poisson(rng, d / period)}")

    # The ramp-up: rare.c:20 is selected 30 times, at a speedup, never sampled.
    for _ in range(30):
        experiment("src/rare.c:20", rng.randint(1, 20) / 20, 0, slow=True)
    plan = [("src/hot.c:10", 0.6)] * 40 + [("src/mixed.c:30", 0.0)] * 36 + [("src/base.c:5", 0.0)] * 60
    rng.shuffle(plan)
    mixed_unsampled = 0
    for line, slope in plan:
        if line == "src/base.c:5":
            experiment(line, 0.0, rng.randint(1, 9))
        elif line == "src/mixed.c:30" and mixed_unsampled < 12:
            mixed_unsampled += 1
            experiment(line, rng.randint(1, 20) / 20, 0)
        else:
            experiment(line, rng.randint(1, 20) / 20, rng.randint(1, 9), slope)
    out += ["samples\tlocation=src/hot.c:10\tcount=5200", "samples\tlocation=src/mixed.c:30\tcount=900",
            "samples\tlocation=src/base.c:5\tcount=2600", "samples\tlocation=src/rare.c:20\tcount=3",
            "runtime\ttime=9000000000"]
    return "\n".join(out) + "\n"


def problems(text):
    got = []
    effs = {e["line"]: e for e in simulate.analysis_of(HERE, text)["effects"]}
    rare, mixed, hot = effs["src/rare.c:20"], effs["src/mixed.c:30"], effs["src/hot.c:10"]
    if not (rare["label"] == "unmeasured" and rare["untreated_experiments"] == 30):
        got.append(f"rare.c:20: {rare['label']}, {rare['untreated_experiments']} untreated")
    if not (mixed["untreated_experiments"] == 12 and mixed["measured_experiments"] == 36):
        got.append(f"mixed.c:30: {mixed['measured_experiments']} measured, {mixed['untreated_experiments']} untreated")
    if mixed["label"] not in ("undecided", "no-effect") or abs(mixed["impact"]) > 0.02:
        got.append(f"mixed.c:30: {mixed['label']} {mixed['impact']:+.3f}")
    if hot["label"] != "positive":
        got.append(f"hot.c:10: {hot['label']}")
    old = {e["line"]: e for e in simulate.analysis_of(HERE, text.replace("selected-samples=0\t", "selected-samples=1\t"))["effects"]}
    if old["src/rare.c:20"]["label"] != "negative":
        got.append(f"rare.c:20 read as s > 0 points: {old['src/rare.c:20']['label']}, not negative")
    return got


if __name__ == "__main__":
    simulate.write_checked(HERE, draw(SEED), problems)
