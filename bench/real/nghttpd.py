#!/usr/bin/env python3
"""nghttpd (nghttp2 1.52) under h2load, with injected work of known cost
(bench/real/README.md).

Debian's nghttp2 source is fetched, patched and built -O2 -g (CMake):
- `respond`: a busy loop of COZ_INJECT_RESPOND iterations in
  prepare_response, on every request's path;
- a progress point `response` where each stream closes.
The truth is h2load's requests/s for each variant in interleaved rounds;
the profiles are default-mode `coz run`s of the full variant, and one run
with the progress point given as `--progress FILE:LINE` (a hardware
breakpoint, no source change) checks that it works on this server.

    bench/real/nghttpd.py [--work DIR] [--rounds N] [--truth-seconds S]
                          [--profile-seconds S] [--runs N] [--system] [--overhead]

--overhead measures only the server's throughput plain, under sampling
alone and under a default `coz run` (issue 15), in interleaved rounds.

--system profiles nghttpd and h2load as one system (h2load joins the run),
except the `--progress` run, which is per process.
"""
import subprocess
import sys

import common
from common import log

PORT = 21412
LOAD = ["-c", "4", "-m", "10", "-t", "1"]


def prepare(work):
    common.need_packages("libev-dev", "libc-ares-dev", "libssl-dev", "zlib1g-dev", "libevent-dev", "libjansson-dev")
    src = common.debian_source("nghttp2", work)
    common.shutil.copy(common.HERE / "inject.h", src / "src" / "inject.h")
    server = src / "src" / "HttpServer.cc"
    common.insert_after(server, '#include "HttpServer.h"', '#include "inject.h"\n#include <coz.h>')
    common.insert_after(server, "  auto reqpath = stream->header.path;",
                        "  static unsigned long coz_respond_iters = coz_inject_iters(\"COZ_INJECT_RESPOND\");\n"
                        "  COZ_INJECT_SPIN(coz_respond_iters); /* @inject:respond */",
                        within="void prepare_response(Stream *stream, Http2Handler *hd,")
    common.insert_after(server, "  auto hd = static_cast<Http2Handler *>(user_data);",
                        '  COZ_PROGRESS_NAMED("response");', within="int on_stream_close_callback(")
    build = src / "build-coz"
    build.mkdir(exist_ok=True)
    if not (build / "build.ninja").exists():
        log("configuring nghttp2 -O2 -g")
        flags = f"-O2 -g -I{common.REPO / 'include'}"
        subprocess.run(["cmake", "..", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=None", f"-DCMAKE_C_FLAGS={flags}",
                        f"-DCMAKE_CXX_FLAGS={flags}", "-DENABLE_APP=ON", "-DENABLE_PYTHON_BINDINGS=OFF",
                        "-DENABLE_EXAMPLES=OFF", "-DENABLE_HPACK_TOOLS=OFF"], cwd=build, check=True,
                       stdout=subprocess.DEVNULL)
    log("building nghttpd and h2load")
    subprocess.run(["ninja", "nghttpd", "h2load"], cwd=build, check=True, stdout=subprocess.DEVNULL)
    docroot = work / "www"
    docroot.mkdir(exist_ok=True)
    (docroot / "index.html").write_bytes(bytes(range(256)) * 16)  # 4 KiB
    return (build / "src" / "nghttpd", build / "src" / "h2load", docroot, common.line_of(server, "@inject:respond"),
            common.line_of(server, 'COZ_PROGRESS_NAMED("response")'))


def serve(binary, docroot, env, wrapper=()):
    return common.Server([*wrapper, binary, "--no-tls", "-n", "2", "-d", docroot, str(PORT)], env, ready_port=PORT)


def load_rate(h2load, seconds, wrapper=()):
    out = subprocess.run([*wrapper, h2load, *LOAD, "-D", f"{seconds:g}", f"http://127.0.0.1:{PORT}/index.html"], check=True,
                         capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("finished in"))
    return float(line.split(",")[1].split()[0])


