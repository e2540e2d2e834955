"""The simulation the generated vectors share (fdr, untreated, band): Poisson visits of
one throughput point, P(s) = P0 * (1 - slope * s), each experiment selecting a line and
a speedup as the runtime does. Imported by the generate.py scripts; nothing is random at
test time (their profiles are committed as data)."""
import math
import sys

import reference


def poisson(rng, mean):
    # Knuth's method in chunks (exp(-mean) underflows nothing at mean <= 500)
    n, left = 0, mean
    while left > 0:
        step = min(left, 50.0)
        left -= step
        limit, p = math.exp(-step), rng.random()
        while p > limit:
            n += 1
            p *= rng.random()
    return n


def experiment(rng, line, slope, p0, point, pid, speedup=None):
    """One experiment's two records: 0% with probability 0.25, else 5%..100%, or always
    `speedup` (a run at --fixed-speedup); 40-60 ms."""
    s = 0.0 if rng.random() < 0.25 else rng.randint(1, 20) / 20
    if speedup is not None:
        s = speedup
    d = rng.randint(40, 60) * 1000000
    visits = poisson(rng, d / (p0 * (1 - slope * s)))
    return [f"experiment\tselected={line}\tspeedup={s:.2f}\tduration={d}\tselected-samples={rng.randint(1, 9)}"
            f"\tpid={pid}",
            f"throughput-point\tname={point}\tdelta={visits}"]


def analysis_of(here, text):
    """reference.py's analysis of a profile text, read as a file of the vector's directory."""
    path = here / "profile.coz.check"
    path.write_text(text)
    try:
        return reference.clean(reference.analyze(reference.read([path.name], here)))
    finally:
        path.unlink()


def write_checked(here, text, problems):
    """Writes the vector's profile.coz if the draw covers what it is meant to (problems(text) empty)."""
    wrong = problems(text)
    if wrong:
        sys.exit(f"{here.name}: the draw misses: " + "; ".join(wrong))
    (here / "profile.coz").write_text(text)
    print("wrote", here / "profile.coz")
