#!/usr/bin/env python3
"""Second, independent implementation of docs/analysis.md, written from the
document (not from the C++), used to write the test vectors' expected.json.

    test/vectors/reference.py DIR      # prints the analysis of DIR's inputs
    test/vectors/reference.py --write DIR...   # (re)writes DIR/expected.json
    --baseline local|pooled|line       # section 4 (default local, as `coz report`)

Each vector directory holds its profile files and an `inputs.txt` listing
them (one per line, in reading order); expected.json records them too. The
C++ (test/unit/analysis_test.cpp) and the viewer compare their output with
expected.json; this script is only how the expected values were produced.
"""
import bisect
import json
import math
import re
import sys
from pathlib import Path

Z = 1.959963984540054
H = 0.025
ALPHA = 0.05   # false discovery rate (section 7)
N_MIN = 10     # measured experiments before any verdict
CONTENDED = 0.1  # threads waiting for a core that make a point contended (section 5.1)
FAST_HAND_OFFS = 20000.0  # voluntary switches per second from which a point's hand-offs are fast (section 5.2)
K_LOCAL = 8    # neighbours of the local baseline (section 4)
MIX = 0.05     # the scale of the normal mixture behind the confidence sequences (section 7)
MIX_EQ = 0.025  # the no-effect test's own mixture scale (section 7)
PRIOR_DOF = 10.0  # a line's own dispersion is shrunk toward its point's with this many dof (section 3)
BASELINES = ("local", "pooled", "line")
LEVELS = (0.5, 0.95, 0.99)  # percentiles (section 13)
MAX_INCLUSION = 4.0  # a request's inclusion weight is at most this (section 13)
CLIP = 1e-9  # Woodruff's p -/+ z sqrt(V) "clipped into (0, 1)": to [CLIP, 1 - CLIP] (as the C++)
HIST_SCHEME = "log2-32"
HIST_BUCKETS = 32 + (44 - 5 + 1) * 32  # docs/profile-format.md: the last bucket is 1311
NAN = float("nan")

def anytime_half_width(se, alpha, scale=MIX):
    """Section 7: the half-width of the two-sided confidence sequence at level alpha
    (normal mixture): se * sqrt((1 + 1/u) * log((1 + u) / alpha^2)), u = (MIX / se)^2."""
    if se is None or math.isnan(se):
        return NAN
    if se <= 0:
        return 0.0
    u = (scale / se) * (scale / se)
    return se * math.sqrt((1.0 + 1.0 / u) * math.log((1.0 + u) / (alpha * alpha)))


def log_e_value(est, se):
    """Section 7: the log e-value of "no effect" (the normal-mixture likelihood ratio)."""
    if se == 0:
        return 0.0 if est == 0 else math.inf
    u = (MIX / se) * (MIX / se)
    z = est / se
    return z * z * u / (2.0 * (1.0 + u)) - 0.5 * math.log(1.0 + u)


def p_of_log_e(le):
    """The anytime-valid p-value: min(1, 1/e)."""
    return 1.0 if -le > 700 else min(1.0, math.exp(-le))


def line_dispersion(phi, sums):
    """Section 3: the point's phi, or the line's own (shrunk toward it) when larger."""
    if math.isnan(phi):
        return NAN
    if sums is None:
        return phi
    dof = sums["n"] - len(sums["buckets"])
    if dof <= 0:
        return phi
    return max(phi, (sums["s"] + PRIOR_DOF * phi) / (dof + PRIOR_DOF))


def parse_count(v):
    if v is None:
        raise ValueError("missing")
    if re.fullmatch(r"[0-9]+", v):
        return int(v)
    d = float(v)  # JSON numbers such as 118.0 or 1.2e8
    if not math.isfinite(d) or d < 0 or d != math.floor(d):
        raise ValueError("bad")
    return int(d)


def parse_buckets(text):
    """`B:N,B:N,...` (docs/profile-format.md, latency-histogram): buckets increasing, below 1312."""
    out = []
    for part in text.split(","):
        m = re.fullmatch(r"([0-9]+):([0-9]+)", part)
        if not m:
            raise ValueError("bucket")
        b, n = int(m.group(1)), int(m.group(2))
        if b >= HIST_BUCKETS or (out and b <= out[-1][0]):
            raise ValueError("bucket order")
        out.append((b, n))
    return out


def split(line):
    t = line.strip(" \t\r\n")
    if t.startswith("{"):
        obj = json.loads(t)
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise ValueError("json")
        # Coz spells the keys and types of the tab form with '_' for '-'
        # (selected_samples, throughput_point): both forms read alike.
        # null, an array or an object is as good as absent.
        fields = {}
        for k, v in obj.items():
            if isinstance(v, (dict, list)) or v is None:
                continue
            if isinstance(v, bool):
                v = "true" if v else "false"
            elif isinstance(v, float) and v == int(v) and "e" not in repr(v):
                v = repr(v)
            fields[k.replace("_", "-")] = str(v)
        typ = obj["type"].replace("_", "-")
    else:
        sep = "\t" if "\t" in line else " "
        parts = [p.strip(" \t\r\n") for p in line.split(sep)]
        parts = [p for p in parts if p]
        if not parts:
            raise ValueError("empty")
        typ = parts[0]
        fields = {}
        for p in parts[1:]:
            if "=" in p:
                k, v = p.split("=", 1)
                fields[k] = v
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", typ):
        raise ValueError("type")
    return typ, fields


