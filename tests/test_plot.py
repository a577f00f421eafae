"""hbl plot: the figures of a small comparison (two bundled traces, harmonia over two seeds), of a
timeline, a learning study and a live device, at one column's width with text of 7 pt or more;
the min-max bars are the seeds' own; bad input is one line."""
import json
import math
import re
import struct
import subprocess

import pytest

pytest.importorskip("matplotlib")

from hbl.experiments import figures, plot, results, tables  # noqa: E402

from helpers import HBL, hbl

POLICIES = "fast-only,slow-only,oracle,lru,cde,harmonia"


def run(*args, ok=True):
    return hbl(*args, check=ok)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A compare summary and its runs as a table: two workloads, two HSS, harmonia on seeds 1 and 2."""
    d = tmp_path_factory.mktemp("small")
    run("compare", "--trace", "bundled:mds_0", "--trace", "bundled:hm_1", "--hss", "perf,cost", "--policies",
        POLICIES, "--seeds", "2", "--quiet", "--output", str(d / "small.json"), "--out", str(d / "runs.csv"))
    return d


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_plot_writes_every_figure_in_both_formats(small, tmp_path):
    out = run("plot", str(small / "small.json"), "-o", str(tmp_path / "figs")).stdout.split()
    names = ["latency-perf", "latency-cost", "geomean"]
    assert sorted(out) == sorted(str(tmp_path / "figs" / (n + e)) for n in names for e in (".svg", ".png"))
    for n in names:
        w, _ = png_size(tmp_path / "figs" / (n + ".png"))
        assert 0.9 * 3.3 * 300 < w < 1.1 * 3.3 * 300          # one column at 300 dpi
        svg = (tmp_path / "figs" / (n + ".svg")).read_text()
        width = float(re.search(r'<svg[^>]*width="([\d.]+)pt"', svg).group(1))
        assert 0.9 * 3.3 * 72 < width < 1.1 * 3.3 * 72


def test_csv_runs_draw_the_same_figures(small, tmp_path):
    out = run("plot", str(small / "runs.csv"), "-o", str(tmp_path), "--format", "svg").stdout.split()
    assert sorted(out) == sorted(str(tmp_path / n) for n in ("latency-perf.svg", "latency-cost.svg", "geomean.svg"))


def test_one_file_names_each_figure(small, tmp_path):
    out = run("plot", str(small / "small.json"), "-o", str(tmp_path / "fig.pdf")).stdout.split()
    assert sorted(out) == sorted(str(tmp_path / ("fig-%s.pdf" % n)) for n in ("latency-perf", "latency-cost", "geomean"))
    assert (tmp_path / "fig-geomean.pdf").read_bytes()[:5] == b"%PDF-"


def _drawn(path):
    return plot.figures_of(plot.read(str(path)))


def test_column_width_and_fonts(small):
    for name, fig in _drawn(small / "small.json"):
        assert fig.get_size_inches()[0] == pytest.approx(3.3), name
        fig.canvas.draw()
        texts = [t for t in fig.findobj(match=lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
                 if t.get_text() and t.get_visible()]
        assert texts
        small_ones = [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < 7]
        assert not small_ones, (name, small_ones)


def test_bars_are_the_seeds_min_max(small):
    from matplotlib.container import ErrorbarContainer
    df = results.load(str(small / "small.json"))
    fig = dict(_drawn(small / "small.json"))["latency-perf"]
    bars = set()
    for c in fig.axes[0].containers:
        if isinstance(c, ErrorbarContainer) and c.has_xerr:
            for seg in c.lines[2][0].get_segments():
                bars.add((round(seg[0][0], 9), round(seg[1][0], 9)))
    learned = df[(df.hss == "perf") & (df.policy == "harmonia")]
    want = {(round(g.min(), 9), round(g.max(), 9)) for _, g in learned.groupby("workload").normalized_avg_latency}
    seed_geo = learned.groupby("seed").normalized_avg_latency.apply(lambda x: math.exp(sum(map(math.log, x)) / len(x)))
    want.add((round(seed_geo.min(), 9), round(seed_geo.max(), 9)))
    assert bars == want and any(lo < hi for lo, hi in bars)      # harmonia's bars only, from its two seeds


def test_styles_keep_policies_apart():
    names = ["p%d" % i for i in range(21)]
    contenders = figures.styles({n: "lru" for n in names[:11]} | {n: "harmonia" for n in names[11:]})
    keys = {(s["color"], s["fillstyle"], s["marker"]) for s in contenders.values()}
    assert len(keys) == 21
    assert len({(s["color"], s["fillstyle"]) for s in contenders.values()}) == 21   # apart by colour alone
    refs = figures.styles({p: p for p in sorted(tables.REFERENCES | {"slow-only"})})
    assert len({(s["color"], s["marker"]) for s in refs.values()}) == len(refs)
    assert not set(s["color"] for s in refs.values()) & set(figures.PALETTE)


def test_timeline_to_one_file(tmp_path):
    run("simulate", "--trace", "synth:zipf:requests=40000", "--policy", "lru", "--hss", "cost", "--timeline",
        str(tmp_path / "t.json"))
    out = run("plot", str(tmp_path / "t.json"), "-o", str(tmp_path / "tl.png")).stdout.split()
    assert out == [str(tmp_path / "tl.png")] and png_size(tmp_path / "tl.png")[0] > 800


def test_learning_and_live(tmp_path):
    curves = {"%s|%s|%s|%d" % (t, h, u, s): [[10_000 * k, 1 + 0.1 * s / k] for k in range(1, 6)]
              for t in ("workload:pgbench", "synth:hm") for h in ("perf", "cost") for u in (True, False) for s in (1, 2)}
    (tmp_path / "learning.json").write_text(json.dumps(dict(rows=[], curves=curves)))
    assert run("plot", str(tmp_path / "learning.json"), "--format", "svg").stdout.split() == [
        str(tmp_path / "learning.svg")]
    (fig_name, fig), = _drawn(tmp_path / "learning.json")
    assert fig.axes[0].get_title(loc="left") == "pgbench+, perf" and len(fig.axes) == 4
    status = dict(path="/dev/mapper/hb", policy="harmonia", read_hit_ratio=0.8,
                  timeline=[dict(t=5.0 * i, requests=4000 + 10 * i, read_hit_ratio=0.5 + 0.01 * i) for i in range(1, 30)])
    (tmp_path / "status.json").write_text(json.dumps(status))
    (_, fig), = _drawn(tmp_path / "status.json")
    iops = fig.axes[0].lines[0].get_ydata()
    assert iops[0] == pytest.approx(4010 / 5.0) and iops[-1] == pytest.approx(4290 / 5.0)


@pytest.mark.parametrize("args, message", [
    (["plot", "/nonexistent/r.json"], "/nonexistent/r.json: no such file or directory"),
    (["report", "/nonexistent/r.json", "-o", "/tmp/r.html"], "/nonexistent/r.json: no such file or directory"),
    (["plot", "results/live/live-crash.json"], "live-crash.json: not a result hbl draws"),
    (["plot", "pyproject.toml"], "pyproject.toml: not a result hbl writes"),
    (["plot", "results/quality/quality.json", "--format", "gif"], "--format gif: give some of svg,png,pdf"),
    (["plot", "results/quality/quality.json", "-o", "/nonexistent/d/x.svg"], "/nonexistent: no such directory"),
    (["plot", "results/quality/quality.json", "-o", "a.svg", "--format", "png"], "names one format by its extension"),
    (["report", "results/quality/quality.json", "-o", "/nonexistent/r.html"], "/nonexistent: no such directory"),
])
def test_bad_input_is_one_line(args, message, tmp_path):
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run(HBL + args, capture_output=True, text=True, timeout=120, cwd=root)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and message in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_live_bench_without_timeline_says_so(tmp_path):
    (tmp_path / "live-bench.json").write_text(json.dumps(dict(results={"hbl-lru": dict(iops=740.0)})))
    p = run("plot", str(tmp_path / "live-bench.json"), ok=False)
    assert p.returncode == 2 and "no timeline to draw" in p.stderr
