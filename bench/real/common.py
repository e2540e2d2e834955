"""Shared steps of the real-software benchmarks (bench/real/README.md):
Debian sources fetched at bench time, patched with injected work, built,
loaded over loopback (bounded in count and time), measured plain in
interleaved rounds, and profiled with `coz run`.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def need_packages(*packages):
    """Installs the Debian packages that are missing (build dependencies)."""
    missing = [p for p in packages if subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True,
                                                     text=True).stdout.find("install ok installed") < 0]
    if missing:
        log(f"installing {' '.join(missing)}")
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def enable_deb_src():
    """Adds deb-src beside deb in Debian 12's debian.sources, once."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if not sources.exists() or "deb-src" in sources.read_text():
        return
    log(f"adding deb-src to {sources}")
    sources.write_text(sources.read_text().replace("Types: deb\n", "Types: deb deb-src\n"))
    subprocess.run(["apt-get", "update", "-qq"], check=True, stdout=subprocess.DEVNULL)


def debian_source(package, work):
    """`apt-get source PACKAGE` into WORK (once); returns the unpacked tree."""
    work.mkdir(parents=True, exist_ok=True)
    trees = [p for p in work.glob(f"{package}-*") if p.is_dir()]
    if not trees:
        log(f"fetching the Debian source of {package}")
        enable_deb_src()
        need_packages("dpkg-dev")
        subprocess.run(["apt-get", "source", "-qq", package], cwd=work, check=True,
                       stdout=subprocess.DEVNULL)
        trees = [p for p in work.glob(f"{package}-*") if p.is_dir()]
    if not trees:
        sys.exit(f"apt-get source {package} left no source tree (is there a deb-src line?)")
    return trees[0]


def insert_after(path, anchor, text, within=None):
    """Inserts TEXT (whole lines) after the first line holding ANCHOR (after
    the first line holding WITHIN, when given); idempotent."""
    lines = path.read_text().splitlines(keepends=True)
    if any(text.strip().splitlines()[0].strip() in l for l in lines):
        return
    start = 0
    if within is not None:
        start = next((i for i, l in enumerate(lines) if within in l), None)
        if start is None:
            sys.exit(f"{path}: no line with {within!r}")
    for i in range(start, len(lines)):
        if anchor in lines[i]:
            lines.insert(i + 1, text if text.endswith("\n") else text + "\n")
            path.write_text("".join(lines))
            return
    sys.exit(f"{path}: no line with {anchor!r} to patch after")


def line_of(path, marker):
    """FILE:LINE of the line holding MARKER (the file's base name)."""
    for n, l in enumerate(path.read_text().splitlines(), 1):
        if marker in l:
            return f"{path.name}:{n}"
    sys.exit(f"{path}: no line with {marker!r}")


