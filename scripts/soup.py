#!/usr/bin/env python3
"""A weight-averaged agent ("model soup", Wortsman et al., ICML'22) of several pretraining seeds.

Reads the agents of pretraining seeds 1..K that `hbl pretrain --out DIR` wrote (DIR/POLICY-HSS-sK.agent),
averages every parameter of each agent (placement and migration apart) over the seeds, FP32 training
weights and the optimizer's moments alike, and writes OUT/POLICY-HSS.agent, which loads like any other
(hbl compare --agents OUT, scripts/validate_agents.py --selected --candidate NAME=OUT).  The deciding
network (int16) is quantized from the averaged weights (hbl_agent_set_params syncs it); the Adam step
count is the first seed's.

Only seeds that started from one common network can be averaged (the hidden units of networks drawn
apart are permuted against each other): pretrain them with --param init_seed=S --param m_init_seed=S+1
(results/pretrain/soup.txt).  Trained files do not say where they started, so that is the caller's
word; the script prints each seed's distance from the mean, per agent.

    scripts/soup.py --dir /tmp/soup/pt-perf --hss perf --seeds 5 --out /tmp/soup/soup-perf
"""
import argparse
import sys
from pathlib import Path

import numpy as np

from hbl.errors import HblError
from hbl.sim import Simulator
from hbl.sim.agent_files import agent_file, selected_file
from hbl.devices import load_hss

FOOTPRINT = 100_000   # pages: capacities only; an agent's shape does not depend on them


def load(path, policy, hss):
    config = load_hss(hss, None)
    caps = config.capacity_pages(FOOTPRINT, 4096)
    return Simulator.with_agents(config, policy, caps, str(path))


def soup(files, policy, hss, out, only=None):
    """Average the agents in `files` into `out`; returns per agent the relative distance of each
    seed's weights from the mean (||w_k - mean|| / ||mean||).  only: the indices of the agents
    averaged (0 placement, 1 migration), the others kept as the first file has them."""
    sims = [load(f, policy, hss) for f in files]
    agents = [s.agents() for s in sims]
    if not agents[0]:
        raise HblError("policy %s has no agents" % policy)
    for f, a in zip(files[1:], agents[1:]):
        if [len(x.params()) for x in a] != [len(x.params()) for x in agents[0]]:
            raise HblError("%s: its agents have another shape than %s's: only seeds of one recipe average"
                           % (f, files[0]))
    dist = []
    for i, first in enumerate(agents[0]):
        ws = np.stack([a[i].params() for a in agents]).astype(np.float64)
        mom = [a[i].moments() for a in agents]
        m1 = np.mean([m[0] for m in mom], axis=0)
        m2 = np.mean([m[1] for m in mom], axis=0)
        mean = ws.mean(axis=0)
        if only is None or i in only:
            first.set_params(mean.astype(np.float32), m1.astype(np.float32), m2.astype(np.float32))
        dist.append([float(np.linalg.norm(w - mean) / np.linalg.norm(mean)) for w in ws])
    out.parent.mkdir(parents=True, exist_ok=True)
    sims[0].save_agents(out)
    return dist


def geomean_on(path, policy, hss, validation, jobs, work):
    """The validation figure hbl pretrain --select chooses by: geomean of latency / Fast-Only over the
    set `validation` at generator seed 2, online seed 1."""
    from hbl.sim import pretrained
    traces = [t for _, t in pretrained.validation_set(validation, None, 2, work)]
    return pretrained.validation_geomean(path, policy, hss, traces, jobs=jobs)


def greedy(directory, policy, hss, seeds, out, validation, jobs):
    """Wortsman et al.'s greedy soup: the seeds in the order of their validation figure (selection.json,
    hbl pretrain --select), each added to the soup if the soup's figure does not rise; the soup, kept in
    `out`, and the steps taken."""
    import json
    import tempfile
    path = Path(directory) / "selection.json"
    try:
        rows = json.loads(path.read_text())["rows"]
    except (OSError, ValueError, KeyError) as exc:
        raise HblError("%s: no readable selection (hbl pretrain --select writes it): %s" % (path, exc)) from None
    row = next((r for r in rows if r["policy"] == policy and r["hss"] == hss), None)
    if row is None:
        raise HblError("%s: no selection of %s on %s" % (path, policy, hss))
    fig = {int(k): v for k, v in row["validation"].items()}
    order = sorted((s for s in fig if s <= seeds), key=fig.get)
    kept, best, steps = [order[0]], fig[order[0]], []
    with tempfile.TemporaryDirectory(prefix="hbl-soup-") as work:
        for s in order[1:]:
            trial = Path(work) / ("%s-%s.agent" % (policy, hss))
            soup([agent_file(policy, hss, k, directory) for k in kept + [s]], policy, hss, trial)
            g = geomean_on(trial, policy, hss, validation, jobs, work)
            steps.append((s, g, g <= best))
            if g <= best:
                kept, best = kept + [s], g
    soup([agent_file(policy, hss, k, directory) for k in kept], policy, hss, out)
    return kept, best, steps, fig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="the directory hbl pretrain --out wrote")
    ap.add_argument("--policy", default="harmonia")
    ap.add_argument("--hss", default="perf", help="comma-separated HSS presets")
    ap.add_argument("--seeds", type=int, default=5, help="pretraining seeds 1..N averaged")
    ap.add_argument("--out", required=True, help="directory the averaged POLICY-HSS.agent goes to")
    ap.add_argument("--greedy", metavar="SET",
                    help="a greedy soup chosen on validation set SET (generator seed 2, online seed 1), "
                         "not the average of all seeds")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--only", type=int, action="append", metavar="I",
                    help="average agent I only (0 placement, 1 migration; repeatable), the others the --first seed's")
    ap.add_argument("--first", type=int, default=1, metavar="S",
                    help="the seed whose agents --only leaves as they are (default 1)")
    a = ap.parse_args()
    if a.only and not set(a.only) <= {0, 1}:
        ap.error("--only takes 0 (placement) or 1 (migration)")
    for h in [x.strip() for x in a.hss.split(",") if x.strip()]:
        if a.greedy:
            out = selected_file(a.policy, h, a.out)
            kept, best, steps, fig = greedy(a.dir, a.policy, h, a.seeds, out, a.greedy, a.jobs)
            print("%s %s seeds alone: %s" % (a.policy, h, " ".join("s%d %.3f" % (k, fig[k]) for k in sorted(fig))))
            for s, g, took in steps:
                print("  + seed %d: %.3f %s" % (s, g, "kept" if took else "dropped"))
            print("%s %s greedy soup of seeds %s: %.3f -> %s" % (a.policy, h, kept, best, out))
            continue
        order = [a.first] + [s for s in range(1, a.seeds + 1) if s != a.first]
        files = [agent_file(a.policy, h, s, a.dir) for s in order]
        out = selected_file(a.policy, h, a.out)
        dist = soup(files, a.policy, h, out, a.only)
        for i, d in enumerate(dist):
            print("%s %s agent %d: distance of seeds %s from the mean %s" % (
                a.policy, h, i, order, " ".join("%.3f" % x for x in d)))
        print("%s %s: %s" % (a.policy, h, out))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except HblError as e:
        sys.exit("soup: %s" % e)
