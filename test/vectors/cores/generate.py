#!/usr/bin/env python3
"""Writes test/vectors/cores/profile.coz (drawn once; the file is committed as data).

    python3 test/vectors/cores/generate.py

docs/analysis.md section 5.1. Two progress points from two processes of one run, every
experiment with core figures (cores=2):
- `items` (pid 7): its threads keep 1.9 cores busy and almost never wait for one
  (waiting-for-core 0.02): not contended, so no bound. src/free.cpp:10 (CPU share 0.5)
  reads as if a 50% speedup gave ~40%, above what 1.9 busy cores would allow
  (1 - 0.95 * 0.75 = 0.2875 at 50%), and keeps it. src/crit.cpp:20 has a smaller effect.
- `jobs` (pid 8): threads waiting for a core (waiting-for-core 0.6): contended. Its
  clear effect (src/pool.cpp:30) and its settled no-effect line (src/disp.cpp:40) are
  both undecided with experiments_needed null, and their 50% intervals reach the bound.
- Records whose core figures are partial or bad (no waiting-for-core=, cores=0,
  cores-busy=-1, waiting-for-core=x) have none, without a warning.
After writing, reference.py's analysis is checked for each of these properties.
"""
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import simulate  # noqa: E402

SEED = 7
P0 = 500000.0

# point, pid, waiting, [(line, experiments, slope)]
POINTS = [("items", 7, 0.02, [("src/free.cpp:10", 60, 0.80), ("src/crit.cpp:20", 60, 0.10)]),
          ("jobs", 8, 0.60, [("src/pool.cpp:30", 60, 0.60), ("src/disp.cpp:40", 300, 0.0)])]
BAD_FIGURES = ["\tcores=2\tcores-busy=1.900", "\tcores=0\tcores-busy=1.9\twaiting-for-core=0.1",
               "\tcores=2\tcores-busy=-1\twaiting-for-core=0.1", "\tcores=2\tcores-busy=1.9\twaiting-for-core=x"]


def draw(seed):
    rng = random.Random(seed)
    out = ["startup\ttime=1732190000000000000"]
    bad = 0
    for point, pid, waiting, lines in POINTS:
        out.append(f"process\tpid={pid}\tparent=1\tcommand=./app")
        plan = [line for line, n, _ in lines for _ in range(n)]
        rng.shuffle(plan)
        slopes = {line: slope for line, _, slope in lines}
        for line in plan:
            head, tail = simulate.experiment(rng, line, slopes[line], P0, point, pid, speedup=None)
            busy = 1.9 + rng.uniform(-0.05, 0.05)
            figures = f"\tcores=2\tcores-busy={busy:.3f}\twaiting-for-core={waiting + rng.uniform(-0.01, 0.01):.3f}"
            if rng.random() < 0.03:
                figures = BAD_FIGURES[bad % len(BAD_FIGURES)]
                bad += 1
            out += [head + figures, tail]
    out.append("samples\tlocation=src/free.cpp:10\tcount=5000\tfunction=free_work")
    out.append("samples\tlocation=src/crit.cpp:20\tcount=2000\tfunction=crit_work")
    out.append("samples\tlocation=src/pool.cpp:30\tcount=2500\tfunction=pool_work")
    out.append("samples\tlocation=src/disp.cpp:40\tcount=500\tfunction=disp_work")
    # 10,000 samples of 1 ms in 10 s of CPU: src/free.cpp:10's share is 0.5
    out.append("sampling\tsamples=10000\tin-scope=10000\tlost=0\tperiod=1000000\tcpu-time=10000000000")
    return "\n".join(out) + "\n", bad


def problems(text):
    a = simulate.analysis_of(HERE, text)
    wrong = []
    points = {p["name"]: p for p in a["points"]}
    eff = {(e["point"], e["line"]): e for e in a["effects"]}
    at50 = lambda e: next((c for c in e["curve"] if c["line_speedup"] == 0.5), None)
    if points["items"]["contended"] or not points["jobs"]["contended"]:
        wrong.append("items must not be contended, jobs must")
    free = at50(eff[("items", "src/free.cpp:10")])
    if not free or free["bounded"] or free["bound"] is not None or not free["program_speedup"] > 0.2875:
        wrong.append("free.cpp:10 bounded at 50% in a point that is not contended")
    crit = at50(eff[("items", "src/crit.cpp:20")])
    if not crit or crit["bound"] is not None:
        wrong.append("crit.cpp:20 has a bound in a point that is not contended")
    if eff[("items", "src/free.cpp:10")]["label"] != "positive":
        wrong.append("free.cpp:10 not positive")
    for line in ("src/pool.cpp:30", "src/disp.cpp:40"):
        e = eff[("jobs", line)]
        if e["label"] != "undecided" or e["experiments_needed"] is not None:
            wrong.append(f"{line} not undecided for good")
        c = at50(e)
        if not c or c["high"] != c["bound"]:
            wrong.append(f"{line}: its 50% interval does not reach the bound")
    if a["warnings"]:
        wrong.append("warnings")
    return wrong


if __name__ == "__main__":
    text, bad = draw(SEED)
    if bad == 0:
        sys.exit("no record with bad core figures")
    simulate.write_checked(HERE, text, problems)
