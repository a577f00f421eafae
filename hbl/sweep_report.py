"""The papers' tables from a sweep's results: average latency normalized to Fast-Only per workload
(mean over seeds, with the min-max), the mean and geomean over workloads, and for each learning
policy the improvement over the best baseline and the share of the gap to the oracle it closes."""
import json
import math
import os

from hbl.compare import BASELINE, FUTURE, LEARNING, _label, _num
from hbl.errors import HblError
from hbl.sweep import JOURNAL, read_journal


def _variant(rec):
    params = rec.get("params") or {}
    return rec["policy"] + "".join(" %s=%g" % kv for kv in sorted(params.items()))


def _stats(values):
    return dict(mean=sum(values) / len(values), min=min(values), max=max(values), n=len(values))


def _geomean(values):
    return math.exp(sum(math.log(max(v, 1e-12)) for v in values) / len(values))


def report(out_dir):
    """{'configs': {config: {'workloads', 'variants', 'normalized', 'mean', 'geomean', 'standing'}},
    'failed', 'cells'} from DIR; a config is an HSS (with its simulator options when several
    option sets share DIR)."""
    if not os.path.exists(os.path.join(out_dir, JOURNAL)):
        raise HblError("%s: not a sweep directory (no %s)" % (out_dir, JOURNAL))
    records = read_journal(out_dir)
    ok = [r for r in records.values() if r.get("status") == "ok"]
    option_sets = {json.dumps(r.get("options") or {}, sort_keys=True, default=str) for r in ok}
    config_of = lambda r: r["hss"] + ("" if len(option_sets) < 2 else " " + json.dumps(
        r.get("options") or {}, sort_keys=True, default=str))
    labels = {}     # trace -> a short unique name: zipf* and zipf*' for two zipf workloads
    for name in sorted({r["trace"] for r in ok}):
        label = _label(name)
        while label in labels.values():
            label += "'"
        labels[name] = label
    latency = {}    # config -> workload -> variant -> seed -> avg latency
    for r in ok:
        latency.setdefault(config_of(r), {}).setdefault(labels[r["trace"]], {}).setdefault(
            _variant(r), {})[r["seed"]] = r["result"]["avg_latency_us"]
    out = {"cells": len(records), "failed": sum(r.get("status") != "ok" for r in records.values()),
           "configs": {}}
    for config, by_wl in latency.items():
        norm, skipped = {}, []
        for wl, by_var in by_wl.items():
            base = by_var.get(BASELINE, {})
            per = {v: {s: lat / base[s] for s, lat in seeds.items() if base.get(s)} for v, seeds in by_var.items()}
            if not any(per.values()):
                skipped.append(wl)
                continue
            norm[wl] = per
        variants = sorted({v for per in norm.values() for v, seeds in per.items() if seeds},
                          key=lambda v: (v != BASELINE, v.split()[0] in LEARNING, v.split()[0] in FUTURE, v))
        workloads = sorted(norm)
        complete = [v for v in variants if all(norm[w].get(v) for w in workloads)]
        seeds = sorted({s for w in workloads for v in complete for s in norm[w][v]})
        mean, geomean = {}, {}
        for v in complete:
            per_seed = [[norm[w][v][s] for w in workloads if s in norm[w][v]] for s in seeds]
            per_seed = [x for x in per_seed if len(x) == len(workloads)]
            wl_means = [_stats(list(norm[w][v].values()))["mean"] for w in workloads]
            mean[v] = dict(_stats([sum(x) / len(x) for x in per_seed] or [sum(wl_means) / len(wl_means)]),
                           mean=sum(wl_means) / len(wl_means))
            geomean[v] = _geomean(wl_means)
        out["configs"][config] = dict(
            workloads=workloads, variants=variants, no_baseline=skipped,
            normalized={w: {v: _stats(list(s.values())) for v, s in norm[w].items() if s} for w in workloads},
            mean=mean, geomean=geomean, standing=_standing({v: m["mean"] for v, m in mean.items()}))
    return out


