#!/usr/bin/env python3
"""Issue 26's ablation on the evaluation suite: what each lever adds to a learning policy, read off
saved comparisons (hbl compare --output FILE), one per row: the shipped agents, single pretraining
seeds (hbl compare --agents DIR), a recipe with a lever added, no pretraining (--untrained), ...
Per HSS and group of workloads: those of 100k+ requests by hbl compare's kind (full captures,
synthetic) and together, apart from the short slices (all under 100k requests), the geometric mean of average latency / Fast-Only of the policy in each row (the mean over seeds, and
the min-max of the per-seed geomeans), against the best non-learning policy and the oracle of the
--baselines run (the first row's by default; they do not learn, so every run gives them alike).

    scripts/ablation.py shipped=shipped.json single=base.json untrained=untrained.json [--per-workload] [--hss perf,cost]
"""
import argparse
import json
import sys
import textwrap

from hbl.experiments.compare import kind_of
from protocols import NOT_BASELINES, cell, mean_geo, normalized, per_seed


def best_baseline(norm, h, wl):
    pols = {k[2] for k in norm if k[0] == h and k[2] not in NOT_BASELINES}
    return min(pols, key=lambda p: mean_geo(norm, h, wl, p)) if pols else None


GROUPS = (("full captures, 100k+ requests", lambda w, long: long and kind_of(w) == "full captures"),
          ("synthetic, 100k+ requests", lambda w, long: long and kind_of(w) == "synthetic"),
          ("all of 100k+ requests", lambda w, long: long),
          ("short slices (under 100k requests)", lambda w, long: not long))


def table(rows, base, size, policy, h, kind, member, per_workload, seeds):
    wl = sorted({k[1] for k in base if k[0] == h and member(k[1], size[k[1]])})
    if not wl:
        return
    best = best_baseline(base, h, wl)
    ref, orc = mean_geo(base, h, wl, best), mean_geo(base, h, wl, "oracle")
    print(textwrap.fill("HSS %s, %s (%d): %s" % (h, kind, len(wl), ", ".join(wl)), 100, subsequent_indent="    "))
    print("  %-40s %-38s %9s %6s" % ("%s from" % policy, "latency / Fast-Only (min-max)", "vs " + best,
                                     "gap"))
    for label, norm in rows:
        if (h, wl[0], policy) not in norm:
            continue
        g = mean_geo(norm, h, wl, policy)
        gap = "%+5.0f%%" % (100 * (ref - g) / (ref - orc)) if ref > orc else "-"
        print("  %-40s %-38s %+8.1f%% %6s" % (label, cell(norm, h, wl, policy), 100 * (g / ref - 1), gap))
        if seeds:
            print("  %-40s seeds: %s" % ("", " ".join("%.3f" % v for v in per_seed(norm, h, wl, policy))))
    print("  %-40s %-38s %9s" % (best + " (best non-learning)", "%.3f" % ref, "-"))
    print("  %-40s %-38s %+8.1f%%" % ("oracle", "%.3f" % orc, 100 * (orc / ref - 1)))
    if per_workload:
        print("  per workload (mean over seeds):")
        print("    %-34s %s" % ("", " ".join("%9s" % w[:9] for w in wl)))
        for label, norm in rows:
            if (h, wl[0], policy) in norm:
                print("    %-34s %s" % (label[:34], " ".join(
                    "%9.3f" % (sum(norm[(h, w, policy)].values()) / len(norm[(h, w, policy)])) for w in wl)))
        for p in (best, "oracle"):
            print("    %-34s %s" % (p, " ".join("%9.3f" % base[(h, w, p)][1] for w in wl)))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("row", nargs="+", metavar="LABEL=FILE", help="a row: its label and a saved comparison")
    ap.add_argument("--baselines", metavar="FILE", help="the comparison with the non-learning policies and the "
                    "oracle (default: the first row's)")
    ap.add_argument("--policy", default="harmonia")
    ap.add_argument("--per-workload", action="store_true", help="also each row's figure per workload")
    ap.add_argument("--per-seed", action="store_true", help="also each row's geomean per seed (seed 1, 2, ...)")
    ap.add_argument("--hss", metavar="LIST", help="comma-separated HSS presets to print (default: every one of the "
                    "baselines' run)")
    a = ap.parse_args()
    rows = []
    for r in a.row:
        label, _, path = r.rpartition("=")
        if not label:
            ap.error("%s: give LABEL=FILE" % r)
        try:
            rows.append((label, normalized(json.load(open(path))["results"])[0]))
        except (OSError, ValueError, KeyError) as exc:
            ap.error("%s: not a comparison saved by hbl compare --output (%s)" % (path, exc))
    base, size = normalized(json.load(open(a.baselines or a.row[0].rpartition("=")[2]))["results"])
    if "oracle" not in {k[2] for k in base}:
        ap.error("the baselines' run has no oracle (run it with the non-learning policies and the oracle)")
    hss = sorted({k[0] for k in base}, key=["perf", "cost", "tri", "quad"].index)
    if a.hss:
        wanted = [h.strip() for h in a.hss.split(",") if h.strip()]
        missing = [h for h in wanted if h not in hss]
        if missing or not wanted:
            ap.error("--hss %s: not in the baselines' run (it has %s)" % (a.hss, ", ".join(hss)))
        hss = [h for h in hss if h in wanted]
    print(textwrap.fill("geomean of average latency / Fast-Only, lower is better; a row: the mean over its seeds "
                        "(min-max of the per-seed geomeans); vs: against the best non-learning policy (+ = "
                        "slower); gap: share of the gap from it to the oracle closed", 100) + "\n")
    for h in hss:
        for kind, member in GROUPS:
            table(rows, base, size, a.policy, h, kind, member, a.per_workload, a.per_seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
