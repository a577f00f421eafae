"""The papers' figures, drawn at the width of one column of a paper (3.3 in, text at 7 pt or more):
the average latency per workload normalized to Fast-Only (a figure per HSS), the geomean summary
(a panel per HSS), the learning curve of a run and the live device's timeline.

Every function returns matplotlib Figures; hbl/experiments/plot.py finds what a result file holds and saves
them. A policy keeps its colour and marker in every figure of a result: the marker says its group
(square and triangles: the references, circle: a heuristic, diamond: a learning policy), the
colour is Okabe and Ito's palette, safe for the common colour blindnesses; past seven the policies
continue with hollow markers, then half-filled ones, so 21 policies and 10 references stay apart.
A learning policy's point is its mean over the seeds, with a bar from its best to its worst seed."""
from hbl.experiments import tables
from hbl.errors import HblError

WIDTH_IN = 3.3
FONT_PT = 7
# Okabe & Ito (2008), black left out: it marks the references
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
REFERENCE_MARKERS = ("s", "^", "v", "P", "X")
RC = {"font.size": FONT_PT, "axes.titlesize": FONT_PT + 1, "axes.labelsize": FONT_PT,
      "xtick.labelsize": FONT_PT, "ytick.labelsize": FONT_PT, "legend.fontsize": FONT_PT,
      "figure.titlesize": FONT_PT + 1, "axes.linewidth": 0.6, "xtick.major.width": 0.6,
      "ytick.major.width": 0.6, "xtick.minor.width": 0.4, "lines.linewidth": 1.0,
      "legend.frameon": False, "legend.handletextpad": 0.3, "legend.columnspacing": 0.9,
      "svg.fonttype": "path", "savefig.dpi": 300, "savefig.bbox": "tight", "savefig.pad_inches": 0.02}


def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise HblError("figures need matplotlib: pip install 'hbl[plot]' (scripts/bootstrap.sh installs it)") from None
    return plt


SLOW_ONLY = "slow-only"    # the ceiling, as Fast-Only is the floor: a reference too


def group(policy):
    if policy in tables.REFERENCES or policy == SLOW_ONLY:
        return "reference"
    return "learning" if policy in tables.LEARNING else "heuristic"


