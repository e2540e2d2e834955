#!/usr/bin/env python3
"""`coz run --format coz-jsonl` read as Coz's own readers read it.

Coz's `coz` script (parse_profile) decides from the first line whether a file
is JSON Lines, then json.loads every line, skipping lines that fail; its
viewer (viewer/ts/profile.ts) splits the text on '\\n' and JSON.parse-s every
line whose first character is '{', reading numbers as numbers (a string
`delta` would be concatenated, not added). So every line must be one strict
JSON object, starting with '{' at column 0, and Coz's six records must carry
exactly Coz's keys with Coz's types; our own records and keys
(docs/profile-format.md, "Our additions") come on top, spelled with '_'.

    jsonl_strict_test.py PROFILE
"""
import json
import sys

# Coz's records: key -> type. "number" is an int or a float, never a bool.
COZ_RECORDS = {
    "startup": {"time": int},
    "experiment": {"selected": str, "speedup": "number", "duration": int, "selected_samples": int},
    "throughput-point": {"name": str, "delta": int},
    "latency-point": {"name": str, "arrivals": int, "departures": int, "difference": int},
    "samples": {"location": str, "count": int},
    "runtime": {"time": int},
}
# Keys of ours on Coz's records (docs/profile-format.md, "Our additions").
OUR_KEYS = {
    "experiment": {"pid", "end", "cores", "cores_busy", "waiting_for_core", "voluntary_switches"},
    "latency-point": {"mean_in_flight"},
    "samples": {"function"},
}
OUR_RECORDS = {"process", "experiments-stopped", "stack", "sampling", "blocked", "latency-histogram"}


def strict_object(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a key appears twice: {keys}")
    return dict(pairs)


def no_constant(name):
    raise ValueError(f"{name} is not JSON")


def has_type(value, expected):
    if isinstance(value, bool):
        return False
    if expected == "number":
        return isinstance(value, (int, float))
    return isinstance(value, expected)


def main(path):
    problems = []
    counts = {}
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        return [f"{path} is empty"], counts
    if not data.endswith(b"\n"):
        problems.append("the file does not end with a newline")
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
        where = f"line {number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            problems.append(f"{where}: not UTF-8 ({e})")
            continue
        # Coz's viewer takes a line for JSON by its first character, and does not strip.
        if not line.startswith("{") or not line.endswith("}"):
            problems.append(f"{where}: not one object from column 0 to the end: {line!r}")
            continue
        try:
            record = json.loads(line, object_pairs_hook=strict_object, parse_constant=no_constant)
        except ValueError as e:
            problems.append(f"{where}: not strict JSON ({e}): {line!r}")
            continue
        kind = record.get("type")
        counts[kind] = counts.get(kind, 0) + 1
        for key, value in record.items():
            if "-" in key:
                problems.append(f"{where}: key {key!r} has a '-' (JSON Lines keys use '_')")
            if isinstance(value, (dict, list)) or value is None:
                problems.append(f"{where}: {key} is {value!r}, no scalar")
        if kind in COZ_RECORDS:
            expected = COZ_RECORDS[kind]
            for key, want in expected.items():
                if key not in record:
                    problems.append(f"{where}: {kind} without {key}: {line!r}")
                elif not has_type(record[key], want):
                    problems.append(f"{where}: {kind} {key} is {record[key]!r}, expected {want if isinstance(want, str) else want.__name__}")
            extra = set(record) - set(expected) - {"type"} - OUR_KEYS.get(kind, set())
            if extra:
                problems.append(f"{where}: {kind} has keys that are neither Coz's nor documented ours: {sorted(extra)}")
            if kind == "experiment" and has_type(record.get("speedup"), "number") and not 0 <= record["speedup"] <= 1:
                problems.append(f"{where}: speedup {record['speedup']} is not between 0 and 1")
        elif kind not in OUR_RECORDS:
            problems.append(f"{where}: unknown record type {kind!r}")
    # The run must have given every record Coz reads something to check.
    for kind in COZ_RECORDS:
        if counts.get(kind, 0) == 0:
            problems.append(f"no {kind} record in the profile")
    return problems, counts


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: jsonl_strict_test.py PROFILE")
    problems, counts = main(sys.argv[1])
    print("records: " + ", ".join(f"{counts[k]} {k}" for k in sorted(counts)))
    for p in problems[:40]:
        print("FAIL: " + p)
    if len(problems) > 40:
        print(f"FAIL: ... and {len(problems) - 40} more")
    sys.exit(1 if problems else 0)
