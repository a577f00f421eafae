#!/usr/bin/env python3
"""Choose a pretraining recipe on the training workloads, never on the evaluation's.

Runs candidate pretrained agent sets (each a directory made by `hbl pretrain --out DIR`,
with the policy parameters it was trained with) and the baselines on the validation
traces: the training suite's families with another generator seed (seed 2), so they are
not the traces the agents were trained on, and not workloads of the evaluation either.
Prints, per HSS, the geometric mean of average latency / Fast-Only over the validation
traces, for learning candidates the mean over seeds 1-3 with the min-max.

    scripts/validate_agents.py --candidate dt=/tmp/ag-dt --candidate nodt=/tmp/ag-nodt:device_time=0
"""
import argparse
import math
import sys
import tempfile

from hbl.sim import pretrained
from hbl.trace import split
from hbl.errors import HblError
from hbl.pool import run_all
from hbl.sim import simulate

BASELINES = ("fast-only", "lru", "cde", "smq", "nhit", "seqcutoff", "arc", "lirs", "s3fifo", "wtinylfu",
             "harmonia-migration-only")


def _run(job):
    label, trace, hss, policy, agents, params, seed = job
    r = simulate(trace, hss=hss, policy=policy, params=params, seed=seed, load_agents=agents)
    return label, trace, hss, seed, r["avg_latency_us"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--candidate", action="append", default=[], metavar="LABEL=DIR[:NAME=VALUE,...]",
                    help="pretrained agents and the parameters they were trained with (repeatable)")
    ap.add_argument("--policy", default="harmonia")
    ap.add_argument("--hss", default="perf,cost")
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--set", default="families", metavar="NAME",
                    help="the named validation set (hbl/sim/pretrained.py VALIDATION_SETS; default families, "
                         "the five training families; regimes adds synth:burst, synth:log and the redis-aof and "
                         "file-server captures' later parts; apps adds lmdb-kv's, rrd-metrics' and kyoto-hash's; fresh "
                         "is restic-backup's and borg-backup's alone, captures no decision had touched)")
    ap.add_argument("--selected", action="store_true",
                    help="run each candidate's chosen agents (DIR/POLICY-HSS.agent, hbl pretrain --select's "
                         "choice) for every online seed, not pretraining seed K's for online seed K")
    ap.add_argument("--trace-seed", type=int, default=2,
                    help="generator seed of the validation traces (default 2; another one, e.g. 3, checks a "
                         "choice made on seed 2 on traces it was not made on, still no evaluation workload)")
    ap.add_argument("--per-seed", action="store_true",
                    help="also print each seed's geomean of a learning candidate (seeds 1, 2, ...)")
    ap.add_argument("--family", action="append", default=[], metavar="SPEC",
                    help="a training family added to the validation (repeatable), e.g. synth:uniform:read=0.0 "
                         "for a candidate trained on it too; the geomean is then also shown over the "
                         "default families alone")
    ap.add_argument("--trace", action="append", default=[], metavar="TRACE",
                    help="a validation trace added as given (repeatable), e.g. a later part of a training "
                         "capture (scripts/migration_diag.py --cut); no evaluation workload; the geomean is "
                         "then also shown over the default families alone")
    a = ap.parse_args()
    try:
        split.check_training(a.family, "--family")
        split.check_training(a.trace, "--trace")
    except HblError as exc:
        ap.error(str(exc))
    hss_list = a.hss.split(",")
    if a.trace_seed < 2:
        ap.error("--trace-seed must be 2 or more (seed 1 is what the agents are trained on)")
    if a.set not in pretrained.VALIDATION_SETS:
        ap.error("--set %s: no such validation set (have: %s)" % (a.set, ", ".join(pretrained.VALIDATION_SETS)))
    with tempfile.TemporaryDirectory(prefix="hbl-validation-") as work:
        try:
            named = pretrained.validation_set(a.set, a.requests, a.trace_seed, work)
        except HblError as exc:
            ap.error(str(exc))
        return run(a, hss_list, named)


def run(a, hss_list, named):
    """Every baseline and candidate on the validation traces `named` ((label, trace) pairs), printed."""
    traces = [t for _, t in named] + pretrained.validation_traces(a.requests, a.family, a.trace_seed) + a.trace
    label_of = dict((t, lb) for lb, t in named)
    default = pretrained.validation_traces(a.requests, seed=a.trace_seed)
    # a set without the default families (fresh) has no second column of them alone
    extra = len(traces) != len(default) and set(default) <= set(traces)
    jobs = [(p, t, h, p, False, None, 1) for p in BASELINES for t in traces for h in hss_list]
    labels = list(BASELINES)
    for c in a.candidate:
        label, _, rest = c.partition("=")
        directory, _, prm = rest.partition(":")
        params = dict(kv.split("=") for kv in prm.split(",")) if prm else None
        labels.append(label)
        for t in traces:
            for h in hss_list:
                for s in range(1, a.seeds + 1):
                    agents = (False if directory == "untrained" else
                              pretrained.selected_file(a.policy, h, directory) if a.selected else
                              pretrained.agent_file(a.policy, h, s, directory))
                    jobs.append((label, t, h, a.policy, agents, params, s))
    out = {}
    for label, t, h, s, lat in run_all(_run, jobs, a.jobs, lambda r: "validate"):
        out.setdefault((label, h, s), {})[t] = lat
    print("validation set %s%s (training workloads, generator seed %d): %s" % (
        a.set, " and more" if len(traces) > len(named) else "", a.trace_seed,
        ", ".join(label_of.get(t, t) for t in traces)))
    for h in hss_list:
        print("\nHSS %s: geomean of average latency / Fast-Only (learning: mean over seeds, min-max)" % h)
        base = out[("fast-only", h, 1)]
        for label in labels:
            cols, each = [], []
            for subset in ([traces, default] if extra else [traces]):
                gs = [math.exp(sum(math.log(v[t] / base[t]) for t in subset) / len(subset))
                      for (lb, hh, s), v in sorted(out.items()) if lb == label and hh == h]
                spread = "  %.3f-%.3f" % (min(gs), max(gs)) if len(gs) > 1 else ""
                cols.append("%8.3f%-14s" % (sum(gs) / len(gs), spread))
                each = each or gs
            print(("  %-26s %s" % (label, "   ".join(cols))).rstrip())
            if a.per_seed and len(each) > 1:
                print("  %-26s seeds: %s" % ("", " ".join("%.3f" % g for g in each)))
        if extra:
            print("  (first column: all %d validation traces; second: the %d default families alone)"
                  % (len(traces), len(default)))
        if traces != default:
            print("  per trace (learning: mean over seeds):")
            for t in traces:
                print("    %-30s %s" % (label_of.get(t, t).rsplit("requests=", 1)[0].rstrip(":,"), ", ".join(
                    "%s %.3f" % (label, sum(v[t] / base[t] for (lb, hh, s), v in out.items() if lb == label and hh == h)
                                 / sum(1 for (lb, hh, s) in out if lb == label and hh == h))
                    for label in labels if label != "fast-only")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
