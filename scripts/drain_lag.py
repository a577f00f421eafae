#!/usr/bin/env python3
"""Where in time the synchronous drains a flipped group of promotions changes happen
(results/diagnosis/waits.txt): the groups of scripts/credit_check.py's sets (same seeds), each
flipped, and per round (1000 requests) the pages drained without the group - with it, summed by the
lag from the last flipped round before it (10: 10 rounds or more).

    .venv/bin/python scripts/drain_lag.py hps perf synth:usr:requests=200000,seed=2
"""
import collections
import os
import random
import sys

import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import credit_check as cc
from hbl.core import ffi, lib
from hbl.devices import load_hss
from hbl.sim import Simulator

def drains(policy, cfg, caps, data, flips=()):
    sim = Simulator(cfg, policy, caps)
    lib.hbl_sim_diag_start(sim.sim)
    for f in flips:
        lib.hbl_sim_diag_flip(sim.sim, f[0], f[1], f[2])
    sim.feed(data)
    n = lib.hbl_sim_diag_drains(sim.sim, ffi.NULL, 0)
    out = ffi.new("double[]", max(n, 1))
    lib.hbl_sim_diag_drains(sim.sim, out, n)
    return np.array([out[i] for i in range(n)] + [0.0] * (len(data) // 1000 + 2 - n))

if len(sys.argv) != 4 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip(), file=sys.stdout if sys.argv[1:2] in (["-h"], ["--help"]) else sys.stderr)
    sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
policy, hss, trace = sys.argv[1:4]
cfg = load_hss(hss)
data, fp = cc.load(trace)
caps = cfg.capacity_pages(fp, 4096)
n_req = len(data)
base = cc.Run(policy, cfg, caps, data)
made = [(r, p) for r, p, f, t in base.moves if t == 0 and f > 0 and r >= n_req // 10]
b = drains(policy, cfg, caps, data)
for rep in range(3):
    rng = random.Random(1 * 1000 + rep)
    frac = {"hps": 0.25, "lru": 0.02}[policy]
    prom = rng.sample(made, min(len(made), max(1, int(frac * len(made))), 2000))
    rounds = sorted({r for r, _ in prom})
    cold = [(r, cc.COLD - j) for r in rng.sample(rounds, min(len(rounds), 200)) for j in range(cc.NCOLD)]
    one = cc.Run(policy, cfg, caps, data, judge=prom + cold)
    space, _ = cc.space_of(one)
    groups = collections.defaultdict(list)
    for d in prom:
        c = one.credits.get(d)
        if c and not c["ended"] and c["src"] > 0:
            groups[cc.group_of(c, space)].append(d)
    for g, ds in sorted(groups.items()):
        w = drains(policy, cfg, caps, data, flips=[(r, p, -1) for r, p in ds])
        diff = w - b[:len(w)] if len(w) <= len(b) else w[:len(b)] - b
        rr = np.array(sorted({r // 1000 for r, _ in ds}))
        lag = collections.Counter()
        for i, v in enumerate(diff):
            if v == 0: continue
            k = np.searchsorted(rr, i, side="right") - 1
            lag[min(i - rr[k], 10) if k >= 0 else -1] += v
        print(rep, g, len(ds), "Δdrained pages %.0f (per decision %.1f)" % (diff.sum(), diff.sum() / len(ds)),
              "rounds touched %d of %d; by lag from the last flipped round (0 = that round; 10 = 10+; -1 before any):" % ((diff != 0).sum(), len(diff)),
              {int(a): float(b) for a, b in sorted(lag.items())})
