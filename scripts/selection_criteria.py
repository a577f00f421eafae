#!/usr/bin/env python3
"""results/pretrain/selection-criteria.txt's rule applied to scripts/seed_scores.py's JSON files.

For each HSS: S0 picks the lowest online-seed-1 geomean on the S0/S1 set, S1 the lowest mean over its
online seeds there, S2 the lowest mean on the S2 set; each pick's check geomean (mean and worst online
seed) is printed with every seed's, the single seeds' spread on the check, and the rule's verdict.

    scripts/selection_criteria.py --hss perf --val R.json --real A.json --check C.json [--hss cost ...]
"""
import argparse
import json
import math
import sys


def load(path):
    d = json.load(open(path))
    lat = {(lb, k, s): v for lb, k, s, v in d["latency"]}
    return d, lat


def per_online(path, traces=None, group=None):
    """{pretraining seed: [geomean per online seed]} over traces (default: all of the file's), for the
    pretraining seeds in group (default: all of the file's)."""
    d, lat = load(path)
    traces = traces or d["traces"]
    return {k: [math.exp(sum(math.log(lat[(t, k, s)] / d["fast_only"][t]) for t in traces) / len(traces))
                for s in range(1, d["online"] + 1)] for k in group or range(1, d["seeds"] + 1)}


def mean(x):
    return sum(x) / len(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hss", action="append", required=True)
    ap.add_argument("--val", action="append", required=True, help="seed_scores JSON on the S0/S1 set, per --hss")
    ap.add_argument("--real", action="append", required=True, help="seed_scores JSON on the S2 set, per --hss")
    ap.add_argument("--check", action="append", required=True, help="seed_scores JSON on the check, per --hss")
    ap.add_argument("--group", metavar="A-B", help="choose among pretraining seeds A..B only (default: all)")
    a = ap.parse_args()
    g = range(int(a.group.split("-")[0]), int(a.group.split("-")[1]) + 1) if a.group else None
    verdict = {}
    for h, val, real, check in zip(a.hss, a.val, a.real, a.check):
        v, r, c = per_online(val, group=g), per_online(real, group=g), per_online(check, group=g)
        d, _ = load(check)
        synth = [t for t in d["traces"] if t.startswith("synth:")]
        apps = [t for t in d["traces"] if not t.startswith("synth:")]
        cs, ca = per_online(check, synth, g), per_online(check, apps, g)
        picks = {"S0": min(v, key=lambda k: v[k][0]), "S1": min(v, key=lambda k: mean(v[k])),
                 "S2": min(r, key=lambda k: mean(r[k]))}
        print("HSS %s" % h)
        print("  seed  S0 (val, online 1)  S1 (val, mean 1-3)  S2 (real, mean 1-3)   check mean (min-max)        "
              "check synth / real")
        for k in sorted(c):
            print("  s%-3d  %18.4f  %18.4f  %19.4f   %10.4f (%.4f-%.4f)   %.4f / %.4f%s" % (
                k, v[k][0], mean(v[k]), mean(r[k]), mean(c[k]), min(c[k]), max(c[k]), mean(cs[k]), mean(ca[k]),
                "  <- " + ",".join(n for n in picks if picks[n] == k) if k in picks.values() else ""))
        means = [mean(c[k]) for k in c]
        print("  single seeds' spread on the check (max-min)/min: %.1f%%" % (100 * (max(means) / min(means) - 1)))
        s0 = picks["S0"]
        for n in ("S1", "S2"):
            k = picks[n]
            ok = mean(c[k]) < mean(c[s0]) and max(c[k]) <= max(c[s0])
            verdict.setdefault(n, []).append((ok, mean(c[k]) / mean(c[s0]) - 1))
            print("  %s picks seed %d%s: check %.4f vs S0's %.4f (%+.2f%%), worst %.4f vs %.4f: %s" % (
                n, k, " (the same as S0)" if k == s0 else "", mean(c[k]), mean(c[s0]),
                100 * (mean(c[k]) / mean(c[s0]) - 1), max(c[k]), max(c[s0]), "qualifies" if ok else "does not"))
    ok = {n: mean([g for _, g in x]) for n, x in verdict.items() if all(q for q, _ in x)}
    print("RULE: %s" % ("propose %s (mean check gain %.2f%%)" % (min(ok, key=ok.get), -100 * min(ok.values()))
                        if ok else "no criterion proposed: S0 stays"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
