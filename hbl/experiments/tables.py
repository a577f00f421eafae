"""The papers' figures from runs, the one computation behind `hbl compare` and `hbl sweep report`,
and their text: a compact summary per HSS and the per-workload table, both within 100 columns.

A run is a dict with hss, workload, policy, seed and avg_latency_us, and variant when one
policy runs with several parameter sets (it defaults to the policy): a row of hbl.results."""
import math
import os
import textwrap

from hbl.sim.registry import all_policy_names, policy_names

BASELINE = "fast-only"
ORACLE = "oracle"
LEARNING = frozenset(all_policy_names("learns"))   # seeded: run once per seed (harmonia-guard too)
FUTURE = frozenset(policy_names("needs_future"))   # bounds, not contenders
REFERENCES = FUTURE | {BASELINE}                   # the bounds and the normalization point
WIDTH = 100                                        # columns of every line of text


def label(name):
    """A workload's short name; synthetic workloads end in '*', full application captures in '+'."""
    from hbl.trace import workloads
    kind, _, rest = name.partition(":")
    if kind == "bundled":
        return rest
    if kind == "synth":
        return rest.split(":")[0] + "*"
    if kind in ("apps", "workload") and "+" in rest:    # a mix of tenants
        return rest + ("+" if kind == "workload" else "")
    if kind in ("apps", "workload") and rest in workloads.RECIPES:
        return rest + ("+" if kind == "workload" else "") + ("*" if workloads.RECIPES[rest].synthetic else "")
    return os.path.splitext(os.path.basename(name))[0]


def hss_title(h):
    """An HSS as the tables name it: HSS perf (H+M), its devices' short names; a .json file by its path."""
    if h.endswith(".json"):
        return "HSS " + h
    from hbl.devices import load_hss
    return "HSS %s (%s)" % (h, "+".join(p.name for p in load_hss(h).devices))


def labels(names):
    """{trace name: label}, unique in the order given: zipf* and zipf*' for two zipf workloads."""
    out = {}
    for name in names:
        if name in out:
            continue
        short = label(name)
        while short in out.values():
            short += "'"
        out[name] = short
    return out


def variant(run):
    return run.get("variant") or run["policy"]


def geomean(values):
    return math.exp(sum(math.log(max(v, 1e-12)) for v in values) / len(values))


def normalized(runs):
    """Each run's average latency over Fast-Only's on the same HSS and workload (its run of the
    same seed, else its first): a list in the order of runs, None where there is no Fast-Only run."""
    base = {}
    for r in runs:
        if r["policy"] == BASELINE and r.get("avg_latency_us") is not None:
            base.setdefault((r["hss"], r["workload"]), {})[r.get("seed", 1)] = r["avg_latency_us"]
    out = []
    for r in runs:
        b = base.get((r["hss"], r["workload"]))
        if not b or r.get("avg_latency_us") is None:
            out.append(None)
            continue
        div = b.get(r.get("seed", 1), b[min(b)])
        out.append(r["avg_latency_us"] / div if div else float("nan"))
    return out


def _stats(values):
    return dict(mean=sum(values) / len(values), min=min(values), max=max(values), n=len(values))


def _order(v, policy):
    return (v != BASELINE, policy in LEARNING, policy in FUTURE, v)


def summarize(runs, workloads=None, configs=None, variants=None):
    """Per HSS (in the order of configs, default as first seen): a dict of
    workloads (those with a Fast-Only run; no_baseline: the others), variants,
    normalized {workload: {variant: mean, min, max, n over seeds}}, per_seed {workload: {variant: {seed:
    latency / Fast-Only}}}, geomean and mean over the
    workloads (of the means over seeds) of every variant that ran on all of them, seed_geomeans
    {variant: {seed: geomean}}, beats (every run faster than the oracle, which is then no bound),
    best (the best non-learning policy by geomean), and rows: the summary, sorted by geomean."""
    lat, policy_of = {}, {}
    for r, norm in zip(runs, normalized(runs)):
        v = variant(r)
        policy_of[v] = r["policy"]
        lat.setdefault(r["hss"], {}).setdefault(r["workload"], {}).setdefault(v, {})[r.get("seed", 1)] = (
            norm, r["avg_latency_us"])
    configs = configs or list(lat)
    return [_config(h, lat.get(h, {}), workloads, variants, policy_of) for h in configs]


