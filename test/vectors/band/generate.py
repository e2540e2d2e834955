#!/usr/bin/env python3
"""Writes test/vectors/band/profile.coz (drawn once; the file is committed as data).

    python3 test/vectors/band/generate.py   # writes profile.coz with SEED, checks it

Simulated like test/vectors/fdr: one throughput point `items`, experiments of 40-60 ms
(effective), Poisson visits with mean duration / P(s), P(s) = P0 * (1 - slope * s), here
P0 = 50 us (about 1,000 visits per experiment, so that small effects become significant).
What it covers (docs/analysis.md section 7, the no-effect band):
- src/pause.cpp:20 (slope -0.025: a virtual-speedup bias of the size seen on real
  programs) is tried 200 times: its adjusted interval excludes 0, it is one of the point's
  discoveries, and its estimate (about -1.2%) is inside the ±2.5% band: `no-effect`, where the rule before
  the band labelled every discovery below 0 `negative`.
- src/send.cpp:30 (slope 0.098) is tried only at 50%, as under --fixed-speedup 50: +4.9%
  at 50%, so its impact, the mean over the 0..50% measured, is about half that, inside the
  band; the band reads its size at 50% from the slope: `positive`.
- src/work.cpp:10 (slope 0.6) is `positive`; src/io.cpp:30 (no effect, not a discovery)
  is `no-effect` as before.
"""
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import reference  # noqa: E402
import simulate  # noqa: E402

SEED = 3
P0 = 50000.0  # ns per visit at 0%
PLAN = [("src/work.cpp:10", 40, 0.6), ("src/pause.cpp:20", 400, -0.025), ("src/io.cpp:30", 240, 0.0),
        ("src/send.cpp:30", 150, 0.098)]
FIXED_50 = "src/send.cpp:30"


def draw(seed):
    rng = random.Random(seed)
    plan = [(line, slope) for line, n, slope in PLAN for _ in range(n)]
    rng.shuffle(plan)
    out = ["startup\ttime=1732190000000000000", "process\tpid=400\tparent=1\tcommand=./worker"]
    for line, slope in plan:
        out += simulate.experiment(rng, line, slope, P0, "items", 400, 0.5 if line == FIXED_50 else None)
    out += ["samples\tlocation=src/work.cpp:10\tcount=4100", "samples\tlocation=src/pause.cpp:20\tcount=2300",
            "samples\tlocation=src/io.cpp:30\tcount=1200", "samples\tlocation=src/send.cpp:30\tcount=900",
            "runtime\ttime=20000000000"]
    return "\n".join(out) + "\n"


def problems(text):
    a = simulate.analysis_of(HERE, text)
    got = []
    effs = {e["line"]: e for e in a["effects"]}
    pause, work, io = effs["src/pause.cpp:20"], effs["src/work.cpp:10"], effs["src/io.cpp:30"]
    if not (pause["label"] == "no-effect" and pause["adjusted_high"] is not None and pause["adjusted_high"] < -0.002
            and -reference.H + 0.003 < pause["impact"] < -0.005):
        got.append(f"pause.cpp:20: {pause['label']} {pause['impact']:+.4f} adjusted_high {pause['adjusted_high']}")
    if work["label"] != "positive":
        got.append(f"work.cpp:10: {work['label']}")
    if io["label"] != "no-effect" or io["adjusted_low"] is not None:
        got.append(f"io.cpp:30: {io['label']}, adjusted {io['adjusted_low']}")
    send = effs["src/send.cpp:30"]
    if not (send["label"] == "positive" and 0.005 < send["impact"] < reference.H - 0.003
            and abs(send["slope"]) * 0.5 > reference.H + 0.005):
        got.append(f"send.cpp:30: {send['label']} impact {send['impact']:+.4f} slope {send['slope']:+.4f}")
    if a["points"][0]["discoveries"] != 3:
        got.append(f"{a['points'][0]['discoveries']} discoveries, not 3")
    return got


if __name__ == "__main__":
    simulate.write_checked(HERE, draw(SEED), problems)
