#!/usr/bin/env python3
"""SQLite in an application, with injected work of known cost (bench/real/README.md).

Debian's sqlite3 source is fetched, its amalgamation (sqlite3.c) generated,
patched, and compiled -O2 -g into sqlite_load.c, a program whose worker
thread answers point queries on an in-memory table (progress point `query`)
while a monitor thread counts a small table every millisecond:
- `query`: a busy loop of COZ_INJECT_QUERY iterations in
  sqlite3BtreeTableMoveto, once per query (the B-tree search of the key);
- `off`: a busy loop of COZ_INJECT_OFF iterations in sqlite3BtreeCount,
  which only the monitor runs: off the queries' path, on the second core.
One build serves every variant (the counts come from the environment). The
truth is each variant's query rate in interleaved rounds; the profiles are
default-mode `coz run`s of the full variant. Prints markdown tables; exit 0.

    bench/real/sqlite.py [--work DIR] [--rounds N] [--truth-seconds S]
                         [--profile-seconds S] [--runs N]
"""
import subprocess
import sys

import common
from common import log


def prepare(work):
    common.need_packages("tcl")
    src = common.debian_source("sqlite3", work)
    amalgamation = src / "sqlite3.c"
    if not amalgamation.exists():
        log("generating the sqlite3.c amalgamation")
        subprocess.run(["./configure", "--disable-tcl"], cwd=src, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["make", "sqlite3.c"], cwd=src, check=True, stdout=subprocess.DEVNULL)
    common.shutil.copy(common.HERE / "inject.h", src / "inject.h")
    # Included first (its getenv, strtoul): the build defines _GNU_SOURCE, as the amalgamation would.
    common.insert_after(amalgamation, "#define SQLITE_AMALGAMATION 1", '#include "inject.h"')
    common.insert_after(amalgamation, "int rc;",
                        "  static unsigned long coz_query_iters = ~0ul; if (coz_query_iters == ~0ul) "
                        "coz_query_iters = coz_inject_iters(\"COZ_INJECT_QUERY\");\n"
                        "  COZ_INJECT_SPIN(coz_query_iters); /* @inject:query */",
                        within="BtCursor *pCur,          /* The cursor to be moved */")  # sqlite3BtreeTableMoveto
    common.insert_after(amalgamation, "int rc;",
                        "  static unsigned long coz_off_iters = ~0ul; if (coz_off_iters == ~0ul) "
                        "coz_off_iters = coz_inject_iters(\"COZ_INJECT_OFF\");\n"
                        "  COZ_INJECT_SPIN(coz_off_iters); /* @inject:off */",
                        within="SQLITE_PRIVATE int sqlite3BtreeCount(sqlite3 *db, BtCursor *pCur, i64 *pnEntry){")
    binary = work / "sqlite_load"
    driver = common.HERE / "sqlite_load.c"
    if not binary.exists() or binary.stat().st_mtime < max(p.stat().st_mtime for p in (amalgamation, driver)):
        log("building sqlite_load with sqlite3.c, -O2 -g")
        subprocess.run(["cc", "-O2", "-g", "-pthread", f"-I{src}", f"-I{common.REPO / 'include'}",
                        "-D_GNU_SOURCE", "-DSQLITE_OMIT_LOAD_EXTENSION", "-o", binary, driver, amalgamation, "-lm"], check=True)
    return src, binary, common.line_of(amalgamation, "@inject:query"), common.line_of(amalgamation, "@inject:off")


def run_rate(command, env, seconds):
    out = subprocess.run([*command, str(seconds)], env={**common.os.environ, **env}, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split(":")[1].split()[0])


def main():
    args = common.arguments(__doc__, query=1500, off=200000)
    src, binary, query_line, off_line = prepare(args.work)
    full = {"COZ_INJECT_QUERY": str(args.query_iters), "COZ_INJECT_OFF": str(args.off_iters)}
    variants = {
        "full": full,
        "query halved": {**full, "COZ_INJECT_QUERY": str(args.query_iters // 2)},
        "query removed": {**full, "COZ_INJECT_QUERY": "0"},
        "off removed": {**full, "COZ_INJECT_OFF": "0"},
    }

    log(f"truth: {args.rounds} interleaved rounds of {args.truth_seconds} s per variant")
    rates = common.interleaved(list(variants), args.rounds,
                               lambda name: run_rate([binary], variants[name], args.truth_seconds))
    rate = {v: common.median(r) for v, r in rates.items()}

    def profile_once(path, *options):
        path.unlink(missing_ok=True)
        run_rate(common.coz("run", "-o", path, *options, "---", binary), full, args.profile_seconds)

    profiles = []
    for run in range(args.runs):
        log(f"profile run {run + 1}/{args.runs}: {args.profile_seconds} s")
        profiles.append(args.work / f"sqlite-{run + 1}.coz")
        profile_once(profiles[-1])

    modes = {}
    for mode in ("line", "function"):
        modes[mode] = args.work / f"sqlite-{mode}.coz"
        log(f"profile run with --granularity {mode}")
        profile_once(modes[mode], "--granularity", mode)

    print(f"## SQLite {src.name.split('-')[-1]} (amalgamation, in-memory table of 200,000 rows), "
          "point queries by key, one worker thread\n")
    print(f"Throughput, median of {args.rounds} interleaved rounds of {args.truth_seconds:g} s:\n")
    common.table(["variant", "queries/s", "rounds"],
                 [[v, f"{rate[v]:.0f}", " ".join(f"{x:.0f}" for x in rates[v])] for v in variants])
    truths = common.print_truths(rates, {"@50%": ("full", "query halved"), "@100%": ("full", "query removed"),
                                         "off": ("full", "off removed")})
    rows, tops = [], []
    for name, files in [(f"run {i + 1}", [p]) for i, p in enumerate(profiles)] + [("both runs", profiles)]:
        effects = common.report(files)["effects"]
        rank, query = common.rank_among(effects, "query", query_line)
        _, off = common.rank_among(effects, "query", off_line)
        tops.append(common.settled_top(effects, "query"))
        for at, truth in ((0.5, truths["@50%"]), (1.0, truths["@100%"])):
            passes = lambda error: (error is not None and abs(error) <= 5 and rank == 1 and query["label"] == "positive")
            rows.append(common.prediction_row(name, f"query @{at:.0%}", rank, query, at, truth, passes))
        passes = lambda error, e=off: e is None or e["label"] != "positive"
        rows.append(common.prediction_row(name, "off @100%", None, off, 1.0, truths["off"], passes))
    print(f"\nInjected lines: query = {query_line}, off = {off_line}. Predictions from default-mode profiles "
          f"({args.runs} runs of {args.profile_seconds:g} s):\n")
    common.table(["profile", "line", "rank, verdict", "predicted", "actual", "error (points)", "target"], rows)
    common.agreement_and_retests(tops, profiles, modes, "query", query_line, profile_once, args.work, "sqlite",
                                 args.profile_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
