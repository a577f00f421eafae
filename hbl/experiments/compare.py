"""Policies x workloads x HSS configurations, a preset grid of the experiment engine (hbl.experiments.engine)
run on local processes, as the papers' table:
average latency normalized to Fast-Only, per workload, the geometric and arithmetic means, and a
check that the oracle bounds every policy."""
import dataclasses
import itertools
import os
import sys
import tempfile

from hbl.experiments import engine, tables
from hbl import trace as tracemod
from hbl.devices import load_hss
from hbl.experiments.engine import Grid
from hbl.errors import HblError
from hbl.sim.model import replay_label, replay_mode
from hbl.sim.registry import COMPOSITES, all_policy_names, policy_names, refuse_plugin
from hbl.sim.agent_files import in_directory
from hbl.experiments.tables import BASELINE, FUTURE, LEARNING, REFERENCES, geomean, num, short
from hbl.trace.synthetic import DEFAULT_SUITE

# The default suite's full captures are cut to their first this many requests: whole, the five
# 1M-request captures alone would take `hbl compare` well past its 5 minutes on 2 cores.
CAPTURE_REQUESTS = 250_000


def default_traces(synthetic_requests=None):
    """The bundled MSR slices, the real-application slices (apps:), the full application
    captures (workload:, shipped with hbl or made here by `hbl workloads capture`), then the
    synthetic suite; evaluation workloads only (hbl/trace/split.py), never a training one."""
    from hbl.trace import split, workloads
    traces = ["bundled:" + n for n in tracemod.bundled_traces()]
    traces += ["apps:" + n for n in workloads.app_slices()]
    traces += ["workload:" + n for n in workloads.RECIPES
               if workloads.trace_path(n).exists() or workloads.shipped_path(n).exists()]
    traces = [t for t in traces if split.side(t) != "training"]
    for spec in DEFAULT_SUITE:
        traces.append(spec + (":requests=%d" % synthetic_requests if synthetic_requests else ""))
    return traces


def expand_policies(text):
    """Policies named, comma-separated (with the baseline), or "all": every C policy, never a composite
    (harmonia-guard runs only when named: ~1.5x harmonia's time beside the baselines whose runs it shares)."""
    names = [n for n in policy_names() if n != "python"]
    if text in (None, "", "all"):
        return names
    names += [n for n in all_policy_names() if n not in names and n != "python"]
    out = []
    for p in text.split(","):
        p = p.strip()
        refuse_plugin(p, "a comparison")
        if p not in names:
            raise HblError("unknown policy %r (have: %s)" % (p, ", ".join(names)))
        out.append(p)
    if BASELINE not in out:
        out.insert(0, BASELINE)
    return out


@dataclasses.dataclass
class CompareGrid(Grid):
    """hbl compare's preset grid: a learning policy once per seed, the others once (with seed,
    the first); the full captures (workload:NAME) cut to their first capture_requests requests."""
    seed: int = 1
    capture_requests: int = None

    def seeds_of(self, policy):
        return self.seeds if policy in LEARNING else [self.seed]

    def limit_of(self, name):
        return self.capture_requests if name.startswith("workload:") else None


def _run_of(rec, labels):
    """A cell's record as a run of the comparison: simulate's result, the trace as simulate names
    it, the table's short label and the seed."""
    r = rec["result"]
    r["trace"], r["workload"] = rec["trace"], labels[rec["trace"]]
    r["seed"] = rec["seed"]
    return r


