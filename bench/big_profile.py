#!/usr/bin/env python3
"""Writes a large profile for measuring what `coz report` needs to read one.

The shape of a long run of a big program: many unique sample locations
(each with its function, about 20 lines per function), a few hundred
experiments on a few hundred lines. The default is ~100 MB with 1.5 M
unique locations.

    bench/big_profile.py [--locations N] [--experiments N] OUT.coz
    /usr/bin/time -v build/bin/coz report --top 5 OUT.coz > /dev/null   # "Maximum resident set size"
"""
import argparse
import random


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--locations", type=int, default=1_500_000)
    parser.add_argument("--experiments", type=int, default=400)
    args = parser.parse_args()
    rng = random.Random(14)
    lines_per_function = 20

    def location(i):
        return f"src/m{i // 100_000:02d}/f{(i // 1000) % 100:03d}.cpp:{i % 1000 + 1}"

    with open(args.out, "w") as out:
        out.write("startup\ttime=1700000000000000000\n")
        out.write("process\tpid=1000\tparent=1\tcommand=./big\n")
        selected = [location(rng.randrange(args.locations)) for _ in range(300)]
        for _ in range(args.experiments):
            speedup = rng.choice([0.0, 0.0, 0.25, 0.5, 0.75, 1.0])
            out.write(f"experiment\tselected={rng.choice(selected)}\tspeedup={speedup:.2f}\tduration=50000000"
                      f"\tselected-samples={rng.randrange(100)}\n")
            out.write(f"throughput-point\tname=main.cpp:10\tdelta={rng.randrange(900, 1100)}\n")
        for i in range(args.locations):
            function = f"C{i // (lines_per_function * 10)}::m{(i // lines_per_function) % 10}()"
            out.write(f"samples\tlocation={location(i)}\tcount={rng.randrange(1, 50)}\tfunction={function}\n")
        out.write("runtime\ttime=600000000000\n")


if __name__ == "__main__":
    main()