def styles(policy_of):
    """{variant: matplotlib marker keywords}, in the order of policy_of, the same in every figure."""
    out, count = {}, {"reference": 0, "contender": 0}
    for v, p in policy_of.items():
        g = group(p)
        kind = "reference" if g == "reference" else "contender"
        i = count[kind]
        count[kind] += 1
        if g == "reference":
            shade = ("black", "0.45")[i // len(REFERENCE_MARKERS) % 2]
            out[v] = dict(marker=REFERENCE_MARKERS[i % len(REFERENCE_MARKERS)], color=shade,
                          markerfacecolor=shade, markeredgecolor=shade)
            continue
        colour = PALETTE[i % len(PALETTE)]
        fill = ("full", "none", "left")[i // len(PALETTE) % 3]
        out[v] = dict(marker="o" if g == "heuristic" else "D", color=colour, markeredgecolor=colour,
                      markerfacecolor=colour, fillstyle=fill, markerfacecoloralt="white")
    return out


def _log_axis(ax, which="x"):
    """A log axis labelled in plain numbers, 3 to 7 of them whether it spans a decade or five."""
    from matplotlib.ticker import FixedLocator, NullFormatter
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    lo, hi = sorted(ax.get_xlim() if which == "x" else ax.get_ylim())
    for steps in ((1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8), (1, 1.5, 2, 3, 5, 7), (1, 2, 5), (1, 3), (1,)):
        ticks = _ticks(lo, hi, steps)
        if len(ticks) <= 6:
            break
    if len(ticks) > 6:
        ticks = ticks[::-(-len(ticks) // 6)]
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(_plain)
    axis.set_minor_formatter(NullFormatter())


def _ticks(lo, hi, steps):
    import math
    out = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        out += [s * 10.0 ** e for s in steps if lo <= s * 10.0 ** e <= hi]
    return out


def _plain(x, _pos=None):
    return "%g" % x if x >= 0.01 else "%.0e" % x


def _spread(stats, policy):
    """The bar of a point: min-max over the seeds, for a learning policy run more than once."""
    if policy not in tables.LEARNING or stats["n"] < 2:
        return None
    return stats["mean"] - stats["min"], stats["max"] - stats["mean"]


def _point(ax, x, y, err, style, label=None):
    err = None if err is None else [[max(err[0], 0.0)], [max(err[1], 0.0)]]   # a mean rounds past its min
    ax.errorbar([x], [y], xerr=err, linestyle="none", markersize=3.6,
                markeredgewidth=0.7, elinewidth=0.7, capsize=1.2, label=label, **style)


def latency(c, title, style):
    """One HSS: a row per workload (and the geomean at the foot), a point per policy, dodged
    within the row; Fast-Only, 1 by definition, is the dotted line."""
    plt = pyplot()
    vs = [v for v in c["variants"] if v != tables.BASELINE]
    wl = c["workloads"]
    ncol = 3
    legend_rows = -(-len(vs) // ncol)
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(WIDTH_IN, 0.55 + 0.11 * legend_rows + 0.19 * (len(wl) + 1)), layout="constrained")
        offsets = [0.0] if len(vs) == 1 else [-0.36 + 0.72 * i / (len(vs) - 1) for i in range(len(vs))]
        for v, dy in zip(vs, offsets):
            policy = c["policies"][v]
            first = True
            for y, w in enumerate(wl):
                s = c["normalized"][w].get(v)
                if s is not None:
                    _point(ax, s["mean"], y + dy, _spread(s, policy), style[v], v if first else None)
                    first = False
            if v in c["geomean"]:
                g = sorted(c["seed_geomeans"][v].values())
                err = (c["geomean"][v] - g[0], g[-1] - c["geomean"][v]) if policy in tables.LEARNING and \
                    len(g) > 1 else None
                _point(ax, c["geomean"][v], len(wl) + dy, err, style[v], v if first else None)
        ax.axvline(1.0, color="0.5", linestyle=":", linewidth=0.7)
        ax.axhline(len(wl) - 0.5, color="0.3", linewidth=0.5)
        for y in range(len(wl)):
            ax.axhspan(y - 0.5, y + 0.5, color="0.93" if y % 2 else "white", zorder=-1, linewidth=0)
        ax.set_yticks(range(len(wl) + 1), wl + ["geomean"])
        ax.set_ylim(len(wl) + 0.5, -0.5)
        _log_axis(ax)
        ax.set_xlabel("average latency / Fast-Only (log; lower is better)")
        ax.set_title(title, loc="left")
        ax.tick_params(axis="y", length=0)
        fig.legend(*ax.get_legend_handles_labels(), loc="outside upper center", ncol=ncol, handlelength=1.2)
    return fig


def geomean(configs, titles, style):
    """A panel per HSS: every policy's geomean over the workloads, sorted, learning policies with
    the min-max of their seeds' geomeans; the dashed line and bold name: the best non-learning policy."""
    plt = pyplot()
    configs = [(c, t) for c, t in zip(configs, titles) if c["rows"]]
    if not configs:
        raise HblError("nothing to draw: no policy ran on every workload with a %s run" % tables.BASELINE)
    heights = [len([r for r in c["rows"] if r["variant"] != tables.BASELINE]) * 0.13 + 0.45 for c, _ in configs]
    with plt.rc_context(RC):
        fig, axes = plt.subplots(len(configs), 1, figsize=(WIDTH_IN, sum(heights) + 0.1), squeeze=False,
                                 gridspec_kw=dict(height_ratios=heights), layout="constrained")
        for ax, (c, title) in zip(axes[:, 0], configs):
            rows = [r for r in c["rows"] if r["variant"] != tables.BASELINE]
            for y, r in enumerate(rows):
                err = None
                if r["policy"] in tables.LEARNING and r["seeds"] > 1:
                    err = (r["geomean"] - r["geomean_min"], r["geomean_max"] - r["geomean"])
                _point(ax, r["geomean"], y, err, style[r["variant"]])
            ax.set_yticks(range(len(rows)), [r["variant"] for r in rows])
            ax.set_ylim(len(rows) - 0.5, -0.5)
            for tick, r in zip(ax.get_yticklabels(), rows):
                if r["variant"] == c["best"]:
                    tick.set_fontweight("bold")
            if c["best"]:
                ax.axvline(c["geomean"][c["best"]], color="0.4", linestyle="--", linewidth=0.7)
            _log_axis(ax)
            ax.grid(axis="x", which="major", color="0.88", linewidth=0.5)
            ax.set_axisbelow(True)
            ax.tick_params(axis="y", length=0)
            ax.set_title("%s, %d workload%s%s" % (title, len(c["workloads"]), "" if len(c["workloads"]) == 1 else "s",
                                                 "; best non-learning: %s" % c["best"] if c["best"] else ""),
                         loc="left", fontsize=FONT_PT)
        axes[-1, 0].set_xlabel("geomean of average latency / Fast-Only (log; lower is better)")
    return fig


def timeline(rows, title):
    """hbl simulate --timeline: the average latency and the read hit ratio of each window."""
    plt = pyplot()
    x = [r["requests"] / 1e3 for r in rows]
    with plt.rc_context(RC):
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(WIDTH_IN, 2.4), sharex=True, layout="constrained")
        top.plot(x, [r["avg_latency_us"] for r in rows], color=PALETTE[0])
        top.set_ylabel("avg latency (us)")
        _log_axis(top, "y")
        bottom.plot(x, [r["read_hit_ratio"] for r in rows], color=PALETTE[1])
        bottom.set_ylabel("read hit ratio")
        bottom.set_ylim(0, 1.02)
        bottom.set_xlabel("requests (thousands), a point per window")
        top.set_title(title, loc="left")
        for ax in (top, bottom):
            ax.grid(color="0.9", linewidth=0.5)
    return fig


LEARNING_COLOURS = {"pretrained": PALETTE[0], "untrained": PALETTE[1]}


def learning(curves, every):
    """scripts/learning_timeline.py's curves, {(trace, hss, agents): {seed: [(requests, ratio)]}}:
    a panel per workload (rows) and HSS (columns), the latency per window over the final agents'
    on the same requests, mean over the seeds and their min-max as a band."""
    plt = pyplot()
    traces = list(dict.fromkeys(t for t, _, _ in curves))
    hss = list(dict.fromkeys(h for _, h, _ in curves))
    names = tables.labels(traces)
    with plt.rc_context(RC):
        fig, axes = plt.subplots(len(traces), len(hss), figsize=(WIDTH_IN, 0.35 + 0.85 * len(traces)),
                                 squeeze=False, sharex="row", sharey=True, layout="constrained")
        for i, t in enumerate(traces):
            for j, h in enumerate(hss):
                ax = axes[i, j]
                for agents, colour in LEARNING_COLOURS.items():
                    seeds = curves.get((t, h, agents))
                    if not seeds:
                        continue
                    n = min(len(c) for c in seeds.values())
                    x = [seeds[min(seeds)][k][0] / 1e3 for k in range(n)]
                    ys = [[c[k][1] for c in seeds.values()] for k in range(n)]
                    ax.fill_between(x, [min(y) for y in ys], [max(y) for y in ys], color=colour, alpha=0.25,
                                    linewidth=0)
                    ax.plot(x, [sum(y) / len(y) for y in ys], color=colour, linewidth=0.8,
                            label="%s (%d seeds)" % (agents, len(seeds)))
                ax.axhline(1.0, color="0.4", linestyle=":", linewidth=0.6)
                ax.set_yscale("log")
                ax.set_title("%s, %s" % (names[t], h), loc="left", fontsize=FONT_PT, pad=2)
        for ax in axes.flat:
            ax.yaxis.set_major_formatter(_plain)
            ax.yaxis.set_minor_formatter(_plain_minor)
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside upper center", ncol=2)
        fig.supxlabel("requests (thousands)", fontsize=FONT_PT)
        fig.supylabel("latency / the final agents' on the same %d requests (log)" % every, fontsize=FONT_PT)
    return fig


def _plain_minor(x, _pos=None):
    return "%g" % x if round(x, 6) in (0.5, 2.0, 5.0) else ""


LIVE_WINDOW_S = 5.0     # the controller's timeline window (hbl/live/controller.py)


def live(series):
    """The live device's timeline, {configuration: [{t, requests, read_hit_ratio}]} as `hbl status
    --json` keeps it (a row per 5 s window): IOPS and the read hit ratio over time."""
    plt = pyplot()
    with plt.rc_context(RC):
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(WIDTH_IN, 2.6), sharex=True, layout="constrained")
        for i, (name, rows) in enumerate(series.items()):
            colour = PALETTE[i % len(PALETTE)]
            t, iops, hits = [], [], []
            prev = rows[0]["t"] - min(rows[0]["t"], LIVE_WINDOW_S) if rows else 0.0
            for r in rows:
                span = r["t"] - prev
                prev = r["t"]
                if span > 0:
                    t.append(r["t"])
                    iops.append(r["requests"] / span)
                    hits.append(r.get("read_hit_ratio"))
            top.plot(t, iops, color=colour, label=name)
            bottom.plot(t, [float("nan") if h is None else h for h in hits], color=colour)
        top.set_ylabel("IOPS")
        bottom.set_ylabel("read hit ratio")
        bottom.set_ylim(0, 1.02)
        bottom.set_xlabel("time since the device came up (s)")
        for ax in (top, bottom):
            ax.grid(color="0.9", linewidth=0.5)
        fig.legend(*top.get_legend_handles_labels(), loc="outside upper center", ncol=min(3, len(series)))
    return fig
