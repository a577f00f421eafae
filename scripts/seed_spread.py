#!/usr/bin/env python3
"""Is the shipping procedure seed-robust? Per-seed spread and best-of-G selections, checked apart.

Runs every pretraining seed's agents of DIR (POLICY-HSS-sK.agent, K = 1..--seeds, as `hbl pretrain
--out DIR` writes them) on two sets of validation traces: the training families with generator
seed 2 (what `hbl pretrain --select` chooses on) and with generator seed 3 (used for no choice).
Then splits the seeds into disjoint groups of --group (1-5, 6-10, ...), takes each group's best on
the seed-2 traces as `--select` does (online seed 1), and prints, per HSS: every seed's geomean of
average latency / Fast-Only on both, the spread (max / min - 1) of single seeds, and the spread of
the selections' figures on the seed-3 traces (mean over online seeds 1..--online-seeds, min-max).
No evaluation workload anywhere.  --resample FILE reads such a report back and gives the best of
G over every G-subset of its seeds instead of the disjoint groups alone (no simulation).

    scripts/seed_spread.py --dir DIR --seeds 10 --group 5 --hss perf,cost > report.txt
    scripts/seed_spread.py --resample report.txt --group 5
"""
import argparse
import itertools
import math
import random
import re
import sys

from hbl.experiments.tables import geomean
from hbl.sim import pretrained
from hbl.pool import run_all
from hbl.sim import simulate


def traces(trace_seed, requests):
    return [t.replace("seed=2", "seed=%d" % trace_seed) for t in pretrained.validation_traces(requests)]


def _run(job):
    key, trace, hss, policy, agents, seed = job
    r = simulate(trace, hss=hss, policy=policy, seed=seed, load_agents=agents)
    return key, trace, r["avg_latency_us"]


def geomeans(jobs, jobs_n):
    """{key: geomean of latency / Fast-Only} for jobs whose key is (hss, trace seed, ...), the
    Fast-Only runs keyed (hss, trace seed, 'fast-only')."""
    lat = {}
    for key, t, v in run_all(_run, jobs, jobs_n, lambda r: "seed-spread"):
        lat.setdefault(key, {})[t] = v
    out = {}
    for key, per in lat.items():
        base = lat.get(key[:2] + ("fast-only",))
        if base is not None and key[2] != "fast-only":
            out[key] = geomean([per[t] / base[t] for t in per])
    return out


def spread(values):
    return max(values) / min(values) - 1


def groups_of(seeds, size):
    return [list(range(g, g + size)) for g in range(1, seeds - size + 2, size)]


def best_of(group, select_fig):
    """The seed `hbl pretrain --select` would ship from `group`: the lowest seed-2 figure."""
    return min(group, key=lambda s: select_fig[s])


