#!/usr/bin/env python3
"""memcached under load, with injected work of known cost (bench/real/README.md).

Debian's memcached source is fetched, patched and built -O2 -g:
- `get`: a busy loop of COZ_INJECT_GET iterations in process_get_command,
  on every get's path (9 requests in 10 are gets);
- `off`: a busy loop of COZ_INJECT_OFF iterations in the LRU maintainer
  thread, which sleeps between rounds: off the requests' path;
- a progress point `response` where each response is finished (resp_finish);
- `send slower`: the reply's sendmsg, timed in CPU time and followed by a
  busy loop of COZ_INJECT_SEND_SLOWER percent of it. A system call cannot be
  made faster, but its slowdown can be measured: where slowing it by half
  its own time costs more than slowing the get line so, it matters more,
  and get's rank is taken among the other lines.
One build serves every variant: the loops read their counts from the
environment at start-up. The truth is the throughput of each variant, in
interleaved rounds; the profiles are default-mode `coz run`s of the full
variant. Prints markdown tables; exit 0 (the rows say pass or miss).

    bench/real/memcached.py [--work DIR] [--rounds N] [--truth-seconds S]
                            [--profile-seconds S] [--runs N] [--system] [--overhead]

--overhead measures only the server's throughput plain, under sampling
alone and under a default `coz run` (issue 15), in interleaved rounds.

--system profiles memcached and its load generator as one system (the
load generator, built with -g for that, joins the run).
"""
import subprocess
import sys

import common
from common import log

PORT = 21411
CONNECTIONS = 16


def prepare(work):
    common.need_packages("libevent-dev")
    src = common.debian_source("memcached", work)
    common.shutil.copy(common.HERE / "inject.h", src / "inject.h")
    proto = src / "proto_text.c"
    common.insert_after(proto, '#include "proto_text.h"', '#include "inject.h"')
    common.insert_after(proto, "mc_resp *resp = c->resp;",
                        "    static unsigned long coz_get_iters = ~0ul; if (coz_get_iters == ~0ul) "
                        "coz_get_iters = coz_inject_iters(\"COZ_INJECT_GET\");\n"
                        "    COZ_INJECT_SPIN(coz_get_iters); /* @inject:get */",
                        within="static inline void process_get_command(")
    items = src / "items.c"
    common.insert_after(items, '#include "slab_automove.h"', '#include "inject.h"')
    common.insert_after(items, "useconds_t last_sleep = MIN_LRU_MAINTAINER_SLEEP;",
                        "    unsigned long coz_off_iters = coz_inject_iters(\"COZ_INJECT_OFF\");")
    common.insert_after(items, "while (do_run_lru_maintainer_thread) {",
                        "        COZ_INJECT_SPIN(coz_off_iters); /* @inject:off */")
    mc = src / "memcached.c"
    common.insert_after(mc, '#include "memcached.h"', "#include <coz.h>")
    common.insert_after(mc, "mc_resp* resp_finish(conn *c, mc_resp *resp) {", '    COZ_PROGRESS_NAMED("response");')
    # `send slower`: the reply's sendmsg, made slower by COZ_INJECT_SEND_SLOWER percent of its own CPU time
    # (set to 0: timed, as the slower variant is, but no slower).
    common.insert_after(mc, '#include <coz.h>', '#include "inject.h"')
    common.insert_after(mc, "msg.msg_iovlen = iovused;",
                        "    static long coz_send_slower = -2; if (coz_send_slower == -2) "
                        "coz_send_slower = coz_inject_percent(\"COZ_INJECT_SEND_SLOWER\");\n"
                        "    unsigned long long coz_send_start = coz_send_slower >= 0 ? coz_inject_cpu_ns() : 0;",
                        within="static enum transmit_result transmit(conn *c) {")
    common.insert_after(mc, "res = c->sendmsg(c, &msg, 0);",
                        "    if (coz_send_slower > 0) coz_inject_busy_cpu_ns((coz_inject_cpu_ns() - coz_send_start) "
                        "* coz_send_slower / 100); /* @inject:send-slower */",
                        within="static enum transmit_result transmit(conn *c) {")
    binary = src / "memcached"
    if not binary.exists() or binary.stat().st_mtime < max(p.stat().st_mtime for p in (proto, items, mc)):
        log("building memcached -O2 -g")
        if not (src / "Makefile").exists():
            subprocess.run(["./configure", f"CFLAGS=-O2 -g -I{common.REPO / 'include'}"], cwd=src, check=True,
                           stdout=subprocess.DEVNULL)
        subprocess.run(["make", "-j2", "memcached"], cwd=src, check=True, stdout=subprocess.DEVNULL)
    load = work / "mc_load"
    subprocess.run(["cc", "-O2", "-g", "-pthread", "-o", load, common.HERE / "mc_load.c"], check=True)
    return (src, binary, load, common.line_of(proto, "@inject:get"), common.line_of(items, "@inject:off"),
            common.line_of(mc, "res = c->sendmsg(c, &msg, 0);"))


def serve(binary, env, wrapper=()):
    return common.Server([*wrapper, binary, "-p", str(PORT), "-U", "0", "-t", "2", "-u", "root"], env,
                         ready_port=PORT)


def load_rate(load, seconds, wrapper=()):
    out = subprocess.run([*wrapper, load, str(PORT), str(CONNECTIONS), str(seconds)], check=True, capture_output=True,
                         text=True).stdout
    return float(out.split(":")[1].split()[0])