def seed_geomeans(by_workload, workloads):
    """{seed: geomean over workloads} of by_workload's {workload: {seed: latency / Fast-Only}}, on the seeds
    every one of the workloads has, in seed order; {} when there are none or a workload is missing."""
    if not workloads or any(w not in by_workload for w in workloads):
        return {}
    seeds = sorted(set.intersection(*(set(by_workload[w]) for w in workloads)))
    return {s: geomean([by_workload[w][s] for w in workloads]) for s in seeds}


def _config(h, lat, workloads, variants, policy_of):
    order = workloads or sorted(lat)
    present = {v for by_var in lat.values() for v in by_var}
    vs = [v for v in variants if v in present] if variants else sorted(present, key=lambda v: _order(v, policy_of[v]))
    wl = [w for w in order if w in lat and lat[w].get(BASELINE)]
    norm = {w: {v: {s: x[0] for s, x in lat[w][v].items()} for v in vs if v in lat[w]} for w in wl}
    stats = {w: {v: _stats(list(s.values())) for v, s in norm[w].items()} for w in wl}
    complete = [v for v in vs if wl and all(v in norm[w] for w in wl)]
    geo, mean, seed_geo = {}, {}, {}
    for v in complete:
        means = [stats[w][v]["mean"] for w in wl]
        geo[v], mean[v] = geomean(means), sum(means) / len(means)
        seed_geo[v] = seed_geomeans({w: norm[w][v] for w in wl}, wl)
    beats = []
    contenders = [v for v in vs if policy_of[v] not in REFERENCES]
    for w in [w for w in wl if ORACLE in lat[w]]:
        bound = min(lat[w][ORACLE].items())[1][1]     # the oracle's run of the first seed
        for v in contenders:
            for s, (_, x) in sorted(lat[w].get(v, {}).items()):
                if x < bound * (1 - 1e-9):
                    beats.append(dict(workload=w, variant=v, policy=policy_of[v], seed=s, latency_vs_oracle=x / bound))
    heuristics = [v for v in complete if policy_of[v] not in LEARNING | REFERENCES]
    best = min(heuristics, key=geo.get) if heuristics else None
    rows = [_row(v, policy_of[v], geo, mean, seed_geo, stats, wl, best, beats) for v in sorted(complete, key=geo.get)]
    return dict(config=h, workloads=wl, no_baseline=[w for w in order if w not in wl], variants=vs,
                policies={v: policy_of[v] for v in vs},
                incomplete=[v for v in vs if v not in complete], normalized=stats, per_seed=norm, geomean=geo,
                mean=mean, seed_geomeans=seed_geo, beats=beats, best=best, rows=rows)


def _row(v, policy, geo, mean, seed_geo, stats, wl, best, beats):
    """One line of the summary: geomean (min-max over seeds), against the best non-learning
    policy, the share of the gap to the oracle it closes, its wins and losses per workload."""
    g = list(seed_geo[v].values())
    row = dict(variant=v, policy=policy, geomean=geo[v], mean=mean[v], seeds=len(g),
               geomean_min=min(g) if g else None, geomean_max=max(g) if g else None)
    if best is None:
        return row
    row["vs_best"] = geo[v] / geo[best] - 1
    if v != best:
        mine = [stats[w][v]["mean"] for w in wl]
        theirs = [stats[w][best]["mean"] for w in wl]
        row["wins"] = sum(a < b * (1 - 1e-9) for a, b in zip(mine, theirs))
        row["losses"] = sum(a > b * (1 + 1e-9) for a, b in zip(mine, theirs))
    if ORACLE in geo and policy not in REFERENCES:
        gap = geo[best] - geo[ORACLE]
        beaten = {b["variant"] for b in beats}
        row["oracle_bound"] = v not in beaten and best not in beaten
        row["oracle_gap_closed"] = (geo[best] - geo[v]) / gap if gap > 0 else None
    return row


# ---- text ----

def num(x):
    """A normalized latency in at most 7 characters."""
    if x is None or x != x:
        return "-"
    return "%.2f" % x if x < 1000 else short(x)