def resample(path, group, samples=200_000):
    """Best of `group` over every subset of the seeds of a report (at most `samples`, else random ones), per
    HSS: chosen on the seed-2 column, its figure on the check column (online seed 1)."""
    text = open(path).read()
    for part in text.split("\nHSS ")[1:]:
        hss = part.split("\n", 1)[0].strip()
        rows = {int(m[0]): (float(m[1]), float(m[2]))
                for m in re.findall(r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s*$", part, re.M)}
        seeds, rng = sorted(rows), random.Random(1)
        if math.comb(len(seeds), group) <= samples:
            subsets = itertools.combinations(seeds, group)
        else:
            subsets = (rng.sample(seeds, group) for _ in range(samples))
        vals = sorted(rows[min(c, key=lambda s: rows[s][0])][1] for c in subsets)
        n = len(vals)
        pairs = [(vals[rng.randrange(n)], vals[rng.randrange(n)]) for _ in range(samples)]
        apart = sum(max(x, y) / min(x, y) - 1 > 0.03 for x, y in pairs) / len(pairs)
        p95 = vals[min(n - 1, int(0.95 * n))]
        print("%s best of %d over %d subsets of %d seeds: min %.3f median %.3f p95 %.3f max %.3f; p95 / min - 1 = "
              "%.1f%%; two selections more than 3%% apart: %.1f%% of pairs"
              % (hss, group, n, len(seeds), vals[0], vals[n // 2], p95, vals[-1], 100 * (p95 / vals[0] - 1),
                 100 * apart))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", help="the per-seed agents (hbl pretrain --out DIR)")
    ap.add_argument("--resample", metavar="FILE", help="a report of this script: best of --group over every subset")
    ap.add_argument("--policy", default="harmonia")
    ap.add_argument("--hss", default="perf,cost")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--group", type=int, default=pretrained.SELECT_SEEDS,
                    help="seeds per selection (default %d, as the shipped agents)" % pretrained.SELECT_SEEDS)
    ap.add_argument("--online-seeds", type=int, default=3,
                    help="online seeds the selections are checked with on the seed-3 traces (default 3)")
    ap.add_argument("--check-seed", type=int, default=3, help="generator seed of the check traces (default 3)")
    ap.add_argument("--requests", type=int, default=pretrained.VALIDATION_REQUESTS)
    ap.add_argument("--jobs", type=int, default=None)
    a = ap.parse_args()
    if a.resample:
        resample(a.resample, a.group)
        return 0
    if not a.dir:
        ap.error("--dir DIR or --resample FILE is required")
    if a.check_seed < 3:
        ap.error("--check-seed must be 3 or more (1 is trained on, 2 is chosen on)")
    if a.group < 1 or a.seeds < a.group:
        ap.error("--seeds must hold at least one --group")
    hss_list = a.hss.split(",")
    sets = {2: traces(2, a.requests), a.check_seed: traces(a.check_seed, a.requests)}
    agent = lambda h, s: pretrained.agent_file(a.policy, h, s, a.dir)
    missing = [str(agent(h, s)) for h in hss_list for s in range(1, a.seeds + 1) if not agent(h, s).is_file()]
    if missing:
        ap.error("no agents: %s" % ", ".join(missing[:3]))
    jobs = [((h, ts, "fast-only"), t, h, "fast-only", False, 1) for h in hss_list for ts, tt in sets.items()
            for t in tt]
    jobs += [((h, ts, s, 1), t, h, a.policy, agent(h, s), 1) for h in hss_list for ts, tt in sets.items()
             for t in tt for s in range(1, a.seeds + 1)]
    g = geomeans(jobs, a.jobs)
    groups = groups_of(a.seeds, a.group)
    chosen = {h: [best_of(gr, {s: g[(h, 2, s, 1)] for s in gr}) for gr in groups] for h in hss_list}
    more = [((h, a.check_seed, s, o), t, h, a.policy, agent(h, s), o) for h in hss_list
            for s in sorted(set(chosen[h])) for o in range(2, a.online_seeds + 1) for t in sets[a.check_seed]]
    more += [((h, a.check_seed, "fast-only"), t, h, "fast-only", False, 1) for h in hss_list
             for t in sets[a.check_seed]]
    g.update(geomeans(more, a.jobs))
    c = a.check_seed
    print("%s, %d pretraining seeds in %s; validation traces: the training families, generator seeds 2 (chosen on)"
          " and %d (checked on), %d requests each; geomean of average latency / Fast-Only"
          % (a.policy, a.seeds, a.dir, c, a.requests))
    for h in hss_list:
        print("\nHSS %s" % h)
        print("  seed   seed-2 traces   seed-%d traces   (online seed 1)" % c)
        for s in range(1, a.seeds + 1):
            print("  %4d   %13.3f   %13.3f" % (s, g[(h, 2, s, 1)], g[(h, c, s, 1)]))
        for ts in (2, c):
            one = [g[(h, ts, s, 1)] for s in range(1, a.seeds + 1)]
            print("  single seeds on seed-%d traces: mean %.3f, %.3f-%.3f, spread %.1f%%"
                  % (ts, sum(one) / len(one), min(one), max(one), 100 * spread(one)))
        for gr in groups:
            vals = [g[(h, c, s, 1)] for s in gr]
            print("    seeds %d-%d: spread %.1f%% (seed-%d traces)" % (gr[0], gr[-1], 100 * spread(vals), c))
        figs = []
        for gr, s in zip(groups, chosen[h]):
            on = [g[(h, c, s, o)] for o in range(1, a.online_seeds + 1)]
            figs.append(sum(on) / len(on))
            print("  best of seeds %d-%d on seed-2 traces: seed %d (%.3f); on seed-%d traces %.3f (%.3f-%.3f,"
                  " online seeds 1-%d)" % (gr[0], gr[-1], s, g[(h, 2, s, 1)], c, figs[-1], min(on), max(on),
                                           a.online_seeds))
        if len(figs) > 1:
            print("  the %d best-of-%d selections on seed-%d traces: %.3f-%.3f, spread %.1f%%"
                  % (len(figs), a.group, c, min(figs), max(figs), 100 * spread(figs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
