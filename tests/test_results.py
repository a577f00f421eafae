"""hbl compare's first screen and its data: no line over 100 columns, the summary's figures those
recomputed from `--out` by hand, hbl.results.load the same frame from every file hbl writes, and
the example of docs/results.md computing the summary from it."""
import csv
import json
import math
import os
import re

import pytest

from hbl.experiments import results
from hbl.errors import HblError

from helpers import hbl as run_hbl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPARE = ["compare", "--trace", "bundled:mds_0", "--trace", "synth:zipf:requests=20000,pages=5000",
           "--trace", "synth:web:requests=20000", "--hss", "perf,cost", "--policies", "lru,smq,cde,oracle,harmonia",
           "--seeds", "2", "--quiet"]
HEURISTICS = ("lru", "smq", "cde")


def hbl(*args):
    return run_hbl(*args, cwd=ROOT)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    d = tmp_path_factory.mktemp("compare")
    text = hbl(*COMPARE, "--out", str(d / "runs.csv"), "--output", str(d / "summary.json")).stdout
    return d, text


def by_hand(path):
    """The summary's figures from the runs table, with nothing of hbl's."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    lat = {}
    for r in rows:
        lat.setdefault((r["hss"], r["workload"], r["policy"]), {})[int(r["seed"])] = float(r["avg_latency_us"])
    out = {}
    for hss in {r["hss"] for r in rows}:
        wls = sorted({w for h, w, _ in lat if h == hss})
        pols = sorted({p for h, _, p in lat if h == hss})
        norm = {p: {w: {s: x / lat[(hss, w, "fast-only")][1] for s, x in lat[(hss, w, p)].items()} for w in wls}
                for p in pols}
        mean = {p: {w: sum(v.values()) / len(v) for w, v in norm[p].items()} for p in pols}
        geo = {p: math.exp(sum(math.log(x) for x in mean[p].values()) / len(wls)) for p in pols}
        best = min(HEURISTICS, key=geo.get)
        beaten = {p for (h, w, p), seeds in lat.items() if h == hss and p not in ("fast-only", "oracle")
                  and min(seeds.values()) < lat[(hss, w, "oracle")][1] * (1 - 1e-9)}
        fig = {}
        for p in pols:
            seeds = sorted(norm[p][wls[0]])
            per_seed = [math.exp(sum(math.log(norm[p][w][s]) for w in wls) / len(wls)) for s in seeds]
            fig[p] = dict(geomean=geo[p], spread=(min(per_seed), max(per_seed)) if len(seeds) > 1 else None,
                          vs=geo[p] / geo[best] - 1,
                          gap=None if p in ("fast-only", "oracle") else "!" if p in beaten or best in beaten else
                          (geo[best] - geo[p]) / (geo[best] - geo["oracle"]),
                          wl=None if p == best else "%d/%d" % (
                              sum(mean[p][w] < mean[best][w] * (1 - 1e-9) for w in wls),
                              sum(mean[p][w] > mean[best][w] * (1 + 1e-9) for w in wls)))
        out[hss] = best, fig
    return out


def printed_summaries(text):
    """{hss: (the best policy's name in the header, {policy: cells})} from the text's summaries."""
    out, lines = {}, text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"HSS (\w+) \(.*\), \d+ workloads: geomean", line)
        if not m:
            continue
        head = lines[i + 1].split()
        assert head[:3] == ["policy", "geomean", "min-max"] and head[3] == "vs"
        rows = {}
        for row in lines[i + 2:]:
            if not row.strip():
                break
            toks = row.split()
            spread = toks[2] if len(toks) == 6 else None
            rows[toks[0]] = dict(geomean=float(toks[1]), spread=spread, vs=toks[-3], gap=toks[-2], wl=toks[-1])
        out[m.group(1)] = head[4], rows
    return out


def test_the_first_screen_fits_100_columns_and_holds_the_data(compared):
    d, text = compared
    assert max(len(x) for x in text.splitlines()) <= 100
    want, got = by_hand(d / "runs.csv"), printed_summaries(text)
    assert set(got) == {"perf", "cost"}
    for hss, (best, fig) in want.items():
        shown_best, rows = got[hss]
        assert shown_best == best
        assert list(rows) == sorted(fig, key=lambda p: fig[p]["geomean"])
        for p, f in fig.items():
            r = rows[p]
            assert abs(r["geomean"] - f["geomean"]) <= 0.0051, (hss, p)
            if p in ("harmonia",):
                lo, hi = (float(x) for x in r["spread"].split("-"))
                assert abs(lo - f["spread"][0]) <= 0.0051 and abs(hi - f["spread"][1]) <= 0.0051
            else:
                assert r["spread"] is None
            assert r["vs"] == "-" if p == best else abs(float(r["vs"].rstrip("%")) - 100 * f["vs"]) <= 0.051
            if f["gap"] is None or f["gap"] == "!":
                assert r["gap"] == ("-" if f["gap"] is None else "!"), (hss, p)
            else:
                assert abs(float(r["gap"].rstrip("%")) - 100 * f["gap"]) <= 0.51, (hss, p)
            assert r["wl"] == (f["wl"] or "-")
    # then the per-workload tables: every workload a row
    for w in ("mds_0", "zipf*", "web*"):
        assert re.search(r"^%s\s+\d" % re.escape(w), text, re.M)


def test_wide_keeps_the_one_table(compared):
    d, _ = compared
    wide = hbl("compare", "--from-json", str(d / "summary.json"), "--wide").stdout
    assert re.search(r"^policy\s+mds_0\s+zipf\*\s+web\*\s+geomean\s+mean\s+p99 us\s+migr\.", wide, re.M)


def test_load_gives_one_frame_from_every_file(compared):
    d, _ = compared
    csv_frame = results.load(str(d / "runs.csv"))
    summary = json.loads((d / "summary.json").read_text())
    assert len(csv_frame) == len(summary["results"]) == 2 * 3 * (5 + 2)   # hss x workloads x (policies, harmonia twice)
    assert {"hss", "workload", "policy", "variant", "seed", "normalized_avg_latency", "avg_latency_us",
            "p99_latency_us", "used_pages.0", "replay.mode"} <= set(csv_frame.columns)
    assert (csv_frame[csv_frame.policy == "fast-only"].normalized_avg_latency == 1.0).all()
    key = ["hss", "workload", "policy", "seed"]
    frames = {"json summary": results.load(str(d / "summary.json"))}
    for ext in ("json", "parquet"):
        if ext == "parquet" and not results.parquet_available():
            continue
        hbl("compare", "--from-json", str(d / "summary.json"), "--out", str(d / ("runs." + ext)))
        frames[ext] = results.load(str(d / ("runs." + ext)))
    base = csv_frame.sort_values(key).reset_index(drop=True)
    for name, frame in frames.items():
        frame = frame.sort_values(key).reset_index(drop=True)
        assert list(frame[key].itertuples(index=False)) == list(base[key].itertuples(index=False)), name
        for col in ("normalized_avg_latency", "avg_latency_us", "promotions"):
            assert frame[col].tolist() == pytest.approx(base[col].tolist()), (name, col)


def test_the_docs_example_computes_the_summary(compared, monkeypatch):
    d, _ = compared
    with open(os.path.join(ROOT, "docs", "results.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(d)
    ns = {}
    for code in blocks:
        exec(compile(code, "docs/results.md", "exec"), ns)
    summary = json.loads((d / "summary.json").read_text())
    for hss, rows in summary["summary"].items():
        table = ns["summary"][hss]
        assert list(table.index) == [r["variant"] for r in rows]
        for r in rows:
            got = table.loc[r["variant"]]
            assert got.geomean == pytest.approx(r["geomean"])
            assert got.vs_best == pytest.approx(r["vs_best"])
            if r.get("oracle_gap_closed") is not None:
                assert got.gap_closed == pytest.approx(r["oracle_gap_closed"])
            if "wins" in r:
                assert (got.wins, got.losses) == (r["wins"], r["losses"])
        for p, s in summary["seed_spread"][hss].items():
            assert tuple(ns["spread"].loc[(hss, p)]) == pytest.approx((s["geomean_min"], s["geomean_max"]))
    assert len(ns["beats"]) == len(summary["beats_oracle"])


def test_a_sweep_loads_like_a_comparison(tmp_path):
    pytest.importorskip("distributed", reason="hbl sweep needs the sweep extra")
    hbl("sweep", "--trace", "synth:zipf:requests=5000,pages=2000", "--trace", "bundled:mds_0", "--hss", "cost",
        "--policies", "fast-only,lru,smq", "--param-grid", "smq.promote=2,8", "--seeds", "2", "--out",
        str(tmp_path), "--workers", "2", "--quiet")
    frame = results.load(str(tmp_path))
    assert len(frame) == 2 * 4 * 2      # traces x (fast-only, lru, smq twice) x seeds
    assert set(frame.variant) == {"fast-only", "lru", "smq promote=2", "smq promote=8"}
    assert set(frame.workload) == {"zipf*", "mds_0"}
    rep = json.loads(hbl("sweep", "report", str(tmp_path), "--json").stdout)["configs"]["cost"]
    for (w, v), g in frame.groupby(["workload", "variant"]).normalized_avg_latency:
        assert g.mean() == pytest.approx(rep["normalized"][w][v]["mean"])
    table = results.load(str(tmp_path / "results.csv"))
    assert sorted(table.normalized_avg_latency) == pytest.approx(sorted(frame.normalized_avg_latency))


def test_bad_files_are_clear_errors(tmp_path, monkeypatch):
    with pytest.raises(HblError, match="not a result hbl writes"):
        results.load(str(tmp_path / "x.txt"))
    with pytest.raises(HblError, match="not a sweep directory"):
        results.load(str(tmp_path))
    (tmp_path / "x.json").write_text('{"a": 1}')
    with pytest.raises(HblError, match="neither hbl compare's --output nor a table of runs"):
        results.load(str(tmp_path / "x.json"))
    (tmp_path / "t.json").write_text('[{"requests": 10000, "avg_latency_us": 5.0}]')   # a simulate --timeline
    with pytest.raises(HblError, match="neither hbl compare's --output nor a table of runs"):
        results.load(str(tmp_path / "t.json"))      # was KeyError: 'trace'
    from hbl import cli
    monkeypatch.setattr(results, "parquet_available", lambda: False)
    assert cli.main(["compare", "--out", str(tmp_path / "r.parquet"), "--trace", "bundled:mds_0"]) == 2
    assert cli.main(["compare", "--out", str(tmp_path / "r.xlsx"), "--trace", "bundled:mds_0"]) == 2
