#!/usr/bin/env python3
"""Issue 26's targets, read off saved comparisons (hbl compare --output FILE), per HSS:

  1. harmonia's mean speed-up over the papers' prior set (CDE, HPS, Archivist, RNN-HSS, Sibyl);
  2. the workloads where harmonia is more than 3% slower than the best non-learning policy;
  3. the share of the gap from the best non-learning policy to the oracle that harmonia closes:
     between geomeans (as hbl compare gives it), and the median over the workloads (a mean is
     ruled by the workloads whose gap is a hair wide), each against its
     own best non-learning policy, where there is a gap and the oracle is a bound.

Each on the workloads of 100,000+ requests (the targets' set: compare's long_workloads) and, apart,
on every workload. The held-out protocol is the run given first (the shipped pretrained agents);
with --untrained FILE, a run of `hbl compare --untrained` (the papers' protocol: every workload
learned online from scratch), its harmonia is read against the first run's baselines and oracle,
which do not learn.  With --guard FILE..., the guard of results/diagnosis/guard.txt (harmonia with
baselines as shadows: scripts/guard_study.py's JSON lines, or a comparison's harmonia-guard runs) is
read the same way, in harmonia's place, on the workloads its runs cover.

    scripts/quality_targets.py results/quality/quality.json \\
        --untrained results/quality/untrained.json > results/quality/targets.txt
"""
import argparse
import json
import sys
from statistics import median

from hbl.experiments.tables import LEARNING, REFERENCES, geomean

PRIOR = ("cde", "hps", "archivist", "rnn-hss", "sibyl")         # the papers' prior set
TARGET_PRIOR, TARGET_BEHIND, TARGET_GAP = 0.29, 0.03, 0.50


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("quality_targets: cannot read %s: %s" % (path, e))


def speedup(slower, faster):
    """How much faster `faster` is than `slower` (latencies): +0.29 is 29% faster."""
    return slower / faster - 1


def non_learning(policies):
    """The contenders that do not learn (the bounds and Fast-Only are no contenders)."""
    return [p for p in policies if p not in LEARNING | REFERENCES]


def targets(norm, workloads, policies, harmonia, beaten):
    """The three figures on `workloads`: harmonia's latencies from `harmonia` (workload -> value),
    the rest from `norm` (workload -> policy -> value)."""
    heuristics = non_learning(policies)
    prior_set = [p for p in PRIOR if p in policies]
    geo = {p: geomean([norm[w][p] for w in workloads]) for p in set(heuristics + prior_set + ["oracle"])}
    h_geo = geomean([harmonia[w] for w in workloads])
    prior = {p: speedup(geo[p], h_geo) for p in prior_set}
    behind, gaps = [], []
    for w in workloads:
        best = min(heuristics, key=lambda p: norm[w][p])
        b, h, o = norm[w][best], harmonia[w], norm[w]["oracle"]
        if h / b - 1 > TARGET_BEHIND:
            behind.append((w, h / b - 1, best))
        if o < b and w not in beaten:
            gaps.append((b - h) / (b - o))
    best = min(heuristics, key=geo.get)
    geo_gap = (geo[best] - h_geo) / (geo[best] - geo["oracle"]) if geo["oracle"] < geo[best] else None
    return {"harmonia": h_geo, "prior": prior, "behind": behind, "gaps": gaps, "best": best,
            "geo_gap": geo_gap}


def report(name, t, n):
    prior = t["prior"]
    mean = sum(prior.values()) / len(prior) if prior else float("nan")
    print("  %s, %d workloads: harmonia %.3f (geomean of latency / Fast-Only)" % (name, n, t["harmonia"]))
    print("    1. over the prior set: mean %+.1f%% (target %+.0f%%): %s" % (
        100 * mean, 100 * TARGET_PRIOR, ", ".join("%s %+.1f%%" % (p, 100 * x) for p, x in prior.items())))
    worst = sorted(t["behind"], key=lambda x: -x[1])
    print("    2. more than %.0f%% behind the best non-learning policy on %d of %d workloads%s" % (
        100 * TARGET_BEHIND, len(worst), n,
        (": " + ", ".join("%s %+.0f%% (%s)" % (w, 100 * x, b) for w, x, b in worst)) if worst else ""))
    g = t["gaps"]
    print("    3. gap to the oracle closed (target %.0f%%): of the geomeans' gap from %s, %s; median over %d workloads "
          "of each one's gap from its best, %s" % (
              100 * TARGET_GAP, t["best"], "-" if t["geo_gap"] is None else "%.0f%%" % (100 * t["geo_gap"]),
              len(g), "%.0f%%" % (100 * median(g)) if g else "-"))


