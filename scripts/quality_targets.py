#!/usr/bin/env python3
"""Issue 13's targets, read off a saved comparison (hbl compare --output FILE):
Harmonia against the papers' prior set and against the production baselines, per HSS,
Sibyl against the rest of the prior set, and the workloads where Harmonia is more than 3%
slower than the best production baseline.

    scripts/quality_targets.py results/quality/quality.json > results/quality/targets.txt
"""
import json
import math
import sys

PRIOR = ("cde", "hps", "archivist", "rnn-hss", "sibyl")         # the papers' prior set
PRODUCTION = ("lru", "smq", "nhit", "seqcutoff", "arc", "lirs", "s3fifo", "wtinylfu")  # production and cache baselines


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main(path):
    s = json.load(open(path))
    norm, wl = s["normalized_avg_latency"], s["workloads"]
    print("from %s (%s); normalized = average latency / Fast-Only, geometric mean over the %d workloads"
          % (path, ", ".join(s["hss"]), len(wl)))
    for h in s["hss"]:
        n = norm[h]
        g = {p: geo([n[w][p] for w in wl]) for p in s["policies"]}
        harm, oracle = g["harmonia"], g["oracle"]
        prior = min(PRIOR, key=lambda p: g[p])
        prod = min(PRODUCTION + ("cde", "hps"), key=lambda p: g[p])
        print("\nHSS %s" % h)
        print("  harmonia %.3f; best of the prior set %s %.3f (harmonia %+.1f%%); best baseline %s %.3f (%+.1f%%); "
              "oracle %.3f" % (harm, prior, g[prior], 100 * (g[prior] / harm - 1), prod, g[prod],
                               100 * (g[prod] / harm - 1), oracle))
        print("  gap between the best baseline and the oracle closed by harmonia (geomeans): %.0f%%"
              % (100 * (g[prod] - harm) / (g[prod] - oracle)))
        worse = [(w, n[w]["harmonia"] / min(n[w][p] for p in PRODUCTION) - 1) for w in wl]
        worse = [(w, x) for w, x in worse if x > 0.03]
        print("  workloads where harmonia is > 3%% slower than the best of %s: %d of %d%s" % (
            "/".join(PRODUCTION), len(worse), len(wl),
            (": " + ", ".join("%s %+.0f%%" % (w, 100 * x) for w, x in sorted(worse, key=lambda t: -t[1])))
            if worse else ""))
        rest = [p for p in PRIOR if p != "sibyl"]
        print("  sibyl %.3f against %s" % (g["sibyl"], ", ".join("%s %.3f" % (p, g[p]) for p in rest)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "results/quality/quality.json"))
