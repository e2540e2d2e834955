#!/usr/bin/env python3
"""Writes test/vectors/percentiles/profile.coz (drawn once; the file is committed as data).

    python3 test/vectors/percentiles/generate.py   # writes profile.coz with SEED, checks it

docs/analysis.md section 13. One server, its requests arriving as a Poisson stream (4 a ms,
whatever the speedup: an open load), each request's latency in the virtually sped-up
program drawn as
- a common path, 1 ms + Gamma(4, 0.5 ms), which the line src/parse.cpp:30 runs: at line
  speedup s it takes (1 - 0.4 s) of its time (every request a little shorter);
- for 2% of the requests a slow path on top, 6 ms + Exp(3 ms), which src/slow.cpp:70 runs:
  at s it takes (1 - 0.8 s) of its time (only the tail shorter: p99 lies among them).
Experiments of 20-50 ms (effective), requests begun from 30 ms before each one: a request is
recorded in the experiment's `latency-histogram` (scheme log2-32) only when it began and ended
inside it, so the slow ones, a few ms to 15 ms, are seen less often in the short experiments
(inclusion weights up to 4). Each experiment also has its `latency-point` (arrivals,
departures, in flight at the end, mean-in-flight over the experiment) and a throughput point
`served` (departures).
Plan: 36 experiments at 0% (either line), each line 4 experiments at 25, 50, 75 and 100%, and
src/slow.cpp:70 one experiment of 20 ms at 10%: too few requests for its p99 (null there).
One extra `latency-histogram` has the unknown scheme log10-8: skipped with a warning.
"""
import math
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import simulate  # noqa: E402

SEED = 53
MS = 1000000
RATE = 4.0 / MS  # requests per ns
SLOW_SHARE = 0.02
SLOW, COMMON = "src/slow.cpp:70", "src/parse.cpp:30"
SPEEDUPS = (0.25, 0.5, 0.75, 1.0)
LOOKBACK = 30 * MS  # requests begun this long before an experiment can still be in flight in it


def bucket_of(ns):
    """libcoz/latency/latency_buckets.cpp: 32 buckets per power of two, the last from 2^45 ns."""
    if ns < 32:
        return ns
    octave = ns.bit_length() - 1
    if octave > 44:
        return 32 + (44 - 5 + 1) * 32 - 1
    shift = octave - 5
    return 32 + shift * 32 + ((ns >> shift) - 32)


def latency(rng, line, s):
    """One request's virtual latency (ns) in an experiment of `line` at speedup s."""
    common = (1.0 + rng.gammavariate(4.0, 0.5)) * MS
    if line == COMMON:
        common *= 1 - 0.4 * s
    slow = 0.0
    if rng.random() < SLOW_SHARE:
        slow = (6.0 + rng.expovariate(1 / 3.0)) * MS
        if line == SLOW:
            slow *= 1 - 0.8 * s
    return int(common + slow)


def experiment(rng, line, s, d, bad_scheme=False):
    t, begun = -LOOKBACK, []
    while True:
        t += rng.expovariate(RATE)
        if t >= d:
            break
        begun.append((t, latency(rng, line, s)))
    arrivals = sum(1 for t0, _ in begun if t0 >= 0)
    departures = sum(1 for t0, v in begun if 0 <= t0 + v < d)
    in_flight = sum(1 for t0, v in begun if t0 + v >= d)
    mean = sum(max(0.0, min(d, t0 + v) - max(0.0, t0)) for t0, v in begun) / d
    counts = {}
    for t0, v in begun:
        if t0 >= 0 and t0 + v < d:  # began and ended within the experiment
            counts[bucket_of(v)] = counts.get(bucket_of(v), 0) + 1
    buckets = ",".join(f"{b}:{n}" for b, n in sorted(counts.items()))
    out = [f"experiment\tselected={line}\tspeedup={s:.2f}\tduration={d}\tselected-samples={rng.randint(1, 9)}"
           f"\tpid=530",
           f"latency-point\tname=request\tarrivals={arrivals}\tdepartures={departures}\tdifference={in_flight}"
           f"\tmean-in-flight={mean:.6f}"]
    if buckets:
        out.append(f"latency-histogram\tname=request\tscheme=log2-32\tbuckets={buckets}")
    if bad_scheme:
        out.append(f"latency-histogram\tname=request\tscheme=log10-8\tbuckets=6:{len(counts)}")
    out.append(f"throughput-point\tname=served\tdelta={departures}")
    return out


