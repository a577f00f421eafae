"""The one experiment engine (hbl/experiments/engine.py): `hbl compare` is a preset grid of it, run on local
processes without Dask; its runs are the engine's cells, as a sweep of the same cells computes
them; a failing cell is recorded, or with strict raised."""
import subprocess
import sys

import pytest

from hbl.experiments import engine
from hbl.experiments.compare import CompareGrid, compare
from hbl.errors import HblError

TRACE = "synth:zipf:requests=3000,pages=1500"
NOT_COMPARED = {"requests_per_second", "trace", "workload", "seed"}   # timing; what compare names itself


def test_the_compare_preset_seeds_only_the_learning_policies_and_cuts_captures():
    g = CompareGrid(traces=["bundled:hm_0", "workload:sqlite"], hss=["cost", "perf"],
                    policies=["fast-only", "lru", "sibyl"], seeds=[4, 5, 6], seed=4, capture_requests=100)
    cells = list(g.cells())
    assert len(cells) == 2 * 2 * (1 + 1 + 3)
    assert {c["seed"] for c in cells if c["policy"] == "sibyl"} == {4, 5, 6}
    assert {c["seed"] for c in cells if c["policy"] != "sibyl"} == {4}
    assert (g.limit_of("workload:sqlite"), g.limit_of("bundled:hm_0")) == (100, None)
    plain = engine.Grid(traces=g.traces, hss=g.hss, policies=g.policies, seeds=g.seeds)
    assert len(list(plain.cells())) == 2 * 2 * 3 * 3 and plain.limit_of("workload:sqlite") is None
    # the order: trace, HSS, policy, seed
    assert [(c["trace"], c["hss"], c["policy"]) for c in cells][:3] == [
        ("bundled:hm_0", "cost", "fast-only"), ("bundled:hm_0", "cost", "lru"), ("bundled:hm_0", "cost", "sibyl")]


def test_compare_runs_are_the_engines_cells(tmp_path):
    s = compare(traces=[TRACE], hss_list=["cost"], policies="lru,sibyl", seeds=2, seed=3, progress=False, jobs=2,
                untrained=True)
    grid = engine.Grid(traces=[TRACE], hss=["cost"], policies=["fast-only", "lru", "sibyl"], seeds=[3, 4],
                       options=dict(load_agents=False))
    traces, cells = engine.prepare(grid, grid.options, str(tmp_path), progress=False)
    recs = {(r["policy"], r["seed"]): r for r in engine.LocalPool(jobs=2).run(cells, traces, grid.options)}
    assert {(r["policy"], r["seed"]) for r in s["results"]} == {
        ("fast-only", 3), ("lru", 3), ("sibyl", 3), ("sibyl", 4)}
    for r in s["results"]:
        rec = recs[(r["policy"], r["seed"])]
        assert rec["status"] == "ok" and rec["key"] and rec["trace"] == TRACE == r["trace"]
        want = {k: v for k, v in rec["result"].items() if k not in NOT_COMPARED}
        assert {k: v for k, v in r.items() if k not in NOT_COMPARED} == want, (r["policy"], r["seed"])
    assert {r["workload"] for r in s["results"]} == {"zipf*"}


def test_a_failing_cell_is_recorded_or_with_strict_raised(tmp_path):
    grid = engine.Grid(traces=[TRACE], hss=["cost"], policies=["fast-only", "lru"],
                       param_grid={"lru.no_such_parameter": [1]})
    traces, cells = engine.prepare(grid, grid.options, str(tmp_path), progress=False)
    recs = list(engine.LocalPool(jobs=1).run(cells, traces, grid.options))
    assert sorted((r["policy"], r["status"]) for r in recs) == [("fast-only", "ok"), ("lru", "error")]
    assert "no_such_parameter" in next(r["error"] for r in recs if r["policy"] == "lru")
    with pytest.raises(HblError, match="no_such_parameter"):
        list(engine.LocalPool(jobs=1, strict=True).run(cells, traces, grid.options))


def test_compare_needs_no_dask():
    code = ("import sys; from hbl.experiments.compare import compare; "
            "compare(traces=[%r], hss_list=['cost'], policies='lru', seeds=1, progress=False, jobs=1); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('distributed', 'dask')))" % TRACE)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_a_param_reaches_the_policies_that_take_it_and_a_scoped_one_only_its_policy():
    """--param promote=8 goes to smq (which takes promote) but not to fast-only or lru (which
    would refuse it); smq.promote=8 only to smq; a name no policy takes, or a scope that is not in
    the run, is refused before any run (it was dropped, or failed every cell, before)."""
    def params(given, policies=("fast-only", "lru", "smq")):
        g = engine.Grid(traces=[TRACE], hss=["cost"], policies=list(policies), seeds=[1],
                        options=dict(params=given))
        g.check()
        return {c["policy"]: c["params"] for c in g.cells()}
    want = {"fast-only": {}, "lru": {}, "smq": {"promote": 8.0}}
    assert params(["promote=8"]) == want
    assert params(["smq.promote=8"]) == want
    # the scoped one is the more specific and wins over NAME whatever their order (the last one won)
    assert params(["smq.promote=8", "promote=4"]) == want == params(["promote=4", "smq.promote=8"])
    assert params(["smq.promote=8", "promote=4"], ("smq", "nhit"))["smq"] == {"promote": 8.0}
    with pytest.raises(HblError, match="policy lru is not in this run"):
        params(["lru.promote=3"], ("fast-only", "smq"))
    with pytest.raises(HblError, match="no policy in this run takes it"):
        params(["prmote=8"])


def test_simulate_refuses_a_param_scoped_to_another_policy():
    from hbl.sim.registry import parse_params
    assert parse_params(["smq.promote=8"], "smq") == {"promote": 8.0}
    assert parse_params(["smq.promote=8", "promote=4"], "smq") == {"promote": 8.0}
    with pytest.raises(HblError, match="for policy smq, not lru"):
        parse_params(["smq.promote=8"], "lru")