def compare(traces=None, hss_list=("perf", "cost"), policies=None, jobs=None, fmt=None, lenient=False,
            reader_options=None, progress=True, synthetic_requests=None, seeds=3, seed=1, untrained=False,
            capture_requests=CAPTURE_REQUESTS, **sim_options):
    """Every policy on every trace and HSS; learning policies once per seed (seed .. seed+seeds-1),
    from their shipped pretrained agents (hbl.sim.pretrained) unless untrained or load_agents names
    others (a directory: hbl.sim.agent_files.in_directory, checked first). The default suite's
    full captures are cut to their first capture_requests requests (0: whole). The grid runs on
    the engine's pool of local processes (hbl.experiments.engine.LocalPool)."""
    limit = None if traces else capture_requests or None
    traces = traces or default_traces(synthetic_requests)
    pols = expand_policies(policies)
    for h in hss_list:
        load_hss(h, sim_options.get("fast_capacity"))  # fail early on a bad config
    replay_mode(sim_options)                           # and on contradictory replay options
    opts = dict(sim_options, load_agents=False) if untrained else sim_options
    if opts.get("load_agents") and os.path.isdir(opts["load_agents"]):
        for h, p, s in itertools.product(hss_list, pols, range(seed, seed + seeds)):
            # fail early on a missing agent file (a composite's harmonia member loads harmonia's)
            in_directory(opts["load_agents"], "harmonia" if p in COMPOSITES else p, h, s)
    grid = CompareGrid(traces=list(traces), hss=list(hss_list), policies=pols, seeds=list(range(seed, seed + seeds)),
                       options=opts, fmt=fmt, lenient=lenient, reader_options=reader_options or {}, seed=seed,
                       capture_requests=limit)
    grid.check()                                       # and on --param no policy of the run takes
    labels = tables.labels(grid.traces)

    def left_out(t):
        if not t.footprint and progress:
            print("hbl: %s has no reads or writes, left out" % t.name, file=sys.stderr)
        return labels[t.name]

    with tempfile.TemporaryDirectory(prefix="hbl-compare-") as work:
        prepared, cells = engine.prepare(grid, opts, work, progress, what="prepare", note=left_out)
        workloads = [labels[n] for n in grid.traces if prepared[n].footprint]
        if not workloads:
            raise HblError("no workload with reads or writes to compare")
        cells = [c for c in cells if prepared[c["trace"]].footprint]
        # longest first (the oracle and the learning policies), so the pool does not end on one straggler;
        # a composite last, its first seed first: the cells of its members that do not learn (lru, arc, ...)
        # and then its first seed store their runs alone, which its later seeds replay (hbl/sim/shadows.py)
        order = lambda c: (c["policy"] in COMPOSITES) + (c["policy"] in COMPOSITES and c["seed"] != seed)
        cells.sort(key=lambda c: (order(c), -(prepared[c["trace"]].footprint * (
            3 if c["policy"] in LEARNING | FUTURE | set(COMPOSITES) else 1))))
        pool = engine.LocalPool(jobs, strict=True, note=progress and (
            lambda rec: "%s %s %s" % (rec["hss"], rec["policy"], labels[rec["trace"]])), shared=shadows(cells, work))
        results = [_run_of(rec, labels) for rec in pool.run(cells, prepared, opts)]
    skipped = {labels[n]: t.skipped for n, t in prepared.items() if t.skipped}
    summary = summarize(results, workloads, list(hss_list), pols)
    summary["bad_lines_skipped"] = skipped
    summary["capture_requests"] = limit
    return summary


def shadows(cells, work):
    """run_cell's shared arguments when a composite is among the cells: a store of shared shadows in the
    comparison's working directory, and the composites' window sizes (the other cells record their runs
    for them)."""
    from hbl.sim.guard import guard_params
    windows = sorted({guard_params(c["params"])["window"] for c in cells if c["policy"] in COMPOSITES})
    return dict(shadow_dir=os.path.join(work, "shadows"), shadow_windows=windows) if windows else None


LONG = 100_000   # requests: a workload long enough for online learning to matter
KINDS = ("full captures", "real slices", "synthetic")


def kind_of(label):
    """A workload's kind from its table label (tables.label's marks): the full captures of real
    applications are reported apart from the short real slices and the synthetic traces."""
    if label.endswith("*"):
        return "synthetic"
    return "full captures" if label.endswith("+") else "real slices"


def _harmonia_standing(score, beaten=()):
    """Harmonia against the best non-learning policy, Sibyl and the oracle, from geometric means of
    normalized latency. The share of the gap to the oracle closed only where the oracle is a bound:
    when harmonia or the best non-learning policy beats it on a workload (`beaten`: such policies),
    oracle_bound is False and no share is given."""
    if "harmonia" not in score:
        return None
    heuristics = {p: v for p, v in score.items() if p not in LEARNING | REFERENCES}
    best = min(heuristics, key=heuristics.get) if heuristics else None
    entry = {"harmonia": score["harmonia"]}
    if best:
        entry.update(best_heuristic=best, best_heuristic_value=score[best],
                     improvement_over_best_heuristic=1 - score["harmonia"] / score[best])
    if "sibyl" in score:
        entry["improvement_over_sibyl"] = 1 - score["harmonia"] / score["sibyl"]
    if best and "oracle" in score:
        gap = score[best] - score["oracle"]
        entry["oracle"] = score["oracle"]
        entry["oracle_bound"] = not {"harmonia", best} & set(beaten)
        entry["oracle_gap_closed"] = (score[best] - score["harmonia"]) / gap if gap > 0 and entry["oracle_bound"] else None
    return entry