def lenient_real(v):
    """A non-negative finite number, or None (section 5.1: bad core figures are no figures)."""
    try:
        d = float(v)
    except (TypeError, ValueError):
        return None
    return d if math.isfinite(d) and d >= 0 else None


def core_figures(e, f):
    """Section 5.1: cores=, cores-busy=, waiting-for-core=, all three valid or none."""
    try:
        cores = parse_count(f.get("cores"))
    except (TypeError, ValueError):
        return
    busy, waiting = lenient_real(f.get("cores-busy")), lenient_real(f.get("waiting-for-core"))
    if cores >= 1 and busy is not None and waiting is not None:
        e.update(cores=cores, busy=busy, waiting=waiting)


def switch_count(e, f):
    """Section 5.2: voluntary-switches=, an integer >= 0, or none."""
    try:
        e["switches"] = parse_count(f.get("voluntary-switches"))
    except (TypeError, ValueError):
        pass


def read(files, base):
    prof = dict(experiments=[], samples={}, functions={}, stacks={}, blocked={}, runtime=0, warnings=[],
                sampling=None)
    for name in files:
        data = (base / name).read_bytes().decode("utf-8", "surrogateescape")
        lines = data.split("\n")
        last_incomplete = not data.endswith("\n") and data != ""
        if data.endswith("\n"):
            lines = lines[:-1]
        current = None
        for i, raw in enumerate(lines, 1):
            line = raw[:-1] if raw.endswith("\r") else raw
            if line.strip(" \t\r") == "":
                continue
            try:
                typ, f = split(line)
                if typ == "experiment":
                    current = None
                    sel = f.get("selected")
                    if not sel:
                        raise ValueError("selected")
                    sp = float(f["speedup"])
                    if not math.isfinite(sp) or not (0 <= sp <= 1):
                        raise ValueError("speedup")
                    e = dict(selected=sel, speedup=sp, duration=parse_count(f.get("duration")),
                             selected_samples=parse_count(f.get("selected-samples")), tp=[], lat=[], hist=[],
                             cores=0, busy=0.0, waiting=0.0, switches=None)
                    core_figures(e, f)
                    switch_count(e, f)
                    prof["experiments"].append(e)
                    current = e
                elif typ in ("throughput-point", "progress-point"):
                    n = f.get("name")
                    if not n:
                        raise ValueError("name")
                    d = parse_count(f.get("delta"))
                    if current is None:
                        raise ValueError("orphan")
                    current["tp"].append((n, d))
                elif typ == "latency-point":
                    n = f.get("name")
                    if not n:
                        raise ValueError("name")
                    a = parse_count(f.get("arrivals"))
                    parse_count(f.get("departures"))
                    mif = f.get("mean-in-flight")
                    if mif is not None:
                        mif = float(mif)
                        if not math.isfinite(mif) or mif < 0:
                            raise ValueError("mif")
                    if mif is None or "difference" in f:
                        diff = int(f["difference"])
                    if current is None:
                        raise ValueError("orphan")
                    current["lat"].append((n, a, mif if mif is not None else float(diff)))
                elif typ == "latency-histogram":
                    n, scheme, buckets = f.get("name"), f.get("scheme"), f.get("buckets")
                    if not n or not scheme or not buckets:
                        raise ValueError("name, scheme, buckets")
                    if scheme != HIST_SCHEME:  # a scheme this reader does not know: skipped
                        raise ValueError("scheme")
                    counts = parse_buckets(buckets)
                    if current is None:
                        raise ValueError("orphan")
                    current["hist"].append((n, counts))
                elif typ == "samples":
                    loc = f.get("location")
                    if not loc:
                        raise ValueError("location")
                    c = parse_count(f.get("count"))
                    prof["samples"][loc] = prof["samples"].get(loc, 0) + c
                    if f.get("function"):
                        prof["functions"][loc] = f["function"]
                elif typ == "stack":
                    fr = f.get("frames")
                    if not fr:
                        raise ValueError("frames")
                    c = parse_count(f.get("count"))
                    prof["stacks"][fr] = prof["stacks"].get(fr, 0) + c
                elif typ == "blocked":
                    s, k = f.get("site"), f.get("kind")
                    if not s or not k:
                        raise ValueError("site")
                    t, c = parse_count(f.get("time")), parse_count(f.get("count"))
                    b = prof["blocked"].setdefault((s, k), [0, 0])
                    b[0] += t
                    b[1] += c
                elif typ == "runtime":
                    prof["runtime"] += parse_count(f.get("time"))
                elif typ == "sampling":
                    vals = [parse_count(f.get(k)) for k in ("samples", "in-scope", "lost")]
                    tot = prof["sampling"] or {"processes": 0, "samples": 0, "in_scope": 0, "lost": 0,
                                               "timed": 0, "attributed_ns": 0, "cpu_time_ns": 0}
                    tot["processes"] += 1
                    for k, v in zip(("samples", "in_scope", "lost"), vals):
                        tot[k] += v
                    try:  # period= and cpu-time=: both counts, else the pair is ignored
                        period, cpu = parse_count(f.get("period")), parse_count(f.get("cpu-time"))
                        tot["timed"] += 1
                        tot["attributed_ns"] += vals[1] * period
                        tot["cpu_time_ns"] += cpu
                    except ValueError:
                        pass
                    prof["sampling"] = tot
            except (ValueError, KeyError, json.JSONDecodeError):
                prof["warnings"].append({"file": name, "line": i})
        del last_incomplete
    return prof


