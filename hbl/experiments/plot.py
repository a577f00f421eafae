"""What a result file holds, as the papers' figures (hbl/experiments/figures.py): `hbl plot` and `hbl report`.

A result is one of
- runs: `hbl compare --out FILE` or `--output FILE`, a sweep's DIR or its results table, anything
  hbl.results.load reads: the latency per workload (a figure per HSS) and the geomean summary;
- a timeline: `hbl simulate --timeline FILE`, its latency and hit ratio per window;
- a learning study: scripts/learning_timeline.py --output, its curves per workload and HSS;
- a live device's timeline: `hbl status NAME --json` (or vm/guest/bench_live.py's JSON where its
  configurations carry theirs).
"""
import io
import json
import os
import re

from hbl.experiments import figures, results, tables
from hbl.errors import HblError

FORMATS = ("svg", "png", "pdf")


class Result:
    """A result file read: its kind (runs, timeline, learning, live) and what the figures need."""

    def __init__(self, path, kind, data):
        self.path, self.kind, self.data = path, kind, data

    def summaries(self):
        """runs: [(hss, summary of tables.summarize, title)], in the order the runs came."""
        rows = self.data
        order = lambda key: list(dict.fromkeys(r[key] for r in rows))
        configs = tables.summarize(rows, order("workload"), order("hss"))
        return [(c["config"], c, tables.hss_title(c["config"])) for c in configs]


def _records(frame):
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def read(path):
    """The result in path, its kind found from what it holds; an HblError naming it otherwise."""
    if not os.path.exists(path):
        raise HblError("%s: no such file or directory" % path)
    if os.path.isdir(path) or not path.lower().endswith(".json"):
        return _runs(path)
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as exc:
        raise HblError("%s: %s" % (path, exc.strerror or exc)) from None
    except ValueError as exc:
        raise HblError("%s: not JSON (%s)" % (path, exc)) from None
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        return _runs(path)
    if data == []:
        raise HblError("%s: nothing to draw: an empty list (a simulate timeline of a run shorter than one window?)"
                       % path)
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        if all("policy" in r for r in data):
            return _runs(path)
        if all({"requests", "avg_latency_us", "read_hit_ratio"} <= set(r) for r in data):
            return Result(path, "timeline", data)
    if isinstance(data, dict) and isinstance(data.get("curves"), dict):
        return Result(path, "learning", _curves(path, data["curves"]))
    if isinstance(data, dict) and isinstance(data.get("timeline"), list):
        name = "%s, %s" % (os.path.basename(str(data.get("path") or path)), data.get("policy", "?"))
        return Result(path, "live", {name: _live_rows(path, data["timeline"])})
    if isinstance(data, dict) and isinstance(data.get("results"), dict):
        series = {k: _live_rows(path, v["timeline"]) for k, v in data["results"].items()
                  if isinstance(v, dict) and isinstance(v.get("timeline"), list)}
        if not series:
            raise HblError("%s: a live bench's figures per configuration (IOPS, latency, p99) and no timeline to "
                           "draw; `hbl status NAME --json` has the device's timeline" % path)
        return Result(path, "live", series)
    raise HblError("%s: not a result hbl draws (compare or sweep runs, a simulate --timeline, a learning "
                   "study or a live device's status)" % path)


def _runs(path):
    frame = results.load(path)
    if frame.empty:
        raise HblError("%s: no finished run to draw" % path)
    return Result(path, "runs", _records(frame))


def _curves(path, curves):
    """{"trace|hss|untrained|seed": [[requests, ratio], ...]} as {(trace, hss, agents): {seed: curve}}."""
    out = {}
    for key, curve in curves.items():
        parts = key.rsplit("|", 3)
        if len(parts) != 4 or not isinstance(curve, list):
            raise HblError("%s: curve %r is not trace|hss|untrained|seed" % (path, key))
        t, h, untrained, seed = parts
        out.setdefault((t, h, "untrained" if untrained == "True" else "pretrained"), {})[seed] = curve
    return out


