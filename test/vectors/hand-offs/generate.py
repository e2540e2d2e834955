#!/usr/bin/env python3
"""Writes test/vectors/hand-offs/profile.coz (drawn once; the file is committed as data).

    python3 test/vectors/hand-offs/generate.py   # writes profile.coz with SEED, checks it

Simulated like test/vectors/band (Poisson visits, P(s) = P0 * (1 - slope * s)), in two
processes, with `voluntary-switches` on every experiment (docs/analysis.md section 5.2):
- items (pid 400) hands off fast: its untreated experiments switch 30,000 times a second.
  src/work.cpp:10 (slope 0.6) stays `positive`; src/pause.cpp:20 (slope -0.025, a
  discovery inside the band) and src/io.cpp:30 (no effect), `no-effect` without the
  switches, are `undecided`, withheld for fast hand-offs, with no experiments needed;
  pause keeps its adjusted interval and the point its discoveries.
- calls (pid 401) switches 8,000 times a second in its untreated experiments and 60,000
  in its speedup experiments, which do not count (the pauses make threads wait): not
  fast, and src/log.cpp:8 (no effect) stays `no-effect`.
- A few of calls' experiments have a bad count (`x`, `-3`, `1.5`): they have none, and no
  warning.
"""
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import simulate  # noqa: E402

SEED = 5
P0 = 50000.0  # ns per visit at 0%
ITEMS = [("src/work.cpp:10", 40, 0.6), ("src/pause.cpp:20", 400, -0.025), ("src/io.cpp:30", 240, 0.0)]
CALLS = [("src/rpc.cpp:5", 40, 0.4), ("src/log.cpp:8", 240, 0.0)]
BAD_COUNTS = ["x", "-3", "1.5"]


def with_switches(records, per_second_untreated, per_second_treated):
    """The experiment record (records[0]) with its voluntary-switches for its duration."""
    fields = dict(f.split("=", 1) for f in records[0].split("\t")[1:])
    rate = per_second_untreated if float(fields["speedup"]) == 0 else per_second_treated
    count = round(rate * int(fields["duration"]) / 1e9)
    return [records[0] + f"\tvoluntary-switches={count}"] + records[1:]


def draw(seed):
    rng = random.Random(seed)
    plan = [("items", 400, line, slope) for line, n, slope in ITEMS for _ in range(n)]
    plan += [("calls", 401, line, slope) for line, n, slope in CALLS for _ in range(n)]
    rng.shuffle(plan)
    out = ["startup\ttime=1732190000000000000", "process\tpid=400\tparent=1\tcommand=./items",
           "process\tpid=401\tparent=1\tcommand=./calls"]
    bad = list(BAD_COUNTS)
    for point, pid, line, slope in plan:
        records = simulate.experiment(rng, line, slope, P0, point, pid)
        if point == "items":
            records = with_switches(records, 30000, 30000)
        elif bad and rng.random() < 0.02:
            records = [records[0] + f"\tvoluntary-switches={bad.pop()}"] + records[1:]
        else:
            records = with_switches(records, 8000, 60000)
        out += records
    out += ["samples\tlocation=src/work.cpp:10\tcount=4100", "samples\tlocation=src/pause.cpp:20\tcount=2300",
            "samples\tlocation=src/io.cpp:30\tcount=1200", "samples\tlocation=src/rpc.cpp:5\tcount=900",
            "samples\tlocation=src/log.cpp:8\tcount=700", "runtime\ttime=20000000000"]
    return "\n".join(out) + "\n"


def problems(text):
    a = simulate.analysis_of(HERE, text)
    got = []
    points = {p["name"]: p for p in a["points"]}
    effs = {e["line"]: e for e in a["effects"]}
    items, calls = points["items"], points["calls"]
    if not (items["fast_hand_offs"] and abs(items["hand_offs_per_second"] - 30000) < 5):
        got.append(f"items: {items['hand_offs_per_second']} hand-offs/s, fast {items['fast_hand_offs']}")
    if calls["fast_hand_offs"] or abs(calls["hand_offs_per_second"] - 8000) > 5:
        got.append(f"calls: {calls['hand_offs_per_second']} hand-offs/s, fast {calls['fast_hand_offs']}")
    for line in ("src/pause.cpp:20", "src/io.cpp:30"):
        e = effs[line]
        if not (e["label"] == "undecided" and e["withheld"] == "fast-hand-offs" and e["experiments_needed"] is None):
            got.append(f"{line}: {e['label']} withheld {e['withheld']}")
    if effs["src/pause.cpp:20"]["adjusted_high"] is None or items["discoveries"] < 2:
        got.append("pause.cpp:20 lost its adjusted interval, or items its discoveries")
    if effs["src/work.cpp:10"]["label"] != "positive" or effs["src/rpc.cpp:5"]["label"] != "positive":
        got.append("work.cpp:10 or rpc.cpp:5 not positive")
    if effs["src/log.cpp:8"]["label"] != "no-effect" or effs["src/log.cpp:8"]["withheld"] is not None:
        got.append(f"log.cpp:8: {effs['src/log.cpp:8']['label']}")
    if sum(f"voluntary-switches={b}\t" in text or text.count(f"voluntary-switches={b}\n") for b in BAD_COUNTS) < 3:
        got.append("fewer than 3 bad counts drawn")
    return got


if __name__ == "__main__":
    simulate.write_checked(HERE, draw(SEED), problems)