def frame_kind(frame):
    """("line", None) for an in-scope frame, ("callee", (function, library)),
    or ("skip", None): docs/analysis.md section 9, "Callees"."""
    if frame == "":
        return "skip", None
    if not frame.endswith("]") or " [" not in frame:
        return "line", None
    cut = frame.rindex(" [")
    function, library = frame[:cut], frame[cut + 2:-1]
    if function == "" or library == "":
        return "skip", None
    return "callee", (function, library)


def callees(stacks):
    """in-scope line -> its top callee (or absent)."""
    per_line = {}  # line -> [stack samples, {callee frame: samples}]
    for raw, count in stacks.items():
        kept = [(fr, frame_kind(fr)[0]) for fr in raw.split(";")]
        kept = [(fr, k) for fr, k in kept if k != "skip"]
        lines_at = [i for i, (_, k) in enumerate(kept) if k == "line"]
        if not lines_at:
            continue
        i = lines_at[-1]
        entry = per_line.setdefault(kept[i][0], [0, {}])
        entry[0] += count
        if i + 1 < len(kept):
            x = kept[i + 1][0]
            entry[1][x] = entry[1].get(x, 0) + count
    out = {}
    for line, (total, by) in per_line.items():
        if not by:
            continue
        top = min(by, key=lambda x: (-by[x], x.encode("utf-8", "surrogateescape")))
        function, library = frame_kind(top)[1]
        out[line] = {"function": function, "library": library, "samples": by[top], "stack_samples": total,
                     "share": by[top] / total}
    return out


def verdicts(point, effs):
    """Section 7: e-BH over the point's tested effects' e-values, then labels."""
    tested = [e for e in effs if e["p_value"] is not None]
    log_e = {id(e): log_e_value(e["impact"], e["impact_se"]) for e in tested}
    eligible = sorted((log_e[id(e)] for e in tested if e["measured_experiments"] >= N_MIN), reverse=True)
    m, R = len(tested), 0
    for k, le in enumerate(eligible, 1):
        if le >= math.log(m / (k * ALPHA)):
            R = k
    level = (R * ALPHA) / m if R > 0 else None
    point.update(tested=m, discoveries=R, adjusted_level=level)
    level_next = ((R + 1) * ALPHA) / m if m > 0 else ALPHA
    for e in tested:
        iv, ise = e["impact"], e["impact_se"]
        material = not (abs(e["slope"]) * 0.5 < H)  # NaN: material
        discovery = R > 0 and e["measured_experiments"] >= N_MIN and log_e[id(e)] >= eligible[R - 1]
        if discovery:
            half = anytime_half_width(ise, level)
            e["adjusted_low"], e["adjusted_high"] = iv - half, iv + half
        # "no effect": two one-sided tests at ALPHA, the two-sided sequence at 2 ALPHA
        half = anytime_half_width(ise, 2.0 * ALPHA, MIX_EQ)
        if discovery and material:
            e["label"] = "positive" if iv > 0 else "negative"
        elif e["measured_experiments"] >= N_MIN and not material and half <= H:
            e["label"] = "no-effect"
        else:
            e["label"] = "undecided"
        if e["label"] != "undecided":
            e["experiments_needed"] = 0
        else:
            qe = anytime_half_width(ise, level_next) / abs(iv) if abs(iv) > 0 else math.inf
            qh = half / H
            f = min(qe * qe, qh * qh)
            e["experiments_needed"] = int(min(1e9, max(1, math.ceil(e["experiments"] * (f - 1)),
                                                       N_MIN - e["measured_experiments"])))


GROUPS = ("positive", "negative", "no-effect", "undecided", "thin", "insufficient-data", "unmeasured")


def rank_key(e):
    """Section 8: label group, its conservative bound, max_effect, then names."""
    g = e["label"]
    if g == "positive":
        bound = -e["adjusted_low"]
    elif g == "negative":
        bound = e["adjusted_high"]
    elif g == "undecided":
        bound = -e["impact_low"] if not math.isnan(e["impact_low"]) else math.inf
    else:
        bound = -e["impact"]
    group = "thin" if g == "undecided" and e["measured_experiments"] < N_MIN else g
    return (GROUPS.index(group), bound, -e["max_effect"], e["line"], e["point"], e["kind"])


