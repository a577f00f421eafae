#!/usr/bin/env python3
"""Every pretraining seed's agents on a list of training traces, for several online seeds.

Runs POLICY's agents of pretraining seeds 1..K in DIR (DIR/POLICY-HSS-sK.agent, hbl pretrain --out DIR)
with online seeds 1..N on each trace (training workloads only; a capture part workload:NAME@START-END is
cut once to a native file first), and Fast-Only once per trace; writes every average latency to a JSON
file and prints, per pretraining seed, the geomean of latency / Fast-Only for each online seed, their
mean and max. A study of how to choose among pretraining seeds (results/pretrain/selection-criteria.txt)
reads its figures from these runs; the choosing itself stays hbl pretrain --select's.

    scripts/seed_scores.py --dir D --hss perf --seeds 5 --online 3 --param queue_feature=1 \\
        --out D/check.json --trace synth:src:requests=200000,seed=3 --trace workload:lmdb-kv@750000-1000000
"""
import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

from hbl.errors import HblError
from hbl.pool import run_all
from hbl.sim import pretrained, simulate
from hbl.trace import part, split


def _run(job):
    label, path, hss, policy, agents, params, seed, pseed = job
    r = simulate(path, hss=hss, policy=policy, params=params, seed=seed, load_agents=agents)
    return label, hss, pseed, seed, r["avg_latency_us"]


def _materialise(labels, work):
    """(label, trace) pairs: a capture part cut once to a native trace in work, anything else as given."""
    from hbl import trace as tracemod
    out = []
    for label in labels:
        p = part.parse(label)
        if p is None:
            out.append((label, label))
            continue
        path = Path(work) / (label.replace(":", "_").replace("@", "_") + ".hbltrace")
        [count] = tracemod.write_parts(p[0], [(str(path), p[1], p[2])])
        if count < p[2] - p[1]:
            raise HblError("%s has fewer than %d requests: no part %s" % (p[0], p[2], label))
        out.append((label, str(path)))
    return out


def geomeans(lat, base, traces, pseed, online):
    """Per online seed: the geomean over traces of latency / Fast-Only for pretraining seed pseed."""
    return [math.exp(sum(math.log(lat[(t, pseed, s)] / base[t]) for t in traces) / len(traces))
            for s in range(1, online + 1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="hbl pretrain --out DIR (its per-seed agent files)")
    ap.add_argument("--policy", default="harmonia")
    ap.add_argument("--hss", required=True)
    ap.add_argument("--seeds", type=int, default=5, help="pretraining seeds 1..K")
    ap.add_argument("--online", type=int, default=3, help="online seeds 1..N")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="the policy parameters the agents were trained with (validation_params of them are used)")
    ap.add_argument("--trace", action="append", required=True, help="a training trace (repeatable)")
    ap.add_argument("--out", required=True, help="JSON file for every latency")
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    try:
        split.check_training(a.trace, "--trace")
    except HblError as exc:
        ap.error(str(exc))
    params = pretrained.validation_params(a.param) if a.param else None
    with tempfile.TemporaryDirectory(prefix="hbl-seedscores-") as work:
        named = _materialise(a.trace, work)
        jobs = [(lb, path, a.hss, "fast-only", False, None, 1, 0) for lb, path in named]
        jobs += [(lb, path, a.hss, a.policy, str(pretrained.agent_file(a.policy, a.hss, k, a.dir)), params, s, k)
                 for k in range(1, a.seeds + 1) for s in range(1, a.online + 1) for lb, path in named]
        rows = run_all(_run, jobs, a.jobs, lambda r: "seed_scores")
    base = {lb: v for lb, h, k, s, v in rows if k == 0}
    lat = {(lb, k, s): v for lb, h, k, s, v in rows if k > 0}
    Path(a.out).write_text(json.dumps(dict(dir=a.dir, policy=a.policy, hss=a.hss, seeds=a.seeds, online=a.online,
                                           params=a.param, traces=a.trace, fast_only=base,
                                           latency=[[lb, k, s, v] for (lb, k, s), v in sorted(lat.items())]),
                                      indent=1))
    print("%s %s, %d traces: geomean of latency / Fast-Only per online seed 1-%d, mean, max"
          % (a.policy, a.hss, len(a.trace), a.online))
    for k in range(1, a.seeds + 1):
        g = geomeans(lat, base, a.trace, k, a.online)
        print("  seed %d  %s  mean %.4f  max %.4f" % (k, " ".join("%.4f" % x for x in g), sum(g) / len(g), max(g)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
