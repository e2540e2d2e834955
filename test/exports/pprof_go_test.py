#!/usr/bin/env python3
"""`coz report --pprof` read by pprof itself (`go tool pprof -raw`).

Exports the profile twice, as pprof (docs/exports.md) and as folded stacks
(`--collapsed`), and checks that pprof reads from the first what the second
says: the same stacks, function by function, with the same sample counts,
each sample worth the profile's period in cpu/nanoseconds. Exit 77 (skipped)
when no Go is found, looked for as tools/scripts/install-deps.sh does: `go`
on PATH, else /usr/local/go/bin/go.

    pprof_go_test.py COZ PROFILE OUTDIR
"""
import collections
import os
import re
import shutil
import subprocess
import sys


def find_go():
    return shutil.which("go") or next((p for p in ["/usr/local/go/bin/go"] if os.access(p, os.X_OK)), None)


def run(argv, **kwargs):
    result = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(argv)} exited {result.returncode}:\n{result.stderr}")
    return result.stdout


def function_of(label):
    """The pprof function name of a --collapsed frame label (docs/exports.md, "Frames")."""
    if label.endswith("]") and " [" in label:  # a callee frame: FUNCTION [LIBRARY]
        return label[: label.rindex(" [")]
    match = re.fullmatch(r"(.*) \([^()]*:\d+\)", label)  # FUNCTION (FILE:LINE)
    return match.group(1) if match else label  # FILE:LINE, no function known


def collapsed_stacks(text):
    stacks = collections.Counter()
    for line in text.splitlines():
        frames, _, count = line.rpartition(" ")
        stacks[tuple(function_of(f) for f in frames.split(";"))] += int(count)
    return stacks


def raw_stacks(text):
    """Stacks (outermost first) and values from `go tool pprof -raw`, and its period."""
    section, period, samples, locations = None, None, [], {}
    for line in text.splitlines():
        if line.startswith("Period: "):
            period = int(line.split()[1])
        elif line in ("Samples:", "Locations", "Mappings"):
            section = line
        elif section == "Samples:" and ":" in line:
            values, _, ids = line.partition(":")
            samples.append(([int(v) for v in values.split()], [int(i) for i in ids.split()]))
        elif section == "Locations":
            # "   3: 0x0 M=1 FUNCTION FILE:LINE:COLUMN s=0" (FUNCTION may hold spaces);
            # pprof before 2023 (Debian 12's Go 1.19) prints no COLUMN, may print no M=.
            match = re.fullmatch(r"\s*(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(?:\[F\] )?(.*) \S+:\d+(?::\d+)? s=\d+", line)
            if match:
                locations[int(match.group(1))] = match.group(2)
    stacks = collections.Counter()
    nanoseconds = {}
    for (count, ns), ids in samples:
        stack = tuple(locations[i] for i in reversed(ids))  # pprof lists the leaf first
        stacks[stack] += count
        nanoseconds[stack] = nanoseconds.get(stack, 0) + ns
    return stacks, nanoseconds, period


def main(coz, profile, outdir):
    go = find_go()
    if not go:
        print("SKIP: no Go found (no go on PATH, no /usr/local/go/bin/go): tools/scripts/install-deps.sh installs golang-go")
        return 77
    os.makedirs(outdir, exist_ok=True)
    pb = os.path.join(outdir, "cpu.pb.gz")
    run([coz, "report", "--pprof", pb, profile])
    expected = collapsed_stacks(run([coz, "report", "--collapsed", profile]))
    # Nothing to symbolize (every frame is named) and no toolchain to fetch.
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="", PPROF_TMPDIR=outdir)
    raw = run([go, "tool", "pprof", "-raw", "-symbolize=none", pb], env=env)
    got, nanoseconds, period = raw_stacks(raw)

    problems = []
    if not expected:
        problems.append("coz report --collapsed printed no stacks")
    if got != expected:
        for stack in sorted(set(got) | set(expected)):
            if got[stack] != expected[stack]:
                problems.append(f"{';'.join(stack)}: pprof reads {got[stack]}, --collapsed says {expected[stack]}")
    if not period:
        problems.append("pprof read no period")
    else:
        for stack, ns in nanoseconds.items():
            if ns != got[stack] * period:
                problems.append(f"{';'.join(stack)}: {ns} ns for {got[stack]} samples of {period} ns")
    # The pipeline's consumer does 3x its producer's work: pprof's leaves say so.
    leaves = collections.Counter()
    for stack, count in got.items():
        leaves[stack[-1]] += count
    if not leaves["consume_work"] > leaves["produce_work"] > 0:
        problems.append(f"consume_work {leaves['consume_work']} samples, produce_work {leaves['produce_work']}")

    print(f"pprof ({go}) read {sum(got.values())} samples in {len(got)} stacks, period {period} ns; "
          + ", ".join(f"{name} {count}" for name, count in leaves.most_common(4)))
    for p in problems[:40]:
        print("FAIL: " + p)
    if problems:
        print("go tool pprof -raw printed:\n" + raw)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: pprof_go_test.py COZ PROFILE OUTDIR")
    sys.exit(main(*sys.argv[1:]))