def _seed_range(c, workloads):
    """{seeds, harmonia_min, harmonia_max}: the min-max of harmonia's geomean over the workloads, a seed at a
    time (the seeds it ran on all of them); {} for fewer than two."""
    g = list(tables.seed_geomeans({w: c["per_seed"][w].get("harmonia", {}) for w in workloads}, workloads).values())
    if len(g) < 2:
        return {}
    return {"seeds": len(g), "harmonia_min": min(g), "harmonia_max": max(g)}


def from_results(path):
    """A summary rebuilt from the runs of a comparison saved with --output."""
    import json
    try:
        with open(path) as f:
            saved = json.load(f)
        summary = summarize(saved["results"], saved["workloads"], saved["hss"], saved["policies"])
    except OSError as exc:
        raise HblError("%s: %s" % (path, exc.strerror)) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise HblError("%s: not a comparison saved by hbl compare --output (%s)" % (path, exc)) from None
    for key in ("capture_requests", "bad_lines_skipped"):    # facts of the run the runs do not carry
        if key in saved:
            summary[key] = saved[key]
    return summary


def summarize(results, workloads, hss_list, pols):
    """Normalized latencies (the mean over seeds for learning policies), their arithmetic and
    geometric means with the min-max over seeds, the summary of each HSS (hbl.experiments.tables), Harmonia's
    standing, and every run that beats the oracle (which would mean the oracle is not a bound)."""
    for r in results:
        r.setdefault("workload", r["trace"])   # saved before runs carried their label
    configs = tables.summarize(results, workloads, hss_list, pols)
    norm, mean, geo, spread, harmonia, beats, rows, by_kind = {}, {}, {}, {}, {}, [], {}, {}
    long_wl = [w for w in workloads if any(r["policy"] == BASELINE and r["workload"] == w and
                                           r["requests"] >= LONG for r in results)]
    for h, c in zip(hss_list, configs):
        norm[h] = {w: {p: s["mean"] for p, s in c["normalized"][w].items()} for w in c["workloads"]}
        mean[h], geo[h], rows[h] = c["mean"], c["geomean"], c["rows"]
        by_kind[h] = {k: {p: geomean([norm[h][w][p] for w in c["workloads"] if kind_of(w) == k]) for p in pols}
                      for k in KINDS if any(kind_of(w) == k for w in c["workloads"])}
        spread[h] = {p: {"seeds": len(g), "geomean_min": min(g.values()), "geomean_max": max(g.values())}
                     for p, g in c["seed_geomeans"].items() if len(g) > 1}
        beats += [dict(hss=h, workload=b["workload"], policy=b["policy"], seed=b["seed"],
                       latency_vs_oracle=b["latency_vs_oracle"]) for b in c["beats"]]
        beaten = [(b["workload"], b["policy"]) for b in c["beats"]]
        standing = _harmonia_standing(geo[h], {p for _, p in beaten})
        if standing:
            harmonia[h] = {"all": standing}
            harmonia[h]["all"].update(_seed_range(c, c["workloads"]))
            if long_wl:
                harmonia[h]["long"] = dict(_harmonia_standing({p: geomean([norm[h][w][p] for w in long_wl])
                                                               for p in geo[h]},
                                                              {p for w, p in beaten if w in long_wl}),
                                           workloads=long_wl, **_seed_range(c, long_wl))
    order = {p: i for i, p in enumerate(pols)}
    results.sort(key=lambda r: (hss_list.index(r["hss"]), workloads.index(r["workload"]), order[r["policy"]],
                                r.get("seed", 1)))
    replay = results[0].get("replay") if results else None
    agents = sorted({r["agents_from"].split(":")[0] for r in results if "agents_from" in r})
    not_loaded = sorted({r["agents_not_loaded"] for r in results if r.get("agents_not_loaded")})
    return {"workloads": workloads, "hss": hss_list, "policies": pols, "replay": replay, "agents": agents,
            "agents_not_loaded": not_loaded,
            "background": results[0].get("background") if results else None,
            "synthetic": [w for w in workloads if w.endswith("*")],
            "normalized_avg_latency": norm, "geomean_normalized_avg_latency": geo,
            "mean_normalized_avg_latency": mean, "geomean_by_kind": by_kind, "seed_spread": spread,
            "beats_oracle": beats,
            "summary": rows, "harmonia_summary": harmonia, "long_workloads": long_wl, "results": results}