def function_of_unit(prof, name):
    """Section 9: FILE:FUNCTION without a samples record -> FUNCTION (the longest match), else ""."""
    if name in prof["samples"]:
        return ""
    fns = [f for f in set(prof["functions"].values()) if len(name) > len(f) and name.endswith(":" + f)]
    return max(fns, key=len, default="")


def ratio(c):
    return c["y"] / c["x"]


def neighbourhood(bpos, i):
    """Section 4, local: the K_LOCAL positions of bpos (sorted) nearest to i, i excluded,
    the earlier first at equal distance; returned in increasing position."""
    lo = bisect.bisect_left(bpos, i) - 1
    hi = lo + 1
    if hi < len(bpos) and bpos[hi] == i:
        hi += 1
    out = []
    while len(out) < K_LOCAL and (lo >= 0 or hi < len(bpos)):
        if hi >= len(bpos) or (lo >= 0 and i - bpos[lo] <= bpos[hi] - i):
            out.append(bpos[lo]); lo -= 1
        else:
            out.append(bpos[hi]); hi += 1
    return sorted(out)


def analyze(prof, halves=True, baseline="local"):
    obs = {}  # (name, kind) -> list of (line, bucket, x, y, d, untreated)
    exps = {}  # (name, kind) -> the experiment of each observation (section 5.1)
    for e in prof["experiments"]:
        b = int(math.floor(e["speedup"] * 20 + 0.5))
        u = 1 if b > 0 and e["selected_samples"] == 0 else 0  # section 2: no delay inserted
        for n, d in e["tp"]:
            obs.setdefault((n, "throughput"), []).append((e["selected"], b, d, float(e["duration"]), e["duration"], u))
            exps.setdefault((n, "throughput"), []).append(e)
        for n, a, L in e["lat"]:
            lst = obs.setdefault((n, "latency"), [])
            exps.setdefault((n, "latency"), [])
            if e["duration"] > 0:
                lst.append((e["selected"], b, a, e["duration"] * L, e["duration"], u))
                exps[(n, "latency")].append(e)
    total = sum(prof["samples"].values())
    top_callees = callees(prof["stacks"])
    points, effects = [], []
    for (name, kind) in sorted(obs):
        ol = obs[(name, kind)]
        base = dict(n=0, x=0, y=0.0)  # the pool (section 4), from the observations' own y
        for line, b, x, y, d, u in ol:
            if b == 0:
                base["n"] += 1; base["x"] += x; base["y"] += y
        usable = base["x"] > 0 and ratio(base) > 0
        R0, X0 = (ratio(base), float(base["x"])) if usable else (NAN, NAN)
        # section 4, local: every y becomes y' = y * (R_0 / R_i^loc); nbr[i] = N(i), xloc[i] = X_i^loc
        bpos = [i for i, o in enumerate(ol) if o[1] == 0]
        nbr, xloc = [bpos] * len(ol), [base["x"]] * len(ol)
        if baseline == "local" and usable:
            adj = []
            for i, (line, b, x, y, d, u) in enumerate(ol):
                ni = neighbourhood(bpos, i)
                xl, yl = 0, 0.0
                for j in ni:
                    xl += ol[j][2]; yl += ol[j][3]
                if ni and xl > 0 and yl > 0:
                    rl = yl / xl
                else:  # no usable neighbours: the pool, i itself included if it is one
                    ni, xl, rl = bpos, base["x"], R0
                nbr[i], xloc[i] = ni, xl
                adj.append((line, b, x, y * (R0 / rl), d, u))
            ol = adj
        cells = {}
        for i, (line, b, x, y, d, u) in enumerate(ol):
            c = cells.setdefault((line, b), dict(n=0, x=0, y=0.0, d=0, u=0, members=[]))
            c["n"] += 1; c["x"] += x; c["y"] += y; c["d"] += d; c["u"] += u; c["members"].append(i)
        s, N, K = 0.0, 0, set()
        line_sums = {}  # line -> its sums over its observations at s > 0 (section 3)
        local = baseline == "local" and usable
        for i, (line, b, x, y, d, _) in enumerate(ol):
            c = cells[(line, b)]
            if c["x"] == 0:
                continue
            R = ratio(c)
            if not R > 0:
                continue
            if kind == "throughput":
                m = y / R
                if not m > 0:
                    continue
                t = (x - m) * (x - m) / m
                if local:  # section 4: the neighbours' noise is counted apart
                    t /= 1.0 + m / xloc[i]
            else:
                if x == 0:
                    continue
                e_ = y - R * x
                t = e_ * e_ / (R * R * x)
                if local:
                    t /= 1.0 + x / xloc[i]
            s += t; N += 1; K.add((line, b))
            if b > 0:
                o = line_sums.setdefault(line, dict(s=0.0, n=0, buckets=set()))
                o["s"] += t; o["n"] += 1; o["buckets"].add(b)
        dof = N - len(K)
        phi = s / dof if dof > 0 else NAN
        points.append(dict(name=name, kind=kind, experiments=len(ol), dispersion=phi, dispersion_dof=dof,
                           baseline_ns=R0, baseline_experiments=base["n"],
                           baseline_visits=base["x"]))
        point = points[-1]
        # section 5.1: the cores, over the 0% observations with core figures
        wsum = bsum = qsum = 0.0
        ncores = 0
        for i in bpos:
            e = exps[(name, kind)][i]
            if e["cores"] == 0:
                continue
            w = float(e["duration"])
            ncores = max(ncores, e["cores"])
            wsum += w; bsum += w * e["busy"]; qsum += w * e["waiting"]
        if ncores > 0 and wsum > 0:
            point.update(cores=ncores, cores_busy=bsum / wsum, waiting_for_core=qsum / wsum)
            point["contended"] = point["waiting_for_core"] >= CONTENDED
        else:
            point.update(cores=None, cores_busy=None, waiting_for_core=None, contended=False)
        # section 5.2: the hand-offs, over the 0% observations with a switch count
        vsum = dsum = 0.0
        for i in bpos:
            e = exps[(name, kind)][i]
            if e["switches"] is None:
                continue
            vsum += e["switches"]; dsum += e["duration"] / 1e9
        if dsum > 0:
            point["hand_offs_per_second"] = vsum / dsum
            point["fast_hand_offs"] = point["hand_offs_per_second"] >= FAST_HAND_OFFS
        else:
            point.update(hand_offs_per_second=None, fast_hand_offs=False)
        for line in sorted({k[0] for k in cells}):
            mine = sorted((b, c) for (l, b), c in cells.items() if l == line)
            eff = dict(line=line, point=name, kind=kind, experiments=sum(c["n"] for _, c in mine),
                       samples=prof["samples"].get(line, 0), function=prof["functions"].get(line, ""),
                       callee=top_callees.get(line), function_unit=False,
                       impact=0.0, impact_se=NAN, impact_low=NAN, impact_high=NAN, slope=NAN, slope_se=NAN,
                       slope_low=NAN, slope_high=NAN, max_effect=0.0, experiments_needed=None,
                       measured_experiments=0, untreated_experiments=sum(c["u"] for _, c in mine),
                       p_value=None, adjusted_low=None, adjusted_high=None, withheld=None,
                       measured=False, baseline="none", baseline_ns=NAN, curve=[], label="unmeasured")
            unit = function_of_unit(prof, line)
            if unit:  # section 9: a function unit gets all the samples of its function's lines
                eff["function"], eff["function_unit"] = unit, True
                eff["samples"] = sum(prof["samples"][l] for l, f in prof["functions"].items() if f == unit)
            eff["sample_share"] = eff["samples"] / total if total > 0 else 0.0
            smp = prof["sampling"]
            eff["cpu_share"] = (float(eff["samples"]) * float(smp["attributed_ns"]) / (float(total) * float(smp["cpu_time_ns"]))
                                if total > 0 and smp and smp["timed"] > 0 and smp["cpu_time_ns"] > 0 else NAN)
            eff["dispersion"] = NAN
            effects.append(eff)
            if not usable:
                continue
            lphi = line_dispersion(phi, line_sums.get(line))
            eff["dispersion"] = lphi
            R0e, X0e, src = R0, X0, baseline
            if baseline == "line":
                own = cells.get((line, 0))
                if own and own["x"] > 0 and ratio(own) > 0:
                    R0e, X0e = ratio(own), float(own["x"])
                else:
                    src = "pooled"
            eff["baseline"], eff["baseline_ns"] = src, R0e
            meas, untreated_measured = [], 0
            for b, c in mine:
                if c["x"] == 0:
                    continue
                R = ratio(c); r = R / R0e; ps = 1.0 - r
                bound, bounded = NAN, False  # section 5.1
                if b > 0 and kind == "throughput" and point["contended"] and point["cores"] is not None \
                        and not math.isnan(eff["cpu_share"]):
                    bound = 1.0 - (point["cores_busy"] / float(point["cores"])) * (1.0 - (b / 20) * eff["cpu_share"])
                    if ps > bound:
                        ps, r, bounded = bound, 1.0 - bound, True
                G = None
                if b == 0:
                    se = NAN
                elif src == "local":
                    G = local_weights(c, ol, nbr, xloc)
                    V = 0.0
                    for j in bpos:
                        g = G.get(j, 0.0)
                        V += ol[j][2] * g * g
                    se = r * math.sqrt(lphi * (1.0 / c["x"] + V))
                else:
                    se = r * math.sqrt(lphi * (1.0 / c["x"] + 1.0 / X0e))
                high = ps + Z * se
                if not math.isnan(bound) and not math.isnan(se):
                    high = bound
                eff["curve"].append(dict(line_speedup=b / 20, program_speedup=ps, se=se, low=ps - Z * se,
                                         high=high, experiments=c["n"], visits=c["x"],
                                         duration_ns=c["d"], value_ns=R, bound=bound, bounded=bounded))
                if b > 0:
                    meas.append((b / 20, ps, r, float(c["x"]), G))
                    untreated_measured += c["u"]
            if meas and untreated_measured == sum(c["n"] for b, c in mine if b > 0 and c["x"] > 0):
                # section 2: every speedup of the line inserted no delay; nothing was tried
                meas = []
                eff["curve"] = [p for p in eff["curve"] if p["line_speedup"] == 0]
            if not meas:
                continue
            eff["measured"] = True
            m = len(meas); sm = meas[-1][0]
            trap = []
            for k in range(m):
                prev = meas[k - 1][0] if k > 0 else 0.0
                nxt = meas[k + 1][0] if k + 1 < m else meas[k][0]
                trap.append((nxt - prev) / (2.0 * sm))
            D = 0.0
            for s_, _, _, x, _ in meas:
                D += x * s_ * s_
            slope_a = [x * s_ / D for s_, _, _, x, _ in meas]

            def comb(a):
                v = sq = lin = 0.0
                for k, (s_, dlt, r, x, _) in enumerate(meas):
                    v += a[k] * dlt
                    sq += a[k] * a[k] * r * r / x
                    lin += a[k] * r
                if src == "local":  # section 4: (Σ a r)² / X_0 becomes Σ_j x_j h_j²
                    shared = 0.0
                    for j in bpos:
                        h = 0.0
                        for k, (_, _, r, _, G) in enumerate(meas):
                            h += a[k] * r * G.get(j, 0.0)
                        shared += ol[j][2] * h * h
                else:
                    shared = lin * lin / X0e
                return v, math.sqrt(lphi * (sq + shared)) if not math.isnan(lphi) else NAN
            iv, ise = comb(trap)
            sv, sse = comb(slope_a)
            half = anytime_half_width(ise, ALPHA)  # the 95% confidence sequence
            eff.update(impact=iv, impact_se=ise, impact_low=iv - half, impact_high=iv + half,
                       slope=sv, slope_se=sse, slope_low=sv - Z * sse, slope_high=sv + Z * sse,
                       max_effect=max(p[1] for p in meas))
            eff["measured_experiments"] = sum(c["experiments"] for c in eff["curve"] if c["line_speedup"] > 0)
            if math.isnan(lphi):
                eff["label"] = "insufficient-data"
                continue
            eff["p_value"] = p_of_log_e(log_e_value(iv, ise))  # anytime-valid: 1 / e
        verdicts(points[-1], [e for e in effects if e["point"] == name and e["kind"] == kind])
        if point["contended"]:  # section 5.1: no confident label
            for e in effects:
                if e["point"] == name and e["kind"] == kind and e["label"] in ("positive", "negative", "no-effect", "undecided"):
                    e.update(label="undecided", experiments_needed=None, adjusted_low=None, adjusted_high=None,
                             withheld="cores-contended")
            point.update(discoveries=0, adjusted_level=None)
        elif point["fast_hand_offs"]:  # section 5.2: no "no effect"
            for e in effects:
                if e["point"] == name and e["kind"] == kind and e["label"] == "no-effect":
                    e.update(label="undecided", experiments_needed=None, withheld="fast-hand-offs")
    effects.sort(key=rank_key)
    lines = sorted(({"location": l, "function": prof["functions"].get(l, ""), "samples": c,
                     "share": c / total if total else 0.0, "callee": top_callees.get(l)}
                    for l, c in prof["samples"].items()),
                   key=lambda x: (-x["samples"], x["location"]))
    funcs = {}
    for l, c in prof["samples"].items():
        fn = prof["functions"].get(l)
        if fn:
            f = funcs.setdefault(fn, {"function": fn, "samples": 0, "share": 0.0, "lines": 0})
            f["samples"] += c; f["lines"] += 1
    for f in funcs.values():
        f["share"] = f["samples"] / total if total else 0.0
    stotal = sum(prof["stacks"].values())
    stacks = sorted(({"frames": fr.split(";"), "raw": fr, "count": c, "share": c / stotal if stotal else 0.0}
                     for fr, c in prof["stacks"].items()), key=lambda s: (-s["count"], s["raw"]))
    for s_ in stacks:
        del s_["raw"]
    blocked = sorted(({"site": s, "kind": k, "time_ns": v[0], "count": v[1]} for (s, k), v in prof["blocked"].items()),
                     key=lambda b: (-b["time_ns"], b["site"], b["kind"]))
    sampling = prof["sampling"] and dict(prof["sampling"])
    if sampling:
        if sampling.pop("timed") == 0:
            sampling["attributed_ns"] = sampling["cpu_time_ns"] = None
    out = {"experiments": len(prof["experiments"]), "runtime_ns": prof["runtime"], "total_samples": total,
           "sampling": sampling, "points": points, "effects": effects}
    pct = percentiles(prof)
    if pct:  # section 13: only when some point has request histograms
        out["percentiles"] = pct
    out.update({
            "profile": {"lines": lines, "functions": sorted(funcs.values(), key=lambda f: (-f["samples"], f["function"])),
                        "stacks": stacks, "blocked": blocked},
            "stability": stability(prof, points, effects, baseline) if halves else [],
            "warnings": prof["warnings"]})
    return out