def main():
    args = common.arguments(__doc__, respond=20000)
    nghttpd, h2load, docroot, respond_line, close_line = prepare(args.work)
    full = {"COZ_INJECT_RESPOND": str(args.respond_iters)}
    variants = {"full": full, "respond halved": {"COZ_INJECT_RESPOND": str(args.respond_iters // 2)},
                "respond removed": {"COZ_INJECT_RESPOND": "0"}}

    def rate_under(env, seconds, wrapper=(), warmup=0):
        server = serve(nghttpd, docroot, env, wrapper=wrapper)
        try:
            if warmup:
                load_rate(h2load, warmup)
            return load_rate(h2load, seconds)
        finally:
            server.stop()

    if args.overhead:
        serve_and_load = lambda wrapper, seconds, warmup: rate_under(full, seconds, wrapper, warmup)
        print("## nghttpd 1.52.0, `-n 2`, h2load `-c 4 -m 10`: what profiling costs\n")
        common.print_overhead(args.work, "nghttpd", args.rounds, args.truth_seconds, serve_and_load,
                              args.overhead_modes, args.overhead_warmup)
        return 0

    log(f"truth: {args.rounds} interleaved rounds of {args.truth_seconds} s per variant")

    rates = common.interleaved(list(variants), args.rounds, lambda name: rate_under(variants[name], args.truth_seconds))
    rate = {v: common.median(r) for v, r in rates.items()}

    def profile(path, *options, system=args.system):
        start = lambda wrapper: serve(nghttpd, docroot, full, wrapper=wrapper)
        return common.profile_under_load(path, start, lambda join, seconds: load_rate(h2load, seconds, join),
                                         args.profile_seconds, *options, system=system)

    point = common.point_name("response", "nghttpd", args.system)

    profiles = []
    for run in range(args.runs):
        path = args.work / f"nghttpd-{run + 1}.coz"
        log(f"profile run {run + 1}/{args.runs}: {args.profile_seconds} s under load")
        profile(path)
        profiles.append(path)
    modes = {}
    for mode in () if args.system else ("line", "function"):  # --system experiments on lines only
        modes[mode] = args.work / f"nghttpd-{mode}.coz"
        log(f"profile run with --granularity {mode}")
        profile(modes[mode], "--granularity", mode)
    bp_path = args.work / "nghttpd-breakpoint.coz"
    log("profile with --progress (a hardware breakpoint at the stream close)")
    bp_status, bp_err = profile(bp_path, "--progress", close_line, system=False)

    print(f"## nghttpd 1.52.0, `-n 2`, h2load `-c 4 -m 10`{', one system with h2load (--system)' if args.system else ''}\n")
    print(f"Throughput, median of {args.rounds} interleaved rounds of {args.truth_seconds:g} s:\n")
    common.table(["variant", "requests/s", "rounds"],
                 [[v, f"{rate[v]:.0f}", " ".join(f"{x:.0f}" for x in rates[v])] for v in variants])
    named = common.print_truths(rates, {"@50%": ("full", "respond halved"), "@100%": ("full", "respond removed")})
    truths = {0.5: named["@50%"], 1.0: named["@100%"]}
    rows, tops = [], []
    for name, files in [(f"run {i + 1}", [p]) for i, p in enumerate(profiles)] + [("both runs", profiles)]:
        effects = common.report(files)["effects"]
        rank, effect = common.rank_among(effects, point, respond_line)
        tops.append(common.settled_top(effects, point))
        for at, truth in truths.items():
            passes = lambda error: (error is not None and abs(error) <= 5 and rank == 1
                                    and effect["label"] == "positive")
            rows.append(common.prediction_row(name, f"@{at:.0%}", rank, effect, at, truth, passes))
    print(f"\nInjected line: {respond_line}. Predictions from default-mode profiles "
          f"({args.runs} runs of {args.profile_seconds:g} s):\n")
    common.table(["profile", "line speedup", "rank, verdict", "predicted", "actual", "error (points)", "target"], rows)
    common.agreement_and_retests(tops, profiles, modes, point, respond_line, profile, args.work, "nghttpd",
                                 args.profile_seconds)
    bp = common.report([bp_path])
    bp_rank, bp_effect = common.rank_among(bp["effects"], close_line, respond_line)
    counted = next((e for e in bp["effects"] if e["line"].endswith(close_line)), None)
    print(f"\n`--progress {close_line}`: server exit status {bp_status} (-15: ended by the SIGTERM it was sent, as without the profiler), "
          f"{bp['experiments']} experiments, runtime record: {'yes' if bp['runtime_ns'] > 0 else 'no'}; "
          f"injected line #{bp_rank} {bp_effect['label'] if bp_effect else '-'}; samples on the counted line: "
          f"{counted['samples'] if counted else 0}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