def format_wide(summary):
    """The paper-style table (--wide), one row per policy: average latency / Fast-Only per workload, the
    geometric and arithmetic means (min-max over seeds for learning policies), then mean p99 and
    total migrations."""
    pols, wl, lines = summary["policies"], summary["workloads"], []
    runs = {}
    for r in summary["results"]:
        runs.setdefault((r["hss"], r.get("workload", r["trace"]), r["policy"]), []).append(r)
    beaten = {(b["hss"], b["workload"], b["policy"]) for b in summary.get("beats_oracle", [])}
    pw = max(len(p) for p in pols) + 1
    cw = 9                                     # the summary columns
    ww = {w: max(len(w), 6) + 2 for w in wl}   # each workload's column fits its name
    lines += _preamble(summary)
    for h in summary["hss"]:
        lines.append("")
        lines.append("%s: average latency normalized to Fast-Only (lower is better)" % tables.hss_title(h))
        lines.append("policy".ljust(pw) + "".join(w.rjust(ww[w]) for w in wl) + "geomean".rjust(cw) +
                     "mean".rjust(cw) + "p99 us".rjust(cw) + "migr.".rjust(cw) + "  geomean over seeds")
        best = {w: min(v for p, v in summary["normalized_avg_latency"][h][w].items()
                       if p not in REFERENCES) for w in wl}
        for p in pols:
            cells = []
            for w in wl:
                v = summary["normalized_avg_latency"][h][w][p]
                mark = "!" if (h, w, p) in beaten else "<" if v == best[w] and p not in REFERENCES else " "
                cells.append((num(v) + mark).rjust(ww[w]))
            p99 = sum(runs[(h, w, p)][0]["p99_latency_us"] for w in wl) / len(wl)
            mig = sum(runs[(h, w, p)][0]["promotions"] + runs[(h, w, p)][0]["evictions"] for w in wl)
            sp = summary.get("seed_spread", {}).get(h, {}).get(p)
            lines.append(p.ljust(pw) + "".join(cells) +
                         (num(summary["geomean_normalized_avg_latency"][h][p]) + " ").rjust(cw) +
                         (num(summary["mean_normalized_avg_latency"][h][p]) + " ").rjust(cw) +
                         (short(p99) + " ").rjust(cw) + (short(mig) + " ").rjust(cw) +
                         ("  %s-%s (%d seeds)" % (num(sp["geomean_min"]), num(sp["geomean_max"]), sp["seeds"])
                          if sp else ""))
    for h, both in summary.get("harmonia_summary", {}).items():
        for scope, e in both.items():
            lines.append(_standing_line(h, scope, e))
    if summary.get("beats_oracle"):
        lines.append("")
        lines.append("! faster than the oracle, which is then no bound there: " + "; ".join(
            "%s on %s (%s, seed %d): %.3fx the oracle" % (b["policy"], b["workload"], b["hss"], b["seed"],
                                                           b["latency_vs_oracle"]) for b in summary["beats_oracle"]))
    if summary.get("bad_lines_skipped"):
        lines.append("--lenient skipped malformed lines: " + ", ".join(
            "%s %d" % kv for kv in summary["bad_lines_skipped"].items()))
    lines.append("")
    lines.append("< best non-oracle policy of the workload; * synthetic workload (the rest are real traces); "
                 "+ full capture of a real application (hbl workloads); "
                 "geomean and mean of normalized latency; learning policies: mean over seeds; + = harmonia "
                 "faster; p99 us = mean over workloads; migr. = promotions + evictions, all workloads")
    return "\n".join(lines)


def _faster(improvement):
    """An improvement (1 - harmonia / other) in words, so its sign cannot be read the wrong way round."""
    return "%.1f%% %s" % (abs(100 * improvement), "faster" if improvement >= 0 else "slower")


def _standing_line(h, scope, e):
    label = "all workloads" if scope == "all" else "workloads of %d+ requests" % LONG
    parts = ["HSS %s, %s: harmonia %s (geomean%s)" % (h, label, num(e["harmonia"]), "; %s-%s over %d seeds" % (
        num(e["harmonia_min"]), num(e["harmonia_max"]), e["seeds"]) if e.get("seeds") else "")]
    if "best_heuristic" in e:
        parts.append("%s than the best non-learning policy (%s, %s)" % (
            _faster(e["improvement_over_best_heuristic"]), e["best_heuristic"], num(e["best_heuristic_value"])))
    if "improvement_over_sibyl" in e:
        parts.append("%s than sibyl" % _faster(e["improvement_over_sibyl"]))
    if e.get("oracle_gap_closed") is not None:
        parts.append("closes %.0f%% of the gap to oracle (%s)" % (100 * e["oracle_gap_closed"], num(e["oracle"])))
    elif e.get("oracle_bound") is False:
        parts.append("oracle (%s) is no bound here (!): no share of its gap" % num(e["oracle"]))
    elif "oracle" in e:
        parts.append("oracle (%s) is no better: no gap to close" % num(e["oracle"]))
    return ", ".join(parts)