class Server:
    """A server process started with an environment, stopped with SIGTERM."""

    def __init__(self, argv, env=None, ready_port=None):
        if ready_port and port_taken(ready_port):
            # A server left over from an earlier run would take the load (or part of it,
            # with SO_REUSEPORT) and answer for this one.
            sys.exit(f"something already listens on port {ready_port}: stop it first")
        self.proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        if ready_port:
            wait_for_port(ready_port, self.proc)

    def stop(self, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        return self.proc.returncode, self.proc.stderr.read()


def port_taken(port):
    import socket
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_for_port(port, proc, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the server exited with {proc.returncode} before listening: {proc.stderr.read()}")
        if port_taken(port):
            return
        time.sleep(0.05)
    sys.exit(f"nothing listens on port {port} after {seconds} s")


def arguments(doc, **iterations):
    """The options every script takes, plus one `--NAME-iters` per injected loop (NAME=default)."""
    import argparse
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--work", type=Path, default=REPO / "build-bench" / "real")
    for name, default in iterations.items():
        ap.add_argument(f"--{name}-iters", type=int, default=default)
    ap.add_argument("--rounds", type=int, default=15, help="interleaved truth rounds per variant")
    ap.add_argument("--truth-seconds", type=float, default=2)
    ap.add_argument("--profile-seconds", type=float, default=45)
    ap.add_argument("--runs", type=int, default=2, help="default-mode profiles")
    ap.add_argument("--overhead", action="store_true",
                    help="measure only what profiling costs the server's throughput: plain, under "
                         "`coz run --fixed-speedup 0` (sampling alone) and under `coz run`, in interleaved rounds")
    ap.add_argument("--overhead-modes", default=["sampling", "full"], type=lambda text: text.split(","),
                    help="with --overhead, the profiled runs to measure against plain: `sampling` "
                         "(sampling alone), `full`, `runtime` (sampling alone without its samples, COZ_SAMPLING=0), "
                         "comma-separated; one mode affords more rounds")
    ap.add_argument("--overhead-warmup", type=float, default=0, metavar="SECONDS",
                    help="with --overhead, load each server this long before the measured load, unmeasured: "
                         "the cost once its threads have settled (a profile of a server runs for minutes), "
                         "without what its first second costs")
    ap.add_argument("--system", action="store_true",
                    help="profile the server and its load generator as one system: the server leads a "
                         "`coz run --system` run that the load generator joins (docs/system.md), so that a "
                         "virtual speedup pauses the load generator too")
    args = ap.parse_args()
    if args.overhead_warmup < 0:
        ap.error("--overhead-warmup: seconds of load, 0 or more")
    return args


SYSTEM_NAME = "coz-bench-real"


# How much longer the load runs than a profiled server (profile_under_load).
LOAD_MARGIN = 3


def profile_under_load(path, start, run_load, seconds, *options, system=False):
    """A fresh profile at PATH: `start(wrapper)` starts the server under
    `coz run -o PATH OPTIONS ---`, `run_load(wrapper, seconds)` loads it.
    The server gets SIGTERM after SECONDS, while the load still runs (it is
    given LOAD_MARGIN seconds more): an experiment that straddled the end of
    the load, or ran on an idle server after it, would count the drop in
    progress against whichever line it selected (a 100% point of an
    off-path line once read -107% from one such experiment).
    With SYSTEM, the server leads a `coz run --system` run and the load
    generator joins it (its wrapper): on a machine they share, a pause of the
    server alone leaves the load generator the cores for nothing, and the
    pauses are then taken off the experiment's time. Returns the server's
    (status, stderr)."""
    import threading
    path.unlink(missing_ok=True)
    if system:
        server = start(coz("run", f"--system={SYSTEM_NAME}", "-o", path, *options, "---"))
        join = coz("run", "--join", SYSTEM_NAME, "---")
    else:
        server = start(coz("run", "-o", path, *options, "---"))
        join = []

    def load():
        try:
            run_load(join, seconds + LOAD_MARGIN)
        except (subprocess.CalledProcessError, ValueError, IndexError):
            pass  # its server went first, as it should: what it printed is not used

    loader = threading.Thread(target=load)
    loader.start()
    try:
        time.sleep(seconds)
    finally:
        status, err = server.stop()
        loader.join()
    return status, err


def point_name(name, program, system):
    """A progress point as the report names it: under `coz run --system`, with its program."""
    return f"{name} [{program}]" if system else name


def location(name):
    """A line's FILE:LINE without the program a `coz run --system` profile adds (`FILE:LINE [PROGRAM]`)."""
    return name.split(" [", 1)[0]


def interleaved(variants, rounds, measure):
    """Runs measure(variant) round-robin, every other round in reverse order
    (A B C, C B A, ...): this VM's speed drifts within a round too, and a
    fixed order put that drift on the same variants every round. Returns
    {variant: [rates]}."""
    rates = {v: [] for v in variants}
    for r in range(rounds):
        for v in (variants if r % 2 == 0 else variants[::-1]):
            rates[v].append(measure(v))
            log(f"  round {r + 1}/{rounds} {v}: {rates[v][-1]:.0f}/s")
    return rates


def speedup(rate_before, rate_after):
    """Program speedup in period terms, as the profiler reports it: 1 - P_after / P_before."""
    return 1.0 - rate_before / rate_after


def median_interval(paired, rng, resamples=2000):
    """The median of per-round figures and its 95% bootstrap interval over
    rounds: (median, low, high)."""
    boot = sorted(median(rng.choices(paired, k=len(paired))) for _ in range(resamples))
    return median(paired), boot[int(0.025 * resamples)], boot[int(0.975 * resamples) - 1]


def print_truths(rates, changes, resamples=2000):
    """The truth of each change {name: (before, after)}: the median over
    rounds of the speedup within each round (the variants of one round run
    back to back, so this VM's drift, which moved one variant's rate by
    ±30% over minutes, cancels), with a 95% bootstrap interval over rounds:
    how far this machine's noise lets the truth be trusted. Returns
    {name: speedup}."""
    import random
    rng = random.Random(13)
    rows, truths = [], {}
    for name, (before, after) in changes.items():
        paired = [speedup(b, a) for b, a in zip(rates[before], rates[after])]
        truths[name], low, high = median_interval(paired, rng, resamples)
        rows.append([name, f"{before} -> {after}", f"{truths[name]:+.1%}", f"{low:+.1%} .. {high:+.1%}",
                     f"{speedup(median(rates[before]), median(rates[after])):+.1%}"])
    print("\nThe truth (program speedup of each change: median over rounds of the speedup within each round) "
          "and its 95% bootstrap interval:\n")
    table(["truth", "variants", "actual", "95% interval", "from the medians"], rows)
    return truths


def print_overhead(work, program, rounds, seconds, serve_and_load, modes=("sampling", "full"), warmup=0):
    """What profiling costs a server under load, as a user pays it: its
    throughput plain, under `coz run --fixed-speedup 0` (sampling alone: every
    experiment a 0% baseline) and under a default `coz run` (experiments that
    insert delays), in interleaved rounds. `serve_and_load(wrapper, seconds, warmup)`
    starts the server under WRAPPER, loads it for WARMUP seconds unmeasured (if
    any), then for SECONDS, and returns that load's rate. Each
    round's profiled rates are taken against that round's plain rate (this
    VM's speed drifts over minutes), with a 95% bootstrap interval over
    rounds, as print_truths does. `modes`: which profiled runs, of
    "sampling", "full" and "runtime" (sampling alone without its samples,
    COZ_SAMPLING=0: what the rest of the runtime costs). `warmup`: seconds
    of load before the measured one (serve_and_load's third argument),
    which every run, plain too, gets alike."""
    import random
    output = {mode: work / f"{program}-{mode}.coz" for mode in ("sampling", "full", "runtime")}
    sampling_alone = lambda mode: coz("run", "-q", "--fixed-speedup", "0", "-o", output[mode], "---")
    profiled = {
        "sampling": ("sampling only", sampling_alone("sampling")),
        "full": ("full", coz("run", "-q", "-o", output["full"], "---")),
        # Sampling alone without its samples (COZ_SAMPLING=0): what the rest of the runtime costs.
        "runtime": ("runtime, no samples", ["env", "COZ_SAMPLING=0", *sampling_alone("runtime")]),
    }
    unknown = set(modes) - set(profiled)
    if unknown or not modes:
        sys.exit(f"--overhead-modes: {', '.join(sorted(unknown)) or 'none given'}: the modes are "
                 f"{', '.join(profiled)}")
    wrappers = {"plain": [], **dict(profiled[m] for m in profiled if m in modes)}
    for path in output.values():
        path.unlink(missing_ok=True)  # runs append: one file per mode, every round in it
    rates = interleaved(list(wrappers), rounds, lambda mode: serve_and_load(wrappers[mode], seconds, warmup))
    rng = random.Random(13)
    rows = []
    for mode in wrappers:
        cost, low, high = median_interval([plain / rate - 1 for plain, rate in zip(rates["plain"], rates[mode])], rng)
        rows.append([mode, f"{median(rates[mode]):.0f}", " ".join(f"{x:.0f}" for x in rates[mode]),
                     "" if mode == "plain" else f"{cost:+.1%}",
                     "" if mode == "plain" else f"{low:+.1%} .. {high:+.1%}"])
    after = f", each after {warmup:g} s of load left unmeasured" if warmup else ""
    print(f"Throughput, median of {rounds} interleaved rounds of {seconds:g} s{after}; the cost is the median over "
          "rounds of plain / profiled - 1 within each round, with its 95% bootstrap interval:\n")
    table(["run", "requests/s", "rounds", "cost", "95% interval"], rows)


def coz(*args):
    return [str(REPO / "build" / "bin" / "coz"), *map(str, args)] if not os.environ.get("COZ") else \
        [os.environ["COZ"], *map(str, args)]


def report(profiles, *options):
    out = subprocess.run(coz("report", "--json", *options, *profiles), check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def prediction(effect, at=0.5):
    """The effect's predicted program speedup with the line `at` faster:
    its curve point there when measured, else its slope times `at`."""
    for p in effect["curve"]:
        if abs(p["line_speedup"] - at) < 1e-9 and p["se"] is not None:
            return p["program_speedup"], "curve"
    if effect["slope"] is not None:
        return effect["slope"] * at, "slope"
    return None, "none"


def prediction_row(profile, what, rank, effect, at, truth, passes):
    """One row of a predicted-vs-actual table; passes(error) says pass or miss."""
    if effect is None:
        return [profile, what, "not profiled", "-", f"{truth:+.1%}", "-", "pass" if passes(None) else "miss"]
    predicted, source = prediction(effect, at)
    error = None if predicted is None else (predicted - truth) * 100
    return [profile, what, f"#{rank or '-'} {effect['label']} ({effect['experiments']} exps)",
            "-" if predicted is None else f"{predicted:+.1%} ({source})", f"{truth:+.1%}",
            "-" if error is None else f"{error:+.1f}", "pass" if passes(error) else "miss"]


def rank_among(effects, point, line, lines=()):
    """(rank, effect) of LINE among the point's effects, or (None, None).
    The rank is that of the line or of its function's unit (--granularity
    auto or function), whichever comes first; the effect is the line's own
    when it has one, else its function's (found in LINES, the report's
    lines table, when the line has no effect of its own)."""
    mine = [e for e in effects if e["point"] == point]
    own = next((e for e in mine if location(e["line"]).endswith(line) and not e.get("function_unit")), None)
    function = own["function"] if own else next((l["function"] for l in lines if location(l["location"]).endswith(line)),
                                                None)
    for i, e in enumerate(mine, 1):
        if e is own or (function and e.get("function_unit") and e["function"] == function):
            return i, own or e
    return None, None


def rank_excusing(effects, point, rank, lines):
    """RANK less the point's effects ranked above it at LINES: lines whose
    own truth (a real slowdown that cost more than the injected line's)
    says they matter more, and so may rightly rank above it."""
    if rank is None:
        return None
    above = [e for e in effects if e["point"] == point][:rank - 1]
    return rank - sum(1 for e in above if any(location(e["line"]).endswith(l) for l in lines))


def settled_top(effects, point, n=5):
    return [e["line"] for e in effects if e["point"] == point and e["label"] in ("positive", "negative")][:n]


def retest_with_fixed_line(lines, point, profile_once, work, prefix, seconds):
    """Issue 13's third run: each line labelled "speeds up" in the default-mode
    runs is profiled again alone (`--fixed-line LINE --fixed-speedup 50`);
    prints its default-mode and its fixed-line prediction at 50%.
    `profile_once(path, *options)` runs the loaded server under coz."""
    rows = []
    for i, line in enumerate(lines, 1):
        path = work / f"{prefix}-fixed-{i}.coz"
        path.unlink(missing_ok=True)
        log(f"re-test of {line} with --fixed-line ({seconds:g} s)")
        profile_once(path, "--fixed-line", line, "--fixed-speedup", "50")
        effects = report([path])["effects"]
        effect = next((e for e in effects if e["point"] == point and e["line"] == line), None)
        predicted = prediction(effect, 0.5)[0] if effect else None
        rows.append([line.rsplit("/", 1)[-1], effect["label"] if effect else "-",
                     f"{effect['experiments']}" if effect else "0",
                     "-" if predicted is None else f"{predicted:+.1%}"])
    print("\nEvery line labelled \"speeds up\" above, re-tested alone (`--fixed-line LINE --fixed-speedup 50`):\n")
    table(["line", "verdict", "exps", "predicted @50%"], rows)


def agreement_and_retests(tops, profiles, modes, point, line, profile_once, work, prefix, seconds):
    """The tables every script ends with: whether the default runs agree on
    their settled lines (TOPS, one list per run), which granularity settles
    fastest (MODES: {"line": profile, "function": profile}), and the
    --fixed-line re-test of every line the default runs label "speeds up"."""
    agree = set(tops[0]) & set(tops[1]) if len(tops) > 2 else set()
    print(f"\nSettled lines (speed up or slow down), run 1: {tops[0] or 'none'}; run 2: "
          f"{tops[1] if len(tops) > 2 else '-'}; in both: {len(agree)}")
    granularity_comparison({"auto (default), run 1": profiles[0], **modes}, point, line)
    retest_with_fixed_line(positive_lines(profiles, point), point, profile_once, work, prefix, seconds)


def positive_lines(profiles, point):
    """Lines (not function units) labelled "speeds up" by the profiles together: the --fixed-line re-tests."""
    return sorted({e["line"] for e in report(profiles)["effects"]
                   if e["point"] == point and e["label"] == "positive" and not e.get("function_unit")})


def granularity_comparison(runs, point, line):
    """Which granularity settles the program fastest (issue 13): for each
    {name: profile} of the same length, the candidates tested, how many were
    settled, and how the injected LINE (or its function) fared."""
    rows = []
    for name, path in runs.items():
        a = report([path])
        mine = [e for e in a["effects"] if e["point"] == point]
        units = sum(1 for e in mine if e.get("function_unit"))
        settled = [e for e in mine if e["label"] in ("positive", "negative", "no-effect")]
        rank, effect = rank_among(a["effects"], point, line, a["profile"]["lines"])
        rows.append([name, a["experiments"], f"{len(mine) - units} lines, {units} functions",
                     f"{len(settled)} ({sum(e['experiments'] for e in settled)} exps)",
                     f"#{rank} {effect['label']} ({effect['experiments']} exps)" if effect else "-"])
    print("\nWhich granularity settles fastest (one run each, same length; settled = speeds up, slows down or "
          "no effect):\n")
    table(["run", "experiments", "candidates tested", "settled", "injected line (or its function)"], rows)


def table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda r: "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |"
    print(line(header))
    print("| " + " | ".join("-" * w for w in widths) + " |")
    for r in rows:
        print(line(r))


def median(xs):
    return statistics.median(xs)
