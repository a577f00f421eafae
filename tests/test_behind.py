"""scripts/behind.py (results/quality/behind.txt): each rule that names why harmonia is behind fires on
figures made up so that it, and no rule before it, holds; the figures come from simulate's counters
as their definitions say; the workloads it takes apart are quality_targets' list."""
import importlib
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the best policy's figures; harmonia's below are these with some changed
BEST = dict(norm=2.0, lat=40.0, read=30.0, write=10.0, wait=1.0, sync=0.5, bg=0.5, hit=0.30, slow=0.70, fw=0.9,
            wslow=0.1, prom=100.0, ev=100.0, forced=100.0, own=100.0, syncev=0.0, wasted=0.5, unread=0.1, copy=5.0,
            copy_slow=3.0)


@pytest.fixture
def behind(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts"))
    sys.modules.pop("behind", None)
    return importlib.import_module("behind")


def harmonia(**changes):
    return dict(BEST, **changes)


@pytest.mark.parametrize("h, rule", [
    (harmonia(lat=39.0, read=29.0), "R0"),
    # 4 us/req slower, 3 of them waits
    (harmonia(lat=44.0, read=32.0, write=12.0, wait=4.0), "R1"),
    # reads 4 us/req slower with 10 points fewer hits, twice the promotions, 60% wasted
    (harmonia(lat=44.0, read=34.0, hit=0.20, slow=0.80, prom=200.0, wasted=0.6), "R2"),
    # the same with half the promotions
    (harmonia(lat=44.0, read=34.0, hit=0.20, slow=0.80, prom=50.0), "R3"),
    # twice the promotions but few wasted: neither pollution nor too few
    (harmonia(lat=44.0, read=34.0, hit=0.20, slow=0.80, prom=200.0, wasted=0.1), "R4"),
    (harmonia(lat=44.0, read=34.0, copy=9.0), "R5"),
    (harmonia(lat=44.0, write=14.0, fw=0.5), "R6"),
    (harmonia(lat=44.0, write=14.0, fw=1.0), "R7"),
    (harmonia(lat=44.0, write=14.0, fw=0.92), "R8"),
])
def test_each_rule(behind, h, rule):
    got, text = behind.cause(h, BEST)
    assert got == rule, text


def test_pollution_line_names_the_figures(behind):
    _, text = behind.cause(harmonia(lat=44.0, read=34.0, hit=0.20, slow=0.80, prom=200.0, wasted=0.6), BEST)
    assert "2.0x its promotions" in text and "60% of them moved down unread" in text and "20.0% vs 30.0%" in text


def test_figures_from_a_result(behind):
    r = dict(requests=1000, reads=600, avg_latency_us=50.0, read_latency_us=40.0, sync_wait_us=1.0,
             background_wait_us=2.0, read_pages=[300, 100, 600], write_pages=[100, 100, 200],
             fast_write_share=0.25, promotions=200,
             evictions=300, fallback_evictions=100, sync_evictions=5, promotions_wasted=50, promoted_unread=20,
             background_busy_us=[1.0, 2.0, 3.0])
    f = behind.figures(r, 10.0)
    assert f["norm"] == 5.0 and f["read"] == 24.0 and f["write"] == 26.0 and f["wait"] == 3.0
    assert f["hit"] == 0.3 and f["slow"] == 0.6 and f["wslow"] == 0.5
    assert f["prom"] == 200.0 and f["ev"] == 300.0 and f["own"] == 400.0
    assert f["wasted"] == 0.25 and f["unread"] == 0.1 and f["copy"] == 6.0 and f["copy_slow"] == 3.0


def test_misses_are_quality_targets_list(behind):
    norm = {"a": {"fast-only": 1, "oracle": 1, "lru": 2.0, "harmonia": 2.1},     # +5%: behind
            "b": {"fast-only": 1, "oracle": 1, "lru": 2.0, "harmonia": 2.05},    # +2.5%: not
            "c": {"fast-only": 1, "oracle": 1, "lru": 2.0, "harmonia": 3.0}}     # +50%, short: not counted
    summary = {"normalized_avg_latency": {"h": norm}, "workloads": list(norm), "long_workloads": ["a", "b"],
               "policies": ["fast-only", "oracle", "lru", "harmonia"]}
    got = behind.misses(summary, "h")
    assert [(w, best) for w, _, best in got] == [("a", "lru")] and abs(got[0][1] - 0.05) < 1e-9


def test_too_few_promotions_and_stalls_lines(behind):
    _, text = behind.cause(harmonia(lat=44.0, read=34.0, hit=0.20, slow=0.80, prom=0.5), BEST)
    assert "1/200 of its promotions (0.5 vs 100.0 per 1k req; own moves 100.0 vs 100.0)" in text
    # 2 us/req of sync waits over 4 sync evictions per 1k requests: 500 us each, against the best's 0.5 over none
    _, text = behind.cause(harmonia(lat=44.0, write=14.0, wait=4.0, sync=2.0, syncev=4.0), BEST)
    assert "sync evictions 4.00 vs 0.00 per 1k req, 500.0 vs 0.0 us waited for each" in text