def _live_rows(path, rows):
    if not all(isinstance(r, dict) and {"t", "requests"} <= set(r) for r in rows):
        raise HblError("%s: a timeline row without t and requests" % path)
    return rows


def figures_of(result):
    """[(name, Figure)] of a result: latency-HSS and geomean for runs; timeline, learning or live."""
    if result.kind == "runs":
        summaries = result.summaries()
        policy_of = {}
        for _, c, _ in summaries:
            policy_of.update(c["policies"])
        style = figures.styles(policy_of)
        out = [("latency-" + slug(h), figures.latency(c, title, style)) for h, c, title in summaries
               if c["workloads"]]
        out.append(("geomean", figures.geomean([c for _, c, _ in summaries], [t for _, _, t in summaries],
                                               style)))
        return out
    if result.kind == "timeline":
        return [("timeline", figures.timeline(result.data, os.path.basename(result.path)))]
    if result.kind == "learning":
        first = next(iter(next(iter(result.data.values())).values()))
        return [("learning", figures.learning(result.data, first[0][0] if first else 0))]
    return [("live", figures.live(result.data))]


def slug(name):
    return re.sub(r"[^\w.-]+", "_", os.path.splitext(os.path.basename(name))[0])


def parse_formats(text):
    fmts = [f.strip().lower().lstrip(".") for f in text.split(",") if f.strip()]
    bad = [f for f in fmts if f not in FORMATS]
    if bad or not fmts:
        raise HblError("--format %s: give some of %s, comma-separated" % (text, ",".join(FORMATS)))
    return fmts


def targets(names, out, formats):
    """{name: [paths]}: out a directory (made if its parent exists): NAME.FORMAT for each format;
    out a file: that file for one figure, else FILE-NAME.EXT."""
    stem, ext = os.path.splitext(out)
    if ext.lower().lstrip(".") in FORMATS:
        if len(names) == 1:
            return {names[0]: [out]}
        return {n: ["%s-%s%s" % (stem, n, ext)] for n in names}
    if ext:
        raise HblError("%s: give a directory, or a file ending in %s" % (out, ", ".join("." + f for f in FORMATS)))
    return {n: [os.path.join(out, "%s.%s" % (n, f)) for f in formats] for n in names}


def check_out(out):
    """Before drawing: the directory the figures go to exists, or its parent does."""
    ext = os.path.splitext(out)[1].lower().lstrip(".")
    where = os.path.dirname(os.path.abspath(out)) if ext in FORMATS else os.path.abspath(out)
    if os.path.isfile(where):
        raise HblError("%s: is a file, not a directory" % where)
    if not os.path.isdir(where) and not os.path.isdir(os.path.dirname(where)):
        raise HblError("%s: no such directory" % os.path.dirname(where))


def save(fig, path, name):
    """A figure in path, its format from the extension; the same figure gives the same bytes (its
    SVG ids from the name, no date)."""
    plt = figures.pyplot()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fmt = os.path.splitext(path)[1].lstrip(".").lower()
    with plt.rc_context(dict(figures.RC, **{"svg.hashsalt": name})):
        fig.savefig(path, format=fmt, metadata={"Date": None} if fmt in ("svg", "pdf") else None)


def svg(fig, name):
    """A figure as an <svg> element to inline in HTML (no XML prolog)."""
    plt = figures.pyplot()
    buf = io.StringIO()
    with plt.rc_context(dict(figures.RC, **{"svg.hashsalt": name})):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def plot(path, out=None, formats=("svg", "png")):
    """Every figure of the result in path, written under out (default: beside the result):
    the list of files written."""
    result = read(path)
    out = out or (path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)))
    check_out(out)
    plt = figures.pyplot()
    drawn = figures_of(result)
    written = []
    for name, paths in targets([n for n, _ in drawn], out, formats).items():
        fig = dict(drawn)[name]
        for p in paths:
            save(fig, p, name)
            written.append(p)
    for _, fig in drawn:
        plt.close(fig)
    return written