def bucket_bounds(b):
    """docs/profile-format.md, scheme log2-32: bucket b < 32 holds b ns ([b, b + 1)); above,
    [(32 + j) << k, (33 + j) << k) with k = (b - 32) // 32, j = (b - 32) % 32."""
    if b < 32:
        return float(b), float(b + 1)
    k, j = (b - 32) // 32, (b - 32) % 32
    return float((32 + j) << k), float((33 + j) << k)


def weighed(counts, d):
    """Section 13: one experiment's histogram, each request with its inclusion weight
    w = D / (D - v) at its bucket's middle, at most 4. -> dict(buckets=[(b, low, high, weight,
    squared weights)], n = Σ weights, m = Σ squared weights, requests = as recorded)."""
    out = dict(buckets=[], n=0.0, m=0.0, requests=0)
    D = float(d)
    for b, k in counts:
        low, high = bucket_bounds(b)
        v = (low + high) / 2
        w = min(MAX_INCLUSION, D / (D - v)) if v < D else MAX_INCLUSION
        out["buckets"].append((b, low, high, w * k, w * w * k))
        out["n"] += w * k
        out["m"] += w * w * k
        out["requests"] += k
    return out


class RequestCell:
    """Section 13: the weighted requests of a cell's experiments (profile order)."""

    def __init__(self):
        self.exps, self.merged, self.n, self.m = [], {}, 0.0, 0.0

    def add(self, e):
        self.exps.append(e)
        for b, low, high, w, _ in e["buckets"]:
            c = self.merged.setdefault(b, [low, high, 0.0])
            c[2] += w
        self.n += e["n"]
        self.m += e["m"]

    def estimates(self, p):
        """At least 2 / (1 - p) weighted requests."""
        return self.n * (1 - p) >= 2.0

    def quantile(self, p):
        """Where a share p of the weight lies below, linear inside the bucket that holds it."""
        target, below = p * self.n, 0.0
        last = NAN
        for b in sorted(self.merged):
            low, high, w = self.merged[b]
            if w > 0 and below + w >= target:
                return low + (target - below) / w * (high - low)
            below += w
            last = high
        return last

    def with_log_se(self, p, deff):
        """(q(p), se(log q)) by Woodruff's interval, or (NaN, NaN) with too few requests."""
        if not self.estimates(p):
            return NAN, NAN
        q = self.quantile(p)
        V = deff * p * (1 - p) * self.m / (self.n * self.n)
        half = Z * math.sqrt(V)
        ql = self.quantile(max(CLIP, p - half))
        qh = self.quantile(min(1 - CLIP, p + half))
        if not (q > 0 and ql > 0 and qh > 0):
            return NAN, NAN
        return q, (math.log(qh) - math.log(ql)) / (2 * Z)