def _standing(mean):
    """Each learning variant against the best baseline (non-learning, not Fast-Only, not the oracle)."""
    baselines = {v: m for v, m in mean.items() if v.split()[0] not in LEARNING | FUTURE | {BASELINE}}
    if not baselines:
        return {}
    best = min(baselines, key=baselines.get)
    out = {"best_baseline": best, "best_baseline_value": baselines[best], "learning": {}}
    for v, m in mean.items():
        if v.split()[0] not in LEARNING:
            continue
        e = {"value": m, "improvement_over_best_baseline": 1 - m / baselines[best]}
        if "oracle" in mean:
            gap = baselines[best] - mean["oracle"]
            e["oracle_gap_closed"] = (baselines[best] - m) / gap if gap > 0 else None
        out["learning"][v] = e
    return out


def format_report(rep):
    lines = ["%d cells, %d failed (not in the tables)" % (rep["cells"], rep["failed"])]
    for config, c in rep["configs"].items():
        rows = [["policy"] + c["workloads"] + ["mean", "geomean"]]
        for v in c["variants"]:
            rows.append([v] + [_range(c["normalized"][w].get(v)) for w in c["workloads"]] +
                        [_range(c["mean"].get(v)), _num(c["geomean"][v]) if v in c["geomean"] else "-"])
        widths = [max(len(r[i]) for r in rows) + 2 for i in range(len(rows[0]))]
        lines += ["", "HSS %s: average latency / Fast-Only, mean over seeds [min-max] (lower is better)" % config]
        lines += [r[0].ljust(widths[0]) + "".join(x.rjust(w) for x, w in zip(r[1:], widths[1:])) for r in rows]
        if c["no_baseline"]:
            lines.append("left out (no %s cell to normalize by): %s" % (BASELINE, ", ".join(c["no_baseline"])))
        st = c["standing"]
        if not st:
            lines.append("no baseline policy (non-learning, other than %s and oracle) in the sweep" % BASELINE)
            continue
        lines.append("best baseline: %s (%s)" % (st["best_baseline"], _num(st["best_baseline_value"])))
        for v, e in st["learning"].items():
            text = "%s: %s, %+.1f%% over the best baseline" % (v, _num(e["value"]),
                                                             100 * e["improvement_over_best_baseline"])
            if e.get("oracle_gap_closed") is not None:
                text += ", closes %.0f%% of the gap to the oracle" % (100 * e["oracle_gap_closed"])
            elif "oracle_gap_closed" in e:
                text += ", the oracle is no better than the best baseline"
            lines.append(text)
        if not st["learning"]:
            lines.append("no learning policy in the sweep")
    return "\n".join(lines)


def _range(s):
    if not s:
        return "-"
    if s["n"] < 2 or s["min"] == s["max"]:
        return _num(s["mean"])
    return "%s [%s-%s]" % (_num(s["mean"]), _num(s["min"]), _num(s["max"]))


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
        groups = c["workloads"] + ["mean"]
        width = 0.8 / max(len(c["variants"]), 1)
        for i, v in enumerate(c["variants"]):
            stats = [c["normalized"][w].get(v) for w in c["workloads"]] + [c["mean"].get(v)]
            xs = [x + i * width for x, s in enumerate(stats) if s]
            ys = [s["mean"] for s in stats if s]
            err = [[s["mean"] - s["min"] for s in stats if s], [s["max"] - s["mean"] for s in stats if s]]
            ax.bar(xs, ys, width, yerr=err, capsize=2, label=v)
        ax.set_yscale("log")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))])
        ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("avg latency / Fast-Only")
        ax.set_title("HSS %s (whiskers: min-max over seeds)" % config, fontsize=10)
        ax.legend(ncol=min(len(c["variants"]), 6), fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