def _preamble(summary):
    lines = []
    if summary.get("replay"):
        bg = summary.get("background") or {}
        lines.append("replay: %s; background I/O in idle time, backlog %s pages per device%s" % (
            replay_label(summary["replay"]), bg.get("background_backlog", "?"),
            ", %g MB/s cap" % bg["background_rate_mb_s"] if bg.get("background_rate_mb_s") else ""))
    if summary.get("agents"):
        what = {"pretrained": "pretrained (the shipped agents: hbl pretrain on training workloads, none of them "
                              "in the default suite)",
                "untrained": "untrained (learning online from scratch)"}
        lines.append("learning policies' agents: %s" % " and ".join(what.get(a, a) for a in summary["agents"]))
    for note in summary.get("agents_not_loaded") or []:
        lines.append("NOTE: " + note)
    return lines


def _by_kind(summary, h, c):
    """The geomean over each kind of workload (full captures, real slices, synthetic), the policies
    in the summary's order, where the run has more than one kind."""
    kinds = summary.get("geomean_by_kind", {}).get(h, {})
    if len(kinds) < 2:
        return []
    pw = max(len(r["policy"]) for r in c["rows"]) + 2
    lines = ["", "by kind of workload (geomean): " + ", ".join(
        "%s %d" % (k, sum(kind_of(w) == k for w in c["workloads"])) for k in kinds),
        "policy".ljust(pw) + "".join(k.rjust(15) for k in kinds)]
    for r in c["rows"]:
        lines.append(r["policy"].ljust(pw) + "".join(num(kinds[k][r["policy"]]).rjust(15) for k in kinds))
    return lines


def format_text(summary):
    """The first screen: per HSS a summary of a policy a line, then the per-workload tables, every
    line within 100 columns (--wide: format_wide)."""
    configs = tables.summarize(summary["results"], summary["workloads"], summary["hss"], summary["policies"])
    lines = [x for text in _preamble(summary) for x in tables.wrap(text, "  ")]

    def under_summary(c):
        h, out = c["config"], []
        long = summary.get("harmonia_summary", {}).get(h, {}).get("long")
        if long:
            out += tables.wrap(_standing_line(h, "long", long) + " (%s)" % ", ".join(long["workloads"]), "  ")
        return out + _by_kind(summary, h, c)

    cut = summary.get("capture_requests")
    lines += tables.format_tables(configs, lambda c: tables.hss_title(c["config"]), under_summary,
                                  tables.WORKLOADS_NOTE + " * synthetic workload (the rest are real traces); + full "
                                  "capture of a real application (hbl workloads%s)." % (
                                      ", its first %d requests" % cut if cut else ""))
    if summary.get("beats_oracle"):
        lines += tables.wrap("! faster than the oracle: " + "; ".join(
            "%s on %s (%s, seed %d) %.3fx" % (b["policy"], b["workload"], b["hss"], b["seed"], b["latency_vs_oracle"])
            for b in summary["beats_oracle"]), "  ")
    if summary.get("bad_lines_skipped"):
        lines += tables.wrap("--lenient skipped malformed lines: " + ", ".join(
            "%s %d" % kv for kv in summary["bad_lines_skipped"].items()))
    lines += tables.wrap("--wide: one table with p99 latency and migrations; --out FILE: every run as a table "
                         "(hbl.results.load reads it into a data frame)")
    return "\n".join(lines)


def plot(summary, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise HblError("--plot needs matplotlib: pip install matplotlib "
                       "(scripts/bootstrap.sh installs it)") from None
    hss, pols, wl = summary["hss"], summary["policies"], summary["workloads"] + ["geomean"]
    fig, axes = plt.subplots(len(hss), 1, figsize=(max(8, len(wl) * len(pols) * 0.18), 3.2 * len(hss)),
                             squeeze=False)
    width = 0.8 / len(pols)
    for ax, h in zip(axes[:, 0], hss):
        for i, p in enumerate(pols):
            vals = [summary["normalized_avg_latency"][h][w][p] for w in summary["workloads"]]
            vals.append(summary["geomean_normalized_avg_latency"][h][p])
            ax.bar([x + i * width for x in range(len(wl))], vals, width, label=p)
        ax.set_yscale("log")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(wl))])
        ax.set_xticklabels(wl, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("avg latency / Fast-Only")
        ax.set_title("HSS %s" % h, fontsize=10)
    axes[0, 0].legend(ncol=min(len(pols), 6), fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