def weight_below(e, q):
    """An experiment's weight below q (linear inside q's bucket)."""
    below = 0.0
    for _, low, high, w, _ in e["buckets"]:
        if high <= q:
            below += w
        else:
            if low < q:
                below += w * (q - low) / (high - low)
            break
    return below


def design_effect(cells, p):
    """Section 13: over every cell with two or more experiments (and a q(p)), the terms
    (a_e - p n_e)^2 / (p (1 - p) m_e); max(1, Σ / (N - K)), 1 when N <= K."""
    total, N, K = 0.0, 0, 0
    for c in cells:
        if len(c.exps) < 2 or not c.estimates(p):
            continue
        q = c.quantile(p)
        here = 0
        for e in c.exps:
            if e["m"] <= 0:
                continue
            off = weight_below(e, q) - p * e["n"]
            total += off * off / (p * (1 - p) * e["m"])
            here += 1
        if here:
            N += here
            K += 1
    return max(1.0, total / (N - K)) if N > K else 1.0


def change(log_ratio, se):
    """1 - exp(log ratio) and its interval 1 - exp(log ratio -/+ z se)."""
    low = high = NAN
    if math.isfinite(se):
        low, high = 1 - math.exp(log_ratio + Z * se), 1 - math.exp(log_ratio - Z * se)
    return 1 - math.exp(log_ratio), low, high


