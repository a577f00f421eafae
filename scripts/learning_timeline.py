#!/usr/bin/env python3
"""How fast does Harmonia learn?  Each long workload is replayed twice: once as a user would
(from the shipped pretrained agents, or from untrained ones), saving the agents at the end, and
once more from those final agents.  Closed-loop replay issues the same requests in the same
order, so windows of N requests line up, and the fast device fills alike: the second run is
the agents' final quality on the very same requests, and the ratio of the two runs' latency
per window is how far the learning agents still are from it.  Learning fast means: over the
first tenth of the requests, the first run is within 5% of the final agents (ratio <= 1.05).

    scripts/learning_timeline.py --output results/learning/learning.json --plot results/learning/learning.png > results/learning/learning.txt

--trace limits it to some workloads; --tenths adds the ratio over every tenth, per seed (results/learning/learndiag.txt).
"""
import argparse
import json
import os
import sys
import tempfile

from hbl.experiments.compare import LONG, default_traces
from hbl.pool import run_all
from hbl.sim import simulate

EVERY = 10_000


def _run(job):
    trace, hss, policy, seed, untrained = job
    with tempfile.TemporaryDirectory(prefix="hbl-learning-") as d:
        final = os.path.join(d, "final.agent")
        first = simulate(trace, hss=hss, policy=policy, seed=seed, timeline=True, timeline_every=EVERY,
                         load_agents=False if untrained else None, save_agents=final)
        again = simulate(trace, hss=hss, policy=policy, seed=seed, timeline=True, timeline_every=EVERY,
                         load_agents=final)
    tl = lambda r: [(w["requests"], w["avg_latency_us"]) for w in r["timeline"]]
    return job, first["requests"], tl(first), tl(again)


def _sums(tl, lo, hi):
    """Sum of latencies of the windows whose end falls in (lo, hi] (a window's mean x its requests)."""
    total, prev = 0.0, 0
    for end, avg in tl:
        if lo < end <= hi:
            total += avg * (end - prev)
        prev = end
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hss", default="perf,cost")
    ap.add_argument("--policy", default="harmonia")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--output", help="JSON with every timeline")
    ap.add_argument("--plot", help="PNG of the normalized latency per window")
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--trace", action="append", help="only these workloads (repeatable; default: every long one)")
    ap.add_argument("--tenths", action="store_true",
                    help="also the ratio over each tenth of the requests, per seed (when the gap closes)")
    a = ap.parse_args()
    hss_list = a.hss.split(",")
    traces = a.trace or default_traces()   # those shorter than LONG requests are left out below
    jobs = [(t, h, a.policy, s, u) for t in traces for h in hss_list for s in range(1, a.seeds + 1)
            for u in (False, True)]
    runs = {job: (n, tl, final) for job, n, tl, final in run_all(_run, jobs, a.jobs, lambda r: "replay")}
    rows, curves = [], {}
    for t in traces:
        for h in hss_list:
            for u in (False, True):
                seeds = {s: runs[(t, h, a.policy, s, u)] for s in range(1, a.seeds + 1)}
                n = seeds[1][0]
                if n < LONG:
                    continue
                ratios, tenths = [], []
                for s, (_, tl, final) in seeds.items():
                    tenths.append([_sums(tl, n * k // 10, n * (k + 1) // 10) / _sums(final, n * k // 10, n * (k + 1) // 10)
                                   for k in range(10)])
                    ratios.append(tenths[-1][0])    # the first tenth
                    curves[(t, h, u, s)] = [(end, avg / b) for (end, avg), (_, b) in zip(tl, final)]
                rows.append(dict(trace=t, hss=h, agents="untrained" if u else "pretrained", requests=n,
                                 first_tenth_ratio=max(ratios), ratio_min=min(ratios),
                                 within_5pct=max(ratios) <= 1.05, tenths=tenths))
    print("%s over the first tenth of each long workload: latency as a user runs it / latency of the same "
          "agents after the whole workload, on the same requests (closed loop, QD1; seeds 1-%d, worst and best)"
          % (a.policy, a.seeds))
    print("%-30s %-5s %-10s %9s %9s  %s" % ("workload", "hss", "agents", "worst", "best", "within 5%"))
    for r in rows:
        print("%-30s %-5s %-10s %9.3f %9.3f  %s" % (r["trace"][:30], r["hss"], r["agents"], r["first_tenth_ratio"],
                                                   r["ratio_min"], "yes" if r["within_5pct"] else "no"))
    if a.tenths:
        print("\nthe same ratio over each tenth of the requests (1st .. 10th), per seed")
        for r in rows:
            for s, t in enumerate(r["tenths"], 1):
                print("%-30s %-5s %-10s s%d  %s" % (r["trace"][:30], r["hss"], r["agents"], s,
                                                    " ".join("%.3f" % v for v in t)))
    for agents in ("pretrained", "untrained"):
        sel = [r for r in rows if r["agents"] == agents]
        print("%s: %d of %d workload x HSS within 5%% of the final agents over the first tenth, every seed" % (
            agents, sum(r["within_5pct"] for r in sel), len(sel)))
    if a.output:
        with open(a.output, "w") as f:
            json.dump(dict(rows=rows, curves={"|".join(map(str, k)): v for k, v in curves.items()}), f)
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        keys = sorted({(t, h) for t, h, _, _ in curves})
        cols = 4
        fig, axes = plt.subplots((len(keys) + cols - 1) // cols, cols, figsize=(4 * cols, 2.6 * ((len(keys) + cols - 1) // cols)),
                                 squeeze=False)
        for ax, (t, h) in zip(axes.flat, keys):
            for u, color in ((False, "tab:blue"), (True, "tab:orange")):
                for s in range(1, a.seeds + 1):
                    c = curves.get((t, h, u, s))
                    if c:
                        ax.plot([e / 1e3 for e, _ in c], [v for _, v in c], color=color, lw=0.8, alpha=0.8,
                                label=("untrained" if u else "pretrained") if s == 1 else None)
            ax.set_title("%s, %s" % (t.split(":", 1)[1][:28], h), fontsize=8)
            ax.tick_params(labelsize=7)
        for ax in axes.flat[len(keys):]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=7)
        fig.supxlabel("requests (thousands)")
        fig.supylabel("latency / final agents' per %d-request window" % EVERY)
        fig.tight_layout()
        fig.savefig(a.plot, dpi=90)
    return 0


if __name__ == "__main__":
    sys.exit(main())
