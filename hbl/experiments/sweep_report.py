"""The papers' tables from a sweep's results (hbl.experiments.tables, as `hbl compare` prints them): per HSS the
summary (geomean of average latency normalized to Fast-Only, min-max over seeds, the change
against the best non-learning policy, the share of the gap to the oracle closed, wins and
losses per workload), then the per-workload table."""
import os

from hbl.experiments import results, tables
from hbl.errors import HblError
from hbl.experiments.tables import BASELINE


def report(out_dir):
    """{'configs': {config: hbl.experiments.tables.summarize's dict for it}, 'failed', 'cells'} from DIR; a
    config is an HSS (with its simulator options when several option sets share DIR); a file of DIR
    (its cells.jsonl, results.csv, ...) stands for DIR, as hbl plot and hbl.results.load take it."""
    if os.path.isfile(out_dir) and os.path.exists(os.path.join(os.path.dirname(out_dir), results.JOURNAL)):
        out_dir = os.path.dirname(out_dir) or "."
    if not os.path.exists(os.path.join(out_dir, results.JOURNAL)):
        raise HblError("%s: not a sweep directory (no %s)" % (out_dir, results.JOURNAL))
    rows = results.from_journal(results.read_journal(out_dir))
    ok = [r for r in rows if r["status"] == "ok"]
    several = len({r["options"] for r in ok}) > 1
    runs = [dict(r, hss=r["hss"] + (" " + r["options"] if several else "")) for r in ok]
    configs = tables.summarize(runs)
    return {"cells": len(rows), "failed": len(rows) - len(ok), "configs": {c["config"]: c for c in configs}}


def format_report(rep):
    lines = ["%d cells, %d failed (not in the tables)" % (rep["cells"], rep["failed"])]
    lines += tables.format_tables(list(rep["configs"].values()), lambda c: "HSS " + c["config"], _left_out)
    return "\n".join(lines)


def _left_out(c):
    """Under a config's summary: the workloads without a Fast-Only cell."""
    if not c["no_baseline"]:
        return []
    return tables.wrap("left out (no %s cell to normalize by): %s" % (BASELINE, ", ".join(c["no_baseline"])))


def _geomean_stats(c, v):
    """The geomean bar: its value, whiskers from each seed's geomean."""
    if v not in c["geomean"]:
        return None
    g = list(c["seed_geomeans"][v].values()) or [c["geomean"][v]]
    return dict(mean=c["geomean"][v], min=min(g), max=max(g))


def plot(rep, path):
    """One panel per HSS: bars of normalized latency per workload and the mean, min-max whiskers."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise HblError("--plot needs matplotlib: pip install matplotlib (scripts/bootstrap.sh installs it)") from None
    configs = list(rep["configs"].items())
    if not configs:
        raise HblError("nothing to plot: no finished cell with a %s baseline" % BASELINE)
    width_in = max(8, max(len(c["workloads"]) + 1 for _, c in configs) * max(len(c["variants"]) for _, c in configs) * 0.2)
    fig, axes = plt.subplots(len(configs), 1, figsize=(width_in, 3.2 * len(configs)), squeeze=False)
    for ax, (config, c) in zip(axes[:, 0], configs):
        groups = c["workloads"] + ["geomean"]
        width = 0.8 / max(len(c["variants"]), 1)
        for i, v in enumerate(c["variants"]):
            stats = [c["normalized"][w].get(v) for w in c["workloads"]] + [_geomean_stats(c, v)]
            xs = [x + i * width for x, s in enumerate(stats) if s]
            ys = [s["mean"] for s in stats if s]
            err = [[max(0, s["mean"] - s["min"]) for s in stats if s], [max(0, s["max"] - s["mean"]) for s in stats if s]]
            ax.bar(xs, ys, width, yerr=err, capsize=2, label=v)
        ax.set_yscale("log")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))])
        ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("avg latency / Fast-Only")
        ax.set_title("HSS %s (whiskers: min-max over seeds)" % config, fontsize=10)
        ax.legend(ncol=min(len(c["variants"]), 6), fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