def percentiles(prof):
    """Section 13: per latency point with request histograms (by name), the untreated
    percentiles and each line's changes, per speedup and at 50%."""
    by_point = {}
    for e in prof["experiments"]:
        if e["duration"] == 0:  # no inclusion weight without a duration
            continue
        for name, counts in e["hist"]:
            by_point.setdefault(name, []).append((e, weighed(counts, e["duration"])))
    out = []
    for name in sorted(by_point):
        base, lines, requests = RequestCell(), {}, 0
        for e, w in by_point[name]:
            requests += w["requests"]
            b = int(math.floor(e["speedup"] * 20 + 0.5))
            if b == 0:
                base.add(w)
            else:
                lines.setdefault(e["selected"], {}).setdefault(b, RequestCell()).add(w)
        cells = [base] + [c for line in sorted(lines) for _, c in sorted(lines[line].items())]
        deff = [design_effect(cells, p) for p in LEVELS]
        q0 = [base.with_log_se(p, deff[k]) for k, p in enumerate(LEVELS)]
        point = dict(name=name, requests=requests, baseline_experiments=len(base.exps), baseline_requests=base.n,
                     levels=list(LEVELS), baseline_ns=[q for q, _ in q0], design_effect=deff, lines=[])
        for line in sorted(lines):
            curve = [dict(line_speedup=b / 20, experiments=len(c.exps), requests=c.n, levels=[])
                     for b, c in sorted(lines[line].items())]
            cs = [c for _, c in sorted(lines[line].items())]
            at_half = []
            for k, p in enumerate(LEVELS):
                base_q, base_se = q0[k]
                fit = []  # (s, log ratio, own se) of the cells with a change and an se
                for pt, c in zip(curve, cs):
                    q, se = c.with_log_se(p, deff[k])
                    lv = dict(latency_ns=q, change=NAN, low=NAN, high=NAN)
                    if math.isfinite(q) and math.isfinite(base_q):
                        y = math.log(q / base_q)
                        lv["change"], lv["low"], lv["high"] = change(y, math.sqrt(se * se + base_se * base_se))
                        if math.isfinite(se) and se > 0:
                            fit.append((pt["line_speedup"], y, se))
                    pt["levels"].append(lv)
                half = dict(latency_ns=NAN, change=NAN, low=NAN, high=NAN)
                if fit:  # beta = Σ w s y / Σ w s², w = 1 / se²; Var as section 6
                    sws = sum(s_ * s_ / (se * se) for s_, _, se in fit)
                    beta = sum(s_ * y / (se * se) for s_, y, se in fit) / sws
                    a = [s_ / (se * se) / sws for s_, _, se in fit]
                    own = sum(ak * ak * se * se for ak, (_, _, se) in zip(a, fit))
                    shared = sum(a)
                    se_beta = math.sqrt(own + shared * shared * base_se * base_se)
                    half["change"], half["low"], half["high"] = change(beta * 0.5, se_beta * 0.5)
                at_half.append(half)
            point["lines"].append(dict(line=line, at_half=at_half, curve=curve))
        # ranked by the p99 change at 50%, largest first, undefined last (then by line)
        point["lines"].sort(key=lambda l: (0, -l["at_half"][2]["change"]) if math.isfinite(l["at_half"][2]["change"])
                            else (1, 0.0))
        out.append(point)
    return out