def short(x):
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= div * 10:
            return "%.0f%s" % (x / div, unit)
    return "%.0f" % x if abs(x) >= 10 else "%.1f" % x


def wrap(text, indent=""):
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False) or [""]


def _spread(row):
    if row["seeds"] < 2 or (row["policy"] not in LEARNING and row["geomean_min"] == row["geomean_max"]):
        return ""
    return "%s-%s" % (num(row["geomean_min"]), num(row["geomean_max"]))


def summary_cells(c):
    """The summary of one HSS as text cells: its header and a row a policy, sorted by geomean."""
    best = c["best"]
    head = ["policy", "geomean", "min-max", "vs " + best if best else "", "gap closed" if best else "",
            "W/L" if best else ""]
    cells = []
    for r in c["rows"]:
        gap = "-"
        if r.get("oracle_gap_closed") is not None:
            gap = "%d%%" % (round(100 * r["oracle_gap_closed"]) + 0) if r["oracle_bound"] else "!"
        cells.append([r["variant"], num(r["geomean"]), _spread(r),
                      ("%+.1f%%" % (100 * r["vs_best"]) if r["variant"] != best else "-") if best else "",
                      gap if best else "",
                      ("%d/%d" % (r["wins"], r["losses"]) if "wins" in r else "-") if best else ""])
    return head, cells


def format_summary(c, title):
    """The compact summary of one HSS: a policy a line, sorted by geomean."""
    if not c["rows"]:
        return ["%s: no policy ran on every workload with a %s run" % (title, BASELINE)]
    head, cells = summary_cells(c)
    widths = [max(len(x[i]) for x in cells + [head]) + 2 for i in range(len(head))]
    widths[0] = min(widths[0], WIDTH - sum(widths[1:]))
    n = len(c["workloads"])
    lines = wrap("%s, %d workload%s: geomean of average latency / Fast-Only (lower is better)" % (
        title, n, "" if n == 1 else "s"))
    for x in [head] + cells:
        name = x[0] if len(x[0]) < widths[0] else x[0][:widths[0] - 3] + ".."
        lines.append((name.ljust(widths[0]) + "".join(s.rjust(w) for s, w in zip(x[1:], widths[1:]))).rstrip())
    if c["incomplete"]:
        lines += wrap("not on every workload, so not above: " + ", ".join(c["incomplete"]))
    return lines


SUMMARY_NOTE = ("geomean: over the workloads, of average latency / Fast-Only (learning policies: of the mean "
                "over their seeds); min-max: of each seed's geomean. vs X: change of the geomean against X, "
                "the best non-learning policy (negative: faster). gap closed: the share of the gap between X "
                "and the oracle that a policy closes; ! where the policy beats the oracle on some workload "
                "(the oracle is then no bound). W/L: workloads on which the policy is faster / slower than X.")


def format_workloads(c, title):
    """Workloads as rows, policies as columns (Fast-Only, 1 by definition, left out), in as many
    blocks as it takes for no line to pass WIDTH columns; a geomean row at the foot."""
    order = [r["variant"] for r in c["rows"]] + c["incomplete"]
    vs = [v for v in order if v != BASELINE]
    if not vs or not c["workloads"]:
        return []
    beaten = {(b["workload"], b["variant"]) for b in c["beats"]}
    contender = {v: c["policies"][v] not in REFERENCES for v in c["variants"]}
    rows = []
    for w in c["workloads"]:
        per = c["normalized"][w]
        top = min([per[v]["mean"] for v in per if contender[v]], default=None)
        rows.append([w] + [num(per[v]["mean"]) + ("!" if (w, v) in beaten else "<" if contender[v] and
                                                  per[v]["mean"] == top else " ") if v in per else "- "
                           for v in vs])
    rows.append(["geomean"] + [num(c["geomean"][v]) + " " if v in c["geomean"] else "- " for v in vs])
    return _layout("%s: average latency / Fast-Only per workload" % title, vs, rows)


