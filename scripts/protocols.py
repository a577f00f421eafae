#!/usr/bin/env python3
"""Issue 26, item 5: the two protocols side by side, read off two saved comparisons
(hbl compare --output FILE): (a) held-out, the shipped pretrained agents on the evaluation
suite; (b) the papers' protocol, every workload learned online from scratch (--untrained).
Per HSS, the long workloads (the full captures, cut or not, and the synthetic families: those
hbl compare runs at 100k+ requests) apart from the short slices (bundled:, apps:): the geometric mean of
average latency / Fast-Only of harmonia and sibyl (mean over seeds, min-max of the per-seed
geomeans), of the two best non-learning policies (from the held-out run) and of the oracle.

    scripts/protocols.py HELD_OUT.json UNTRAINED.json
"""
import json
import sys

from hbl.experiments.tables import LEARNING, REFERENCES, geomean as geo

LONG = 100_000
LEARNED = ("harmonia", "sibyl")
NOT_BASELINES = LEARNING | REFERENCES      # the tables' own rule for "non-learning policy"


def is_long(run):
    """A full capture (workload:NAME, however it was cut) or a trace of 100k+ requests."""
    return run["trace"].startswith("workload:") or run["requests"] >= LONG


def normalized(runs):
    """{(hss, workload, policy): {seed: latency / Fast-Only}} and {workload: long or not}."""
    base = {(r["hss"], r["workload"]): r["avg_latency_us"] for r in runs if r["policy"] == "fast-only"}
    out, size = {}, {}
    for r in runs:
        size[r["workload"]] = is_long(r)
        out.setdefault((r["hss"], r["workload"], r["policy"]), {})[r.get("seed", 1)] = (
            r["avg_latency_us"] / base[(r["hss"], r["workload"])])
    return out, size


def mean_geo(norm, h, wl, p):
    """The geomean over wl of the mean over seeds per workload."""
    return geo([sum(norm[(h, w, p)].values()) / len(norm[(h, w, p)]) for w in wl])


def per_seed(norm, h, wl, p):
    """Each seed's geomean over wl, in seed order (the seeds every workload has)."""
    runs = [norm[(h, w, p)] for w in wl]
    return [geo([s[k] for s in runs]) for k in sorted(set.intersection(*(set(s) for s in runs)))]


def cell(norm, h, wl, p):
    """'mean (min-max)' of the geomean over wl: the mean over seeds per workload, and per seed."""
    mean, per = mean_geo(norm, h, wl, p), per_seed(norm, h, wl, p)
    return "%.3f" % mean if len(per) < 2 else "%.3f (%.3f-%.3f, %d seeds)" % (mean, min(per), max(per), len(per))


def main(held_path, untrained_path):
    held, size = normalized(json.load(open(held_path))["results"])
    fresh, _ = normalized(json.load(open(untrained_path))["results"])
    hss = sorted({k[0] for k in held}, key=["perf", "cost", "tri", "quad"].index)
    for h in hss:
        wl_all = sorted({k[1] for k in held if k[0] == h})
        for scope, wl in (("long workloads", [w for w in wl_all if size[w]]),
                          ("short slices", [w for w in wl_all if not size[w]])):
            if not wl:
                continue
            pols = {k[2] for k in held if k[0] == h}
            base = sorted((p for p in pols if p not in NOT_BASELINES),
                          key=lambda p: geo([held[(h, w, p)][1] for w in wl]))[:2]
            print("HSS %s, %s (%d): %s" % (h, scope, len(wl), ", ".join(wl)))
            print("  geomean of latency / Fast-Only, lower is better")
            for p in LEARNED:
                a, b = cell(held, h, wl, p), (cell(fresh, h, wl, p) if (h, wl[0], p) in fresh else "-")
                print("  %-10s (a) held-out, pretrained: %-30s (b) online from scratch: %s" % (p, a, b))
            for p in base:
                print("  %-10s %s (best non-learning)" % (p, cell(held, h, wl, p)))
            print("  %-10s %s" % ("oracle", cell(held, h, wl, "oracle")))
            best = geo([sum(held[(h, w, base[0])].values()) for w in wl])
            for p in LEARNED:
                vs = ["(%s) %+.1f%%" % (k, 100 * (geo([sum(d[(h, w, p)].values()) / len(d[(h, w, p)]) for w in wl])
                                                  / best - 1))
                      for k, d in (("a", held), ("b", fresh)) if (h, wl[0], p) in d]
                print("  %s against %s (+ = slower): %s" % (p, base[0], ", ".join(vs)))
            print()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
