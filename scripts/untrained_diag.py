#!/usr/bin/env python3
"""What an untrained harmonia does over time, seed by seed (issue 26: `hbl compare --untrained`).

    .venv/bin/python scripts/untrained_diag.py --trace workload:redis-aof@500000-600000 --hss cost \
        --seeds 3 [--windows 10] [--param NAME=VALUE ...]

One run per seed from random weights (`--agent none`), fed in --windows equal parts; per part:
  x FO     mean latency of the part / Fast-Only's over the same part (lower is better)
  fw       written pages placed on the fastest device
  pl f/s   the placement agent's decisions to the fastest / a slower device (explorations included)
  expl     its explorations
  steps    its training steps so far
  rew      its reward EWMA (t_ref / latency, floored at 0)
  bufF     share of the write states in its experience buffer whose greedy action is the fastest device
  Qf Qs    mean over those states of Q(fastest), Q(slowest) (the int16 deciding network's values)
  rf rs    mean reward of the buffered write decisions to the fastest / slowest device
  prom/ev  promotions / evictions (all moves down, forced ones included) in the part
  mg       the migration agent's decisions (candidates scored) in the part
Row "init": the same seed's untrained network on part 0's buffered write states (where it starts).
Only training workloads (hbl/trace/split.py) are accepted.
"""
import argparse
import sys

import numpy as np

from hbl import record
from hbl.devices import load_hss
from hbl.sim import Simulator, footprint_pages
from hbl.trace import open_trace
from hbl.trace.split import families, TRAINING


def counters(sim):
    st = sim.stats()
    return dict(requests=st.requests, lat=st.latency_sum_ns, wpages=st.write_page_accesses,
                fast_w=st.fast_page_writes, promotions=st.promotions, evictions=st.evictions)


def buffer_view(agent, ndev, judge=None):
    """Over the buffer's write states: share whose greedy action is the fastest device, mean Q(fast),
    mean Q(slowest) (by `judge`'s network if given, else the agent's); mean reward of the buffered fast
    and slow write decisions (nan if none)."""
    states = agent.buffer_states()
    acts, rew = agent.buffer_rewards()
    agent = judge or agent
    w = states[:, 0] == 1 if len(states) else np.zeros(0, bool)
    states, acts, rew = states[w], acts[w], rew[w]
    if not len(states):
        return [float("nan")] * 5
    vals = np.array([agent.values(s) for s in states])
    rf = rew[acts == 0].mean() if (acts == 0).any() else float("nan")
    rs = rew[acts == ndev - 1].mean() if (acts == ndev - 1).any() else float("nan")
    return (float((vals.argmax(1) == 0).mean()), float(vals[:, 0].mean()), float(vals[:, ndev - 1].mean()),
            rf, rs)


def fast_only(config, caps, parts):
    sim = Simulator(config, "fast-only", caps, seed=1)
    out = []
    for part in parts:
        z = counters(sim)
        sim.feed(part)
        out.append(counters(sim)["lat"] - z["lat"])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", action="append", required=True)
    ap.add_argument("--hss", default="cost")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1, help="first seed")
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument("--summary", action="store_true", help="one line per seed (whole run) only")
    args = ap.parse_args(argv)
    for t in args.trace:
        if not all(f in TRAINING for f in families(t)) or not families(t):
            sys.exit("%s is not a training workload" % t)
    print("# scripts/untrained_diag.py --hss %s --seeds %d --seed %d --windows %d%s%s" % (
        args.hss, args.seeds, args.seed, args.windows, "".join(" --trace " + t for t in args.trace),
        "".join(" --param " + p for p in args.param)))
    for hss in args.hss.split(","):
        config = load_hss(hss)
        ndev = len(config.devices)
        for trace in args.trace:
            data = record.concat(list(open_trace(trace)))
            caps = config.capacity_pages(footprint_pages([data]), 4096)
            bounds = np.linspace(0, len(data), args.windows + 1).astype(int)
            parts = [data[bounds[i]:bounds[i + 1]] for i in range(args.windows)]
            fo = fast_only(config, caps, parts)
            print("\nHSS %s  %s  (%d requests, %d parts)" % (hss, trace, len(data), args.windows))
            wholes = []
            for seed in range(args.seed, args.seed + args.seeds):
                sim = Simulator.with_agents(config, "harmonia", caps, None, params=args.param or None, seed=seed)
                pa, ma = sim.agents()
                # the same seed's network as it starts (no request fed): judges part 0's states as row "init"
                fresh = Simulator.with_agents(config, "harmonia", caps, None, params=args.param or None, seed=seed)
                if not args.summary:
                    print("  seed %d" % seed)
                    print("    %-4s %8s %6s %13s %6s %6s %6s %6s %6s %6s %6s %6s %11s %6s" % (
                        "part", "x FO", "fw", "pl f/s", "expl", "steps", "rew", "bufF", "Qf", "Qs", "rf", "rs",
                        "prom/ev", "mg"))
                lat_sum = 0
                prev_pa, prev_ma = pa.stats(), ma.stats()
                for i, part in enumerate(parts):
                    z = counters(sim)
                    sim.feed(part)
                    c = counters(sim)
                    d = {k: c[k] - z[k] for k in c}
                    lat_sum += d["lat"]
                    sp, sm = pa.stats(), ma.stats()
                    acts = [sp["actions"][a] - prev_pa["actions"][a] for a in range(ndev)]
                    macts = sm["decisions"] - prev_ma["decisions"]
                    if not args.summary:
                        if i == 0:
                            bf, qf, qs, rf, rs = buffer_view(pa, ndev, fresh.agents()[0])
                            print("    %-4s %8s %6s %13s %6s %6s %6s %6.2f %6.3f %6.3f" % (
                                "init", "", "", "", "", "0", "", bf, qf, qs))
                        bf, qf, qs, rf, rs = buffer_view(pa, ndev)
                        print("    %-4d %8.2f %6.3f %13s %6d %6d %6.3f %6.2f %6.3f %6.3f %6.3f %6.3f %11s %6s" % (
                            i, d["lat"] / fo[i], d["fast_w"] / max(1, d["wpages"]),
                            "%d/%d" % (acts[0], sum(acts[1:])), sp["explorations"] - prev_pa["explorations"],
                            sp["train_steps"], sp["reward_ewma"], bf, qf, qs, rf, rs,
                            "%d/%d" % (d["promotions"], d["evictions"]), "%d" % macts))
                    prev_pa, prev_ma = sp, sm
                whole = lat_sum / sum(fo)
                wholes.append(whole)
                sp = pa.stats()
                print("  seed %d whole run x Fast-Only %.2f  placement actions %s  migration actions %s" % (
                    seed, whole, sp["actions"], ma.stats()["actions"]))
                sys.stdout.flush()
            print("  min-max over seeds %.2f-%.2f, mean %.2f" % (min(wholes), max(wholes), sum(wholes) / len(wholes)))


if __name__ == "__main__":
    main()
