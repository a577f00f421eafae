#!/usr/bin/env python3
"""Is it the migration agent?  Takes harmonia apart into its two pretrained networks
(results/diagnosis/migration.txt).

harmonia and harmonia-placement-only ship different placement networks, so comparing them
mixes two things: the migration agent, and which network places the writes.  This script
swaps the networks between the two policies and runs each combination with the simulator's
counters, so the migration agent's own effect is one row against another:

    H        harmonia as shipped: its placement network (writes only) + its migration agent
    H.alone  harmonia's placement network alone, writes only, no migration agent
             (harmonia-placement-only with harmonia's network and place_reads=0)
    H.reads  harmonia with its placement network deciding reads too (place_reads=1)
    PO       harmonia-placement-only as shipped (its own network, reads and writes)
    PO.hP    harmonia-placement-only with harmonia's network (reads and writes)
    H.poP    harmonia with harmonia-placement-only's network (writes only) + the migration agent

    .venv/bin/python scripts/migration_diag.py --hss perf,cost --trace synth:src:requests=1000000,seed=2 ...
    .venv/bin/python scripts/migration_diag.py --cut DIR    # training captures in parts (below)
    .venv/bin/python scripts/migration_diag.py --heldout DIR[:NAME=VALUE,...] --hss perf,cost

--heldout reports (never chooses) candidate harmonia agents DIR/harmonia-HSS-sK.agent, K = online
seed 1-3, on hbl compare's default suite (evaluation workloads, the full captures cut to their first
250,000 requests as compare cuts them), beside the shipped harmonia and harmonia-placement-only of
the same run: geomean of average latency / Fast-Only, overall and by kind, mean over the 3 seeds
(min-max of the seeds' geomeans), and the long captures one by one.

--cut writes the training captures workload:redis-aof and workload:file-server (hbl/trace/split.py
TRAINING) in three parts, as native traces: requests 0-500k (DIR/NAME-train), 500k-750k (-val,
for choosing) and 750k-1M (-check, for checking a choice): a capture has no generator seed, so
a later part of it stands for the seed-2 and seed-3 traces of the synthetic families.

Traces are given as simulate takes them; NAME@N cuts one to its first N requests (as hbl compare
cuts the full captures).  Every run uses online seed 1 (--seed).  Figures: average latency /
Fast-Only's; rhit read hit ratio; fw share of written pages placed on the fastest device; prom
promotions; mig the migration agent's own moves (promotions + evictions - fallback evictions);
sync evictions made synchronous by a full background queue and syncw their wait per request (us).
"""
import argparse
import os
import sys
import tempfile

from hbl import trace as tracemod
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.experiments.engine import materialize
from hbl.sim import Simulator, simulate
from hbl.pool import run_all
from hbl.sim import pretrained
from hbl.sim.agent_files import agent_file, selected_file

VARIANTS = ("H", "H.alone", "H.reads", "PO", "PO.hP", "H.poP")
CAPTURES = pretrained.VALIDATION_SETS["regimes"]["captures"]
#: the validation set's parts (seed 2: val, seed 3: check) and what precedes them, to train on
PARTS = (("train", 0, pretrained.CAPTURE_PARTS[2][0]), ("val",) + pretrained.CAPTURE_PARTS[2],
         ("check",) + pretrained.CAPTURE_PARTS[3])


def swapped_agents(hss, out):
    """Agent files with the placement networks swapped: (harmonia with placement-only's network,
    placement-only with harmonia's network).  Both networks must be of one width: since issue 26's
    harmonia perf and cost agents (8 placement features) shipped, only tri and quad (7 each)."""
    cfg = load_hss(hss)
    caps = cfg.capacity_pages(100_000, 4096)
    one = {}
    for pol in ("harmonia", "harmonia-placement-only"):
        sim = Simulator(cfg, pol, caps)
        sim.load_agents(selected_file(pol, hss))
        one[pol] = os.path.join(out, "%s-%s.placement" % (pol, hss))
        sim.agents()[0].save(one[pol])
    files = {}
    for pol, other, key in (("harmonia", "harmonia-placement-only", "H.poP"),
                            ("harmonia-placement-only", "harmonia", "PO.hP")):
        sim = Simulator(cfg, pol, caps)
        sim.load_agents(selected_file(pol, hss))
        sim.agents()[0].load(one[other])
        files[key] = os.path.join(out, "%s-%s.agent" % (key, hss))
        sim.save_agents(files[key])
    return files


def variant(name, files):
    """(policy, agent file or None for the shipped ones, params) of a variant."""
    return {"H": ("harmonia", None, None),
            "H.alone": ("harmonia-placement-only", files["PO.hP"], {"place_reads": "0"}),
            "H.reads": ("harmonia", None, {"place_reads": "1"}),
            "PO": ("harmonia-placement-only", None, None),
            "PO.hP": ("harmonia-placement-only", files["PO.hP"], None),
            "H.poP": ("harmonia", files["H.poP"], None)}[name]


def cut(name, tmp):
    if "@" not in name:
        return name
    trace, n = name.rsplit("@", 1)
    path = os.path.join(tmp, "%s-%s.hbltrace" % (trace.replace(":", "_").replace("/", "_"), n))
    if not os.path.exists(path):
        materialize(trace, path, None, False, {}, int(n))
    return path