def main():
    args = common.arguments(__doc__, get=20000, off=20000)
    src, binary, load, get_line, off_line, send_line = prepare(args.work)
    full = {"COZ_INJECT_GET": str(args.get_iters), "COZ_INJECT_OFF": str(args.off_iters)}
    variants = {
        "full": full,
        "get halved": {**full, "COZ_INJECT_GET": str(args.get_iters // 2)},
        "get removed": {**full, "COZ_INJECT_GET": "0"},
        "off removed": {**full, "COZ_INJECT_OFF": "0"},
        "get slower": {**full, "COZ_INJECT_GET": str(args.get_iters * 3 // 2)},
        "send timed": {**full, "COZ_INJECT_SEND_SLOWER": "0"},
        "send slower": {**full, "COZ_INJECT_SEND_SLOWER": "50"},
    }

    def rate_under(env, seconds, wrapper=(), warmup=0):
        server = serve(binary, env, wrapper=wrapper)
        try:
            if warmup:
                load_rate(load, warmup)
            return load_rate(load, seconds)
        finally:
            server.stop()

    if args.overhead:
        serve_and_load = lambda wrapper, seconds, warmup: rate_under(full, seconds, wrapper, warmup)
        print(f"## memcached 1.6.18, `-t 2`, {CONNECTIONS} connections, 9 gets in 10: what profiling costs\n")
        common.print_overhead(args.work, "memcached", args.rounds, args.truth_seconds, serve_and_load,
                              args.overhead_modes, args.overhead_warmup)
        return 0

    log(f"truth: {args.rounds} interleaved rounds of {args.truth_seconds} s per variant")

    rates = common.interleaved(list(variants), args.rounds, lambda name: rate_under(variants[name], args.truth_seconds))
    rate = {v: common.median(r) for v, r in rates.items()}

    def profile_once(path, *options):
        start = lambda wrapper: serve(binary, full, wrapper=wrapper)
        status, err = common.profile_under_load(path, start, lambda join, seconds: load_rate(load, seconds, join),
                                                args.profile_seconds, *options, system=args.system)
        if status not in (0, -15):
            log(f"memcached under coz ended with {status}: {err[-500:]}")

    profiles = []
    for run in range(args.runs):
        log(f"profile run {run + 1}/{args.runs}: {args.profile_seconds} s under load")
        profiles.append(args.work / f"memcached-{run + 1}.coz")
        profile_once(profiles[-1])
    point = common.point_name("response", "memcached", args.system)
    modes = {}
    for mode in () if args.system else ("line", "function"):  # --system experiments on lines only
        modes[mode] = args.work / f"memcached-{mode}.coz"
        log(f"profile run with --granularity {mode}")
        profile_once(modes[mode], "--granularity", mode)

    print(f"## memcached 1.6.18, `-t 2`, {CONNECTIONS} connections, 9 gets in 10"
          f"{', one system with its load generator (--system)' if args.system else ''}\n")
    print(f"Throughput, median of {args.rounds} interleaved rounds of {args.truth_seconds:g} s:\n")
    common.table(["variant", "requests/s", "rounds"],
                 [[v, f"{rate[v]:.0f}", " ".join(f"{x:.0f}" for x in rates[v])] for v in variants])
    truths = common.print_truths(rates, {"get @50%": ("full", "get halved"), "get @100%": ("full", "get removed"),
                                         "off @100%": ("full", "off removed"),
                                         "get 50% slower": ("full", "get slower"),
                                         "send 50% slower": ("send timed", "send slower")})
    # The reply's sendmsg holds more of the workers' time than the injected get (half their samples on
    # Linux 6.18): where slowing it by half its own time costs more than slowing get so, it may rightly rank
    # above get, and get's rank is taken among the other lines.
    excused = [send_line] if truths["send 50% slower"] < truths["get 50% slower"] else []
    rows = []
    analyses = [(f"run {i + 1}", [p]) for i, p in enumerate(profiles)] + [("both runs", profiles)]
    tops = []
    for name, files in analyses:
        a = common.report(files)
        effects = a["effects"]
        shown, get = common.rank_among(effects, point, get_line)
        rank = common.rank_excusing(effects, point, shown, excused)
        if rank != shown:
            shown = f"{shown}, #{rank} after sendmsg"
        _, off = common.rank_among(effects, point, off_line)
        tops.append(common.settled_top(effects, point))
        for label, effect, at, truth in (("get", get, 0.5, truths["get @50%"]), ("get", get, 1.0, truths["get @100%"]),
                                         ("off", off, 1.0, truths["off @100%"])):
            if label == "off":  # the target: never labelled "speeds up" (its prediction may rest on 1-3 exps)
                passes = lambda error, e=off: e is None or e["label"] != "positive"
                rows.append(common.prediction_row(name, f"off @{at:.0%}", None, effect, at, truth, passes))
            else:
                passes = lambda error: (error is not None and abs(error) <= 5 and rank == 1
                                        and get["label"] == "positive")
                rows.append(common.prediction_row(name, f"get @{at:.0%}", shown, effect, at, truth, passes))
    print(f"\nInjected lines: get = {get_line}, off = {off_line}; the reply's sendmsg = {send_line}"
          f"{' (may rank above get: its slowdown cost more)' if excused else ''}. Predictions from default-mode profiles "
          f"({args.runs} runs of {args.profile_seconds:g} s):\n")
    common.table(["profile", "line", "rank, verdict", "predicted", "actual", "error (points)", "target"], rows)
    common.agreement_and_retests(tops, profiles, modes, point, get_line, profile_once, args.work, "memcached",
                                 args.profile_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
