#!/usr/bin/env python3
"""What harmonia's reuse_feature=1 agents see and do on the regimes validation set (results/pretrain/reuse.txt).

Diagnostics only, deciding nothing; harmonia, online seed 1, agents DIR/harmonia-HSS.agent of 9 features.
  scripts/reuse_diag.py behave DIR [--trace-seed 2]   per trace: latency, fast write share, promotions, read
                                                      hit ratio and sync evictions of the shipped agents and DIR's
  scripts/reuse_diag.py bins DIR [--trace-seed 2]     per trace (and the training traces): the % of the placement
                                                      agent's remembered states in each reuse bin, every 10,000 requests
      [--train TRACE ...] [--hss perf,cost]           bins: these training traces instead of the shipped recipes' 7
                                                      (results/pretrain/reuse8.txt), only these HSS
      [--train-only]                                  bins: the training traces alone, not the regimes set (to pick
                                                      training traces without seeing the validation traces' bins)
  scripts/reuse_diag.py forced DIR [--trace-seed 2]   per regime trace: the share of the last 50,000 requests' remembered
                                                      write states whose greedy action is the fastest device, with the
                                                      reuse bin as seen and forced to each bin 0-7
"""
import argparse
import sys
import tempfile

import numpy as np

from hbl.sim import pretrained, simulate
from hbl.sim.simulator import Simulator

TRAINING = ["synth:%s:requests=300000" % f for f in ("src", "usr", "mixed", "phases", "zipf", "burst", "log")]
REUSE = 8   # the reuse bin's index in a 9-feature state (HBL_F_REUSE)
HSS = ["perf", "cost"]


def sampling(every=10_000):
    """Feed in steps of `every` requests, keeping (placement agent, its buffer's states) after each."""
    seen, orig = [], Simulator.feed

    def feed(self, chunk):
        for i in range(0, len(chunk), every):
            orig(self, chunk[i:i + every])
            ag = self.agents()[0]
            b = ag.buffer_states()
            if len(b):
                seen.append((ag, b.copy()))
    Simulator.feed = feed
    return seen


def behave(named, directory):
    for hss in ("perf", "cost"):
        for label, t in named:
            row = []
            for who, path in (("shipped", pretrained.selected_file("harmonia", hss)),
                              ("reuse", pretrained.selected_file("harmonia", hss, directory))):
                r = simulate(t, hss=hss, policy="harmonia", seed=1, load_agents=str(path))
                row.append("%s lat %8.2f fws %.3f prom %4d hit %.3f sync %6d" % (
                    who, r["avg_latency_us"], r["fast_write_share"], r["promotions"], r["read_hit_ratio"],
                    r["sync_evictions"]))
            print("%-4s %-32s | %s" % (hss, label[:32], " | ".join(row)), flush=True)


def bins(named, directory, training=TRAINING):
    seen = sampling()
    for hss in HSS:
        for label, t in named + [("train " + t, t) for t in training]:
            seen.clear()
            r = simulate(t, hss=hss, policy="harmonia", seed=1,
                         load_agents=str(pretrained.selected_file("harmonia", hss, directory)))
            h = np.sum([np.bincount(s[:, REUSE], minlength=8)[:8] for _, s in seen], axis=0)
            print("%-4s %-40s lat %9.2f  bins%% %s" % (hss, label[:40], r["avg_latency_us"],
                  " ".join("%3.0f" % x for x in 100 * h / max(1, h.sum()))), flush=True)


def forced(named, directory):
    seen = sampling()
    for hss in ("perf", "cost"):
        for label, t in named:
            if not any(k in label for k in ("log", "burst", "redis", "file")):
                continue
            seen.clear()
            simulate(t, hss=hss, policy="harmonia", seed=1,
                     load_agents=str(pretrained.selected_file("harmonia", hss, directory)))
            fast = {b: [] for b in ["seen"] + list(range(8))}
            for ag, states in seen[-5:]:     # the agent as it is after the run's last 50,000 requests
                for s in states:
                    fast["seen"].append(ag.greedy(s) == 0)
                    for b in range(8):
                        x = s.copy()
                        x[REUSE] = b
                        fast[b].append(ag.greedy(x) == 0)
            print("%-4s %-36s fast share: seen %.2f | bin %s" % (hss, label[:36], np.mean(fast["seen"]),
                  " ".join("%d:%.2f" % (b, np.mean(fast[b])) for b in range(8))), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("behave", "bins", "forced"))
    ap.add_argument("directory", help="hbl pretrain --select's output (harmonia-perf.agent, harmonia-cost.agent)")
    ap.add_argument("--trace-seed", type=int, default=2)
    ap.add_argument("--train", action="append", default=[], metavar="TRACE",
                    help="bins: show these training traces instead of the shipped recipes' 7 (repeatable)")
    ap.add_argument("--hss", default="perf,cost", help="bins: the HSS to show (perf,cost)")
    ap.add_argument("--train-only", action="store_true",
                    help="bins: the training traces alone, without the regimes validation traces")
    a = ap.parse_args()
    HSS[:] = a.hss.split(",")
    with tempfile.TemporaryDirectory(prefix="hbl-reuse-") as work:
        only = a.what == "bins" and a.train_only
        named = [] if only else pretrained.validation_set("regimes", 200_000, a.trace_seed, work)
        if a.what == "bins":
            bins(named, a.directory, a.train or TRAINING)
        else:
            {"behave": behave, "forced": forced}[a.what](named, a.directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