def row(hss, label, name, r, base):
    ag = r.get("agents", [])
    mig = r["promotions"] + r["evictions"] - r["fallback_evictions"] if len(ag) > 1 else 0
    return ("%-4s %-34s %-8s %8.3f  rhit %.3f  fw %.3f  prom %7d  mig %6d  sync %7d  syncw %7.2f" % (
        hss, label[-34:], name, r["avg_latency_us"] / base, r["read_hit_ratio"], r["fast_write_share"],
        r["promotions"], mig, r["sync_evictions"], r["sync_wait_us"]))


def write_parts(out):
    os.makedirs(out, exist_ok=True)
    for name in CAPTURES:
        paths = [os.path.join(out, "%s-%s.hbltrace" % (name, p)) for p, _, _ in PARTS]
        counts = tracemod.write_parts("workload:" + name, [(path, lo, hi) for path, (_, lo, hi) in zip(paths, PARTS)],
                                      source="workload:" + name)
        for path, count in zip(paths, counts):
            print("%s: %d requests" % (path, count))


HELDOUT = ("harmonia", "harmonia-placement-only", "candidate")


def _heldout_run(job):
    hss, trace, path, label, agents, params, seed = job
    pol = "harmonia" if label == "candidate" else label
    r = simulate(path, hss=hss, policy=pol, seed=seed, params=params, load_agents=agents)
    return hss, trace, label, seed, r["avg_latency_us"]


def heldout(spec, hss_list, tmp):
    """hbl compare's default suite: the candidate beside the shipped agents (report only)."""
    from hbl.experiments.compare import CAPTURE_REQUESTS, default_traces
    from hbl.experiments.tables import geomean
    directory, _, prm = spec.partition(":")
    params = dict(kv.split("=") for kv in prm.split(",")) if prm else None
    traces = default_traces()
    paths = {t: cut(t + "@%d" % CAPTURE_REQUESTS, tmp) if t.startswith("workload:") else t for t in traces}
    jobs = [(h, t, paths[t], "fast-only", None, None, 1) for h in hss_list for t in traces]
    jobs += [(h, t, paths[t], lb, agent_file("harmonia", h, s, directory) if lb == "candidate" else None,
              params if lb == "candidate" else None, s)
             for h in hss_list for t in traces for lb in HELDOUT for s in (1, 2, 3)]
    out = {}
    for h, t, lb, s, lat in run_all(_heldout_run, jobs, 1, lambda r: "heldout"):
        out[(h, t, lb, s)] = lat
    kinds = (("all", lambda t: True), ("full captures", lambda t: t.startswith("workload:")),
             ("real slices", lambda t: t.startswith(("bundled:", "apps:"))),
             ("synthetic", lambda t: t.startswith("synth:")))
    for h in hss_list:
        x = lambda t, lb, s: out[(h, t, lb, s)] / out[(h, t, "fast-only", 1)]
        print("\nHSS %s, %d workloads: geomean of average latency / Fast-Only, mean over online seeds 1-3 "
              "(min-max of the seeds' geomeans)" % (h, len(traces)))
        print("  %-24s" % "policy" + "".join("%-26s" % k for k, _ in kinds))
        for lb in HELDOUT:
            cells = []
            for _, keep in kinds:
                ts = [t for t in traces if keep(t)]
                gs = [geomean([x(t, lb, s) for t in ts]) for s in (1, 2, 3)]
                cells.append("%7.3f (%.3f-%.3f)   " % (sum(gs) / 3, min(gs), max(gs)))
            print("  %-24s" % lb + "".join(cells))
        print("  per workload (mean over seeds): harmonia / harmonia-placement-only / candidate")
        for t in traces:
            print("    %-40s %s" % (t[:40], " / ".join("%.2f" % (sum(x(t, lb, s) for s in (1, 2, 3)) / 3)
                                                     for lb in HELDOUT)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hss", default="perf,cost")
    ap.add_argument("--trace", action="append", default=[], help="trace (repeatable); NAME@N: its first N requests")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cut", metavar="DIR", help="write the training captures' parts to DIR and stop")
    ap.add_argument("--heldout", metavar="DIR[:NAME=VALUE,...]",
                    help="report candidate harmonia agents on hbl compare's default suite (no choice there)")
    a = ap.parse_args()
    if a.cut:
        write_parts(a.cut)
        return 0
    if a.heldout:
        with tempfile.TemporaryDirectory() as tmp:
            heldout(a.heldout, a.hss.split(","), tmp)
        return 0
    names = a.variants.split(",")
    bad = [n for n in names if n not in VARIANTS]
    if bad or not a.trace:
        ap.error("variants are %s; at least one --trace" % ", ".join(VARIANTS))
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for h in a.hss.split(","):
                files = swapped_agents(h, tmp)
                for t in a.trace:
                    path = cut(t, tmp)
                    base = simulate(path, hss=h, policy="fast-only")["avg_latency_us"]
                    for n in names:
                        pol, agents, params = variant(n, files)
                        r = simulate(path, hss=h, policy=pol, seed=a.seed, params=params, load_agents=agents)
                        print(row(h, t, n, r, base), flush=True)
        except HblError as exc:
            print("migration_diag: %s" % exc, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