def guard_lines(path):
    """(trace, hss, the guard's mean latency in us) of each run in a file: scripts/guard_study.py's JSON
    lines, or a comparison's --output (hbl compare --policies ...,harmonia-guard: its harmonia-guard runs)."""
    try:
        with open(path) as f:
            text = f.read()
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None
        if isinstance(whole, dict) and "results" in whole:
            rows = [(r["trace"], r["hss"], r["avg_latency_us"]) for r in whole["results"]
                    if r["policy"] == "harmonia-guard"]
            if not rows:
                sys.exit("quality_targets: %s: a comparison without harmonia-guard runs" % path)
            return rows
        return [(r["trace"], r["hss"], r["guard_us"]) for r in (json.loads(x) for x in text.splitlines() if x.strip())]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("quality_targets: cannot read %s: %s" % (path, e))


def guard_runs(paths, s):
    """HSS -> workload -> the guard's latency / Fast-Only (mean over its seeds), from guard_lines(); a
    run's trace names the workload as the comparison's runs do (less a request range)."""
    label = {(r["hss"], r["trace"]): r["workload"] for r in s["results"]}
    fast = {(r["hss"], r["workload"]): r["avg_latency_us"] for r in s["results"] if r["policy"] == "fast-only"}
    runs = {}
    for path in paths:
        for trace, hss, us in guard_lines(path):
            w = label.get((hss, trace.split("@")[0]))
            if w is None:
                sys.exit("quality_targets: %s: %s on %s is not a workload of the comparison" % (path, trace, hss))
            runs.setdefault(hss, {}).setdefault(w, []).append(us / fast[(hss, w)])
    return {h: {w: sum(v) / len(v) for w, v in ws.items()} for h, ws in runs.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("held_out", help="hbl compare --output FILE of the held-out run (every policy)")
    ap.add_argument("--untrained", metavar="FILE", help="hbl compare --untrained --output FILE (harmonia)")
    ap.add_argument("--guard", metavar="FILE", nargs="+",
                    help="the guard on this comparison's workloads, in harmonia's place: scripts/guard_study.py's "
                         "JSON lines, or hbl compare --output FILE of a run with harmonia-guard")
    a = ap.parse_args(argv)
    s = load(a.held_out)
    guard = guard_runs(a.guard, s) if a.guard else {}
    u = load(a.untrained) if a.untrained else None
    wl, long_wl = s["workloads"], [w for w in s["workloads"] if w in set(s.get("long_workloads", []))]
    print("issue 26's targets from %s%s (%s); latency / Fast-Only; the best non-learning policy is the best of "
          "%d per workload" % (a.held_out, " and " + a.untrained if u else "", ", ".join(s["hss"]),
                              len(non_learning(s["policies"]))))
    for h in s["hss"]:
        norm = s["normalized_avg_latency"][h]
        beaten = {b["workload"] for b in s.get("beats_oracle", []) if b["hss"] == h}
        print("\nHSS %s%s" % (h, "  (the oracle is beaten on %s: no gap counted there)" % ", ".join(sorted(beaten))
                               if beaten else ""))
        runs = [("held-out", {w: norm[w]["harmonia"] for w in wl})]
        if u and h in u["normalized_avg_latency"]:
            un = u["normalized_avg_latency"][h]
            runs.append(("online from scratch", {w: un[w]["harmonia"] for w in wl if w in un}))
        if h in guard:
            runs.append(("held-out, the guard (results/diagnosis/guard.txt)", guard[h]))
        for proto, harm in runs:
            done = None
            for name, ws in (("100k+ requests", long_wl), ("every workload", wl)):
                ws = [w for w in ws if w in harm]
                if ws and ws != done:   # a run of the long workloads alone (the guard's) is reported once
                    report("%s, %s" % (proto, name), targets(norm, ws, s["policies"], harm, beaten), len(ws))
                done = ws
    return 0


if __name__ == "__main__":
    sys.exit(main())