def draw(seed):
    rng = random.Random(seed)
    plan = [(rng.choice((SLOW, COMMON)), 0.0) for _ in range(36)]
    plan += [(line, s) for line in (SLOW, COMMON) for s in SPEEDUPS for _ in range(4)]
    rng.shuffle(plan)
    plan.insert(len(plan) // 2, (SLOW, 0.10))
    bad_at = 5  # a 0% experiment's second histogram: the unknown scheme
    out = ["startup\ttime=1732190000000000000", "process\tpid=530\tparent=1\tcommand=./server"]
    for i, (line, s) in enumerate(plan):
        d = 20 * MS if s == 0.10 else rng.randint(20, 50) * MS
        out += experiment(rng, line, s, d, bad_scheme=(i == bad_at))
    out += [f"samples\tlocation={COMMON}\tcount=3100", f"samples\tlocation={SLOW}\tcount=240",
            "samples\tlocation=src/main.cpp:12\tcount=900", "runtime\ttime=3000000000"]
    return "\n".join(out) + "\n"


def problems(text):
    a = simulate.analysis_of(HERE, text)
    got = []
    if len(text) > 200000:
        got.append(f"profile of {len(text)} bytes")
    pct = a.get("percentiles") or []
    if [p["name"] for p in pct] != ["request"]:
        return got + ["no percentiles of request"]
    p = pct[0]
    lines = {l["line"]: l for l in p["lines"]}
    if [l["line"] for l in p["lines"]] != [SLOW, COMMON]:
        got.append("the slow path does not rank first by p99")
    else:
        slow, common = lines[SLOW]["at_half"], lines[COMMON]["at_half"]
        if not (slow[2]["change"] > 0.15 and slow[2]["low"] > 0 and abs(slow[0]["change"]) < 0.03):
            got.append(f"slow path at 50%: p50 {slow[0]['change']}, p99 {slow[2]['change']} low {slow[2]['low']}")
        if not (common[0]["change"] > 0.1 and common[0]["change"] > common[2]["change"] + 0.05):
            got.append(f"common path at 50%: p50 {common[0]['change']}, p99 {common[2]['change']}")
    tenth = [c for c in lines[SLOW]["curve"] if c["line_speedup"] == 0.1]
    if not (tenth and tenth[0]["levels"][2]["latency_ns"] is None and tenth[0]["levels"][0]["latency_ns"] is not None
            and tenth[0]["levels"][2]["change"] is None):
        got.append("the 10% cell of slow.cpp:70 is not null at p99 only")
    if any(c["levels"][2]["latency_ns"] is None for l in p["lines"] for c in l["curve"] if c["line_speedup"] != 0.1):
        got.append("another cell without a p99")
    recorded = 0  # the 0% experiments' requests as recorded, against their weight
    zero = False
    for line in text.splitlines():
        if line.startswith("experiment"):
            zero = "speedup=0.00" in line
        elif "scheme=log2-32" in line and zero:
            recorded += sum(int(b.split(":")[1]) for b in line.split("buckets=")[1].split(","))
    if not p["baseline_requests"] > 1.03 * recorded:
        got.append(f"inclusion weights barely matter: {p['baseline_requests']} weighted of {recorded}")
    bad = [i for i, l in enumerate(text.splitlines(), 1) if "scheme=log10-8" in l]
    if [w["line"] for w in a["warnings"]] != bad or len(bad) != 1:
        got.append(f"warnings at {[w['line'] for w in a['warnings']]}, the unknown scheme at {bad}")
    return got


if __name__ == "__main__":
    simulate.write_checked(HERE, draw(SEED), problems)
