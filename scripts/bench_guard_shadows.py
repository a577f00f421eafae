#!/usr/bin/env python3
"""harmonia-guard over several seeds, its members' alone runs simulated by every seed against shared
through a store (hbl/sim/shadows.py, as `hbl compare` runs it), side by side in one run.

For each trace and HSS: seeds 1..N without a store, then the same seeds with a fresh store (the first
seed stores the five baselines, the others replay them), in turn.  Every run's figures must be the same
both ways (all but its times; a difference stops the benchmark); printed: the guard's simulator time
(guard.simulator_wall_s: what the runs spent), that time over its harmonia member's in the same runs (the
"x harmonia" figure, which a loaded host moves less) and the wall time of the N seeds, both ways.

    .venv/bin/python scripts/bench_guard_shadows.py --trace synth:zipf:requests=100000,seed=2 \\
        --hss perf,cost --seeds 3 [--json]
"""
import argparse
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hbl.errors import HblError  # noqa: E402
from hbl.sim import simulate  # noqa: E402

TIMES = ("guard_wall_s", "alone_wall_s", "simulator_wall_s", "diagnostic_wall_s", "shared_members")


def figures(r):
    """A result less its times."""
    r = json.loads(json.dumps(r, default=str))
    r.pop("requests_per_second", None)
    for k in TIMES:
        r["guard"].pop(k, None)
    return r


def seeds_run(trace, hss, seeds, shadow_dir=None):
    """(results by seed, simulator time, its harmonia member's, wall time) of the guard on seeds 1..seeds."""
    out, sim_s, h_s, t0 = {}, 0.0, 0.0, time.perf_counter()
    for s in range(1, seeds + 1):
        r = simulate(trace, hss=hss, policy="harmonia-guard", seed=s, shadow_dir=shadow_dir)
        out[s] = r
        sim_s += r["guard"]["simulator_wall_s"]
        h_s += r["guard"]["alone_wall_s"]["harmonia"]
    return out, sim_s, h_s, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", action="append", required=True, help="a trace (repeat)")
    ap.add_argument("--hss", default="perf,cost", help="HSS presets, comma-separated (default perf,cost)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3, as hbl compare)")
    ap.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    a = ap.parse_args()
    rows = []
    try:
        for trace in a.trace:
            for hss in a.hss.split(","):
                own, own_sim, own_h, own_wall = seeds_run(trace, hss, a.seeds)
                with tempfile.TemporaryDirectory(prefix="hbl-shadows-") as d:
                    shared, sh_sim, sh_h, sh_wall = seeds_run(trace, hss, a.seeds, d)
                for s in own:
                    if figures(own[s]) != figures(shared[s]):
                        raise HblError("%s %s seed %d: the figures differ with shared shadows" % (trace, hss, s))
                rows.append(dict(trace=trace, hss=hss, seeds=a.seeds,
                                 switches=[own[s]["guard"]["switches"] for s in own],
                                 own_sim_s=own_sim, shared_sim_s=sh_sim, own_harmonia_s=own_h, shared_harmonia_s=sh_h,
                                 own_wall_s=own_wall, shared_wall_s=sh_wall))
                if not a.json:
                    print("%-40s %-5s simulator %6.1f s -> %5.1f s, %4.1fx -> %4.1fx harmonia; "
                          "wall %6.1f s -> %5.1f s; same figures" % (
                              trace, hss, own_sim, sh_sim, own_sim / own_h, sh_sim / sh_h, own_wall, sh_wall),
                          flush=True)
    except HblError as exc:
        sys.exit("bench_guard_shadows: %s" % exc)
    tot = {k: sum(r[k] for r in rows) for k in ("own_sim_s", "shared_sim_s", "own_harmonia_s", "shared_harmonia_s",
                                                "own_wall_s", "shared_wall_s")}
    if a.json:
        print(json.dumps(dict(rows=rows, total=tot), indent=1))
    else:
        print("total: simulator %.1f s -> %.1f s, %.1fx -> %.1fx harmonia's time; wall %.1f s -> %.1f s" % (
            tot["own_sim_s"], tot["shared_sim_s"], tot["own_sim_s"] / tot["own_harmonia_s"],
            tot["shared_sim_s"] / tot["shared_harmonia_s"], tot["own_wall_s"], tot["shared_wall_s"]))


if __name__ == "__main__":
    main()