def local_weights(c, ol, nbr, xloc):
    """Section 4, local: G_c(j) = Σ_{i∈c, j∈N(i)} u_i / X_i^loc (i in profile order), j -> G."""
    G = {}
    for i in c["members"]:
        u = ol[i][3] / c["y"] if c["y"] != 0 else 0.0
        w = u / xloc[i]
        for j in nbr[i]:
            G[j] = G.get(j, 0.0) + w
    return G


def stability(prof, points, effects, baseline):
    """Section 8, split halves: the even- and odd-numbered experiments analysed alone."""
    a = analyze(dict(prof, experiments=prof["experiments"][0::2]), halves=False, baseline=baseline)["effects"]
    b = analyze(dict(prof, experiments=prof["experiments"][1::2]), halves=False, baseline=baseline)["effects"]

    def top(effs, p, k):
        return [e["line"] for e in effs if e["measured"] and (e["point"], e["kind"]) == p][:k]
    out = []
    for pt in points:
        p = (pt["name"], pt["kind"])
        K = min(5, sum(1 for e in effects if e["measured"] and (e["point"], e["kind"]) == p))
        if K > 0:
            out.append({"name": p[0], "kind": p[1], "top": K, "agree": len(set(top(a, p, K)) & set(top(b, p, K)))})
    return out


def clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v


def vector_options(d):
    """A vector's options.txt (`KEY=VALUE` lines, only `baseline` so far), else {}."""
    f = Path(d) / "options.txt"
    if not f.exists():
        return {}
    return dict(l.strip().split("=", 1) for l in f.read_text().splitlines() if l.strip())


def vector(d, baseline=None):
    d = Path(d)
    inputs = [l.strip() for l in (d / "inputs.txt").read_text().splitlines() if l.strip()]
    options = vector_options(d)
    mode = baseline or options.get("baseline", "local")
    return inputs, options, clean(analyze(read(inputs, d), baseline=mode))


if __name__ == "__main__":
    args, baseline = sys.argv[1:], None
    if "--baseline" in args:
        k = args.index("--baseline")
        if k + 1 >= len(args) or args[k + 1] not in BASELINES:
            sys.exit("--baseline local|pooled|line")
        baseline = args[k + 1]
        del args[k:k + 2]
    if args and args[0] == "--write":
        for d in args[1:]:
            inputs, options, result = vector(d, baseline)
            comment = (Path(d) / "README").read_text().strip().splitlines() if (Path(d) / "README").exists() else []
            out = {"comment": comment, "tolerance": 1e-9, "inputs": inputs}
            if options:
                out["options"] = options
            out.update(result)
            (Path(d) / "expected.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    else:
        print(json.dumps(vector(args[0], baseline)[2], indent=1))
