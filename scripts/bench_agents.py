"""Harmonia's kept targets for given agent files, side by side in one run: what `hbl bench`
measures for the shipped agents (throughput training online on its 1 M-request zipf trace, the
placement agent's forward pass and decision times, both agents' memory), plus the file's size.
The runs are interleaved (best of `--repeat` rounds of every file), so the host's noise falls on
all of them alike.

    .venv/bin/python scripts/bench_agents.py FILE:HSS [FILE:HSS ...]
"""
import argparse
import os
import time

from hbl import record
from hbl.devices import load_hss
from hbl.experiments.bench import BENCH_TRACE, agent_figures
from hbl.sim import Simulator, footprint_pages
from hbl.sim.agent_files import run_params
from hbl.trace.synthetic import SyntheticTrace


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents", nargs="+", help="FILE:HSS, a harmonia agent file and the HSS preset it is for")
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    data = record.concat(SyntheticTrace(BENCH_TRACE % a.requests, chunk=1 << 20))
    footprint = footprint_pages([data])
    runs = [tuple(x.rsplit(":", 1)) for x in a.agents]
    rate = {r: 0.0 for r in runs}
    figures = {r: None for r in runs}
    for _ in range(a.repeat):
        for path, hss in runs:
            config = load_hss(hss)
            sim = Simulator.with_agents(config, "harmonia", config.capacity_pages(footprint, 4096), path)
            t = time.perf_counter()
            sim.feed(data)
            rate[(path, hss)] = max(rate[(path, hss)], len(data) / (time.perf_counter() - t))
            f = agent_figures(sim)
            old = figures[(path, hss)]
            figures[(path, hss)] = f if old is None else {k: min(v, old[k]) for k, v in f.items()}
    print("%s, %d requests; harmonia from each file, training online; best of %d interleaved rounds"
          % (BENCH_TRACE % a.requests, len(data), a.repeat))
    for path, hss in runs:
        f = figures[(path, hss)]
        print("%s (HSS %s, %d placement features): %.2f M requests/s; placement %.0f ns per forward pass (int16), "
              "%.0f ns per decision; agents' memory %d bytes (%.1f KiB); file %d bytes (%.1f KiB)" % (
                  path, hss, sim_features(path), rate[(path, hss)] / 1e6, f["placement_inference_ns"],
                  f["placement_decision_ns"], f["agents_memory_bytes"], f["agents_memory_bytes"] / 1024,
                  os.path.getsize(path), os.path.getsize(path) / 1024))


def sim_features(path):
    return 8 if run_params(path, "harmonia", {}).get("queue_feature") else 7


if __name__ == "__main__":
    main()