def format_seed_spread(c, title):
    """The learning policies run over several seeds: per workload the min-max over the seeds of latency /
    Fast-Only, and at the foot the min-max of each seed's geomean (the summary's), as format_workloads lays
    out its table; nothing where no policy has two seeds."""
    rows_of = {r["variant"]: r for r in c["rows"]}
    order = [r["variant"] for r in c["rows"]] + c["incomplete"]
    vs = [v for v in order if c["policies"][v] in LEARNING and
          any(c["normalized"][w].get(v, {}).get("n", 0) > 1 for w in c["workloads"])]
    if not vs:
        return []

    def cell(s):
        return "%s-%s" % (num(s["min"]), num(s["max"])) if s["n"] > 1 else num(s["mean"])
    rows = [[w] + [cell(c["normalized"][w][v]) + " " if v in c["normalized"][w] else "- " for v in vs]
            for w in c["workloads"]]
    rows.append(["geomean"] + ["%s-%s " % (num(rows_of[v]["geomean_min"]), num(rows_of[v]["geomean_max"]))
                               if v in rows_of and rows_of[v]["seeds"] > 1 else "- " for v in vs])
    return _layout("%s: learning policies, min-max over their seeds of latency / Fast-Only per workload (geomean: "
                   "of each seed's geomean)" % title, vs, rows)


def _layout(title, vs, rows):
    """A table of text cells under its title: rows [name, a cell per column of vs], the columns named by
    vs, cut into as many blocks as it takes for no line to pass WIDTH columns."""
    lw = max(len(r[0]) for r in rows) + 1
    cols = []
    for i, v in enumerate(vs, 1):
        cw = max(len(r[i]) for r in rows)
        head = _fold(v, max([cw] + [min(len(x), 16) for x in v.replace("-", "- ").split()]))
        cols.append((max([cw] + [len(h) for h in head]) + 2, head, [r[i] for r in rows]))
    lines = wrap(title)
    for block in _blocks(cols, WIDTH - lw):
        depth = max(len(h) for _, h, _ in block)
        lines.append("")
        for k in range(depth):
            lines.append(("workload" if k == depth - 1 else "").ljust(lw) + "".join(
                (([""] * (depth - len(h)) + h)[k] + " ").rjust(w) for w, h, _ in block).rstrip())
        for j, r in enumerate(rows):
            lines.append((r[0].ljust(lw) + "".join(vals[j].rjust(w) for w, _, vals in block)).rstrip())
    return lines


WORKLOADS_NOTE = ("< the best policy of the workload (other than the oracle); ! faster than the oracle, which "
                  "is then no bound there; learning policies: mean over their seeds (their min-max per workload in "
                  "the table after each).")


def format_tables(configs, title, under_summary=None, workloads_note=WORKLOADS_NOTE):
    """The papers' tables as `hbl compare` and `hbl sweep report` both print them, from summarize's
    configs: per config its summary (and under_summary(config)'s lines below it), the summary's
    note, per config the latency per workload, then workloads_note. title(config) names one."""
    lines = []
    for c in configs:
        lines.append("")
        lines += format_summary(c, title(c))
        lines += under_summary(c) if under_summary else []
    if configs:
        lines += [""] + wrap(SUMMARY_NOTE)
    for c in configs:
        lines.append("")
        lines += format_workloads(c, title(c))
        spread = format_seed_spread(c, title(c))
        lines += [""] + spread if spread else []
    if configs:
        lines += [""] + wrap(workloads_note)
    return lines


def _fold(name, width):
    """A column's name on as many lines as it takes, cut after '-' or at spaces."""
    parts, cur = [], ""
    for piece in name.replace("-", "- ").split(" "):
        if not piece:
            continue
        joined = cur + ("" if cur.endswith("-") or not cur else " ") + piece
        if cur and len(joined) > width:
            parts.append(cur)
            cur = piece
        else:
            cur = joined
    parts.append(cur)
    return [p[i:i + width] for p in parts for i in range(0, len(p), width)]


def _blocks(cols, room):
    """The columns cut into the fewest blocks that fit room, as even in count as they can be."""
    greedy, cur = [], []
    for c in cols:
        if cur and sum(w for w, _, _ in cur) + c[0] > room:
            greedy.append(cur)
            cur = []
        cur.append(c)
    greedy.append(cur)
    k = len(greedy)
    per = -(-len(cols) // k)
    even = [cols[i:i + per] for i in range(0, len(cols), per)]
    if len(even) == k and all(sum(w for w, _, _ in b) <= room for b in even):
        return even
    return greedy
