"""hbl sweep on Dask distributed: every cell equals `hbl simulate --json` of the same cell, a killed
sweep resumes with only the missing cells, and a cluster joined by address (loopback) runs it."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import HBL, hbl as run_hbl

pytest.importorskip("distributed", reason="hbl sweep needs the sweep extra: pip install -e '.[sweep]' "
                    "(scripts/bootstrap.sh installs it)")

BIN = os.path.dirname(sys.executable)
# wall-clock figures differ from run to run; trace is the worker's local copy of the trace
NOT_COMPARED = {"requests_per_second", "trace"}


def hbl(*args, check=True, **kw):
    return run_hbl(*args, check=check, timeout=600, **kw)


def journal(out):
    """Complete lines of the journal (a cut last line is a cell that did not finish)."""
    path = os.path.join(out, "cells.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def simulate_json(rec):
    args = ["simulate", "--json", "--trace", rec["trace"], "--hss", rec["hss"], "--policy", rec["policy"],
            "--seed", str(rec["seed"])]
    for k, v in rec["params"].items():
        args += ["--param", "%s=%r" % (k, v)]
    return json.loads(hbl(*args).stdout)


GRID = ["--trace", "synth:zipf:requests=120000", "--trace", "synth:hm:requests=120000", "--hss", "cost",
        "--policies", "fast-only,lru,smq", "--param-grid", "smq.promote=2,8", "--seeds", "2"]
CELLS = 2 * 1 * 4 * 2   # traces x hss x (fast-only, lru, smq twice) x seeds


def test_sweep_matches_simulate_and_resumes_after_a_kill(tmp_path):
    out = str(tmp_path / "sweep")
    p = subprocess.Popen(HBL + ["sweep"] + GRID + ["--out", out, "--workers", "2", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 300
    while len(journal(out)) < 3 and p.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    os.killpg(p.pid, signal.SIGKILL)    # the driver and its local cluster, as a crash would
    p.wait()
    before = {r["key"] for r in journal(out)}
    assert 0 < len(before) < CELLS, "the sweep was not killed halfway (%d of %d cells done)" % (len(before), CELLS)

    summary = json.loads(hbl("sweep", *GRID, "--out", out, "--workers", "2", "--json").stdout)
    assert summary == dict(cells=CELLS, computed=CELLS - len(before), skipped=len(before), failed=0, out=out)
    records = journal(out)
    keys = [r["key"] for r in records]
    assert len(keys) == len(set(keys)) == CELLS, "a cell ran twice or is missing"
    assert {r["key"] for r in records[len(before):]} == set(keys) - before

    for rec in records:
        assert rec["status"] == "ok", rec.get("error")
        want = simulate_json(rec)
        got = rec["result"]
        assert set(got) == set(want)
        for k in set(want) - NOT_COMPARED:
            assert got[k] == want[k], (rec["trace"], rec["policy"], rec["params"], rec["seed"], k)

    again = json.loads(hbl("sweep", *GRID, "--out", out, "--workers", "2", "--json").stdout)
    assert (again["computed"], again["skipped"]) == (0, CELLS)

    import csv
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == CELLS
    assert {"trace", "hss", "policy", "seed", "param.promote", "avg_latency_us", "used_pages.0"} <= set(rows[0])

    rep = json.loads(hbl("sweep", "report", out, "--json").stdout)["configs"]["cost"]
    by = {(r["trace"], r["policy"], json.dumps(r["params"]), r["seed"]): r["result"]["avg_latency_us"]
          for r in records}
    lru = [by[("synth:zipf:requests=120000", "lru", "{}", s)] / by[("synth:zipf:requests=120000", "fast-only", "{}", s)]
           for s in (1, 2)]
    assert rep["normalized"]["zipf*"]["lru"]["mean"] == pytest.approx(sum(lru) / 2)
    assert rep["normalized"]["zipf*"]["fast-only"]["mean"] == 1.0
    assert set(rep["variants"]) == {"fast-only", "lru", "smq promote=2", "smq promote=8"}


def test_sweep_on_a_cluster_joined_by_address(tmp_path):
    """A scheduler and two worker processes started by hand, as on two nodes (loopback here);
    a failing cell is recorded and the others run; the spec file gives the same cells."""
    sched_file = str(tmp_path / "scheduler.json")
    procs = [subprocess.Popen([os.path.join(BIN, "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", sched_file],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)]
    try:
        deadline = time.time() + 60
        while not os.path.exists(sched_file) and time.time() < deadline:
            time.sleep(0.1)
        with open(sched_file) as f:
            address = json.load(f)["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for _ in range(2):
            procs.append(subprocess.Popen([os.path.join(BIN, "dask"), "worker", address, "--host", "127.0.0.1",
                                           "--nthreads", "1", "--no-nanny", "--no-dashboard"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path))
        from distributed import Client
        with Client(address, timeout=60) as c:
            c.wait_for_workers(2, timeout=60)

        out = str(tmp_path / "out")
        grid = ["--trace", "bundled:hm_0", "--trace", "synth:web:requests=20000", "--hss", "cost",
                "--policies", "fast-only,lru", "--param-grid", "lru.no_such_parameter=1", "--seeds", "2"]
        p = hbl("sweep", *grid, "--out", out, "--address", address, "--json", check=False)
        assert p.returncode == 2, p.stderr
        summary = json.loads(p.stdout)
        assert "unknown parameter 'no_such_parameter'" in summary.pop("first_error")
        assert summary == dict(cells=8, computed=8, skipped=0, failed=4, out=out)
        records = journal(out)
        assert {r["status"] for r in records if r["policy"] == "fast-only"} == {"ok"}
        assert all("no_such_parameter" in r["error"] for r in records if r["policy"] == "lru")
        pids = {int(r["worker"].rsplit(":", 1)[1]) for r in records}
        assert pids <= {procs[1].pid, procs[2].pid}

        spec = tmp_path / "grid.toml"
        spec.write_text('traces = ["bundled:hm_0", "synth:web:requests=20000"]\nhss = ["cost"]\n'
                        'policies = ["fast-only", "lru"]\nseeds = 2\nout = "%s"\naddress = "%s"\n'
                        '[param_grid]\n"lru.no_such_parameter" = [1]\n' % (out, address))
        again = json.loads(hbl("sweep", str(spec), "--json", check=False).stdout)
        assert (again["skipped"], again["computed"], again["failed"]) == (4, 4, 4)   # failed cells are retried
    finally:    # workers first: a worker whose scheduler is gone waits to reconnect
        for proc in procs[::-1]:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_sweep_bad_input_is_one_line(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('traces = ["bundled:hm_0"]\npolicy = ["lru"]\n')
    p = hbl("sweep", str(spec), "--out", str(tmp_path / "o"), check=False)
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "unknown key policy" in p.stderr
    p = hbl("sweep", "--trace", "bundled:hm_0", "--policies", "lru", "--param-grid", "promote=a",
            "--out", str(tmp_path / "o"), check=False)
    assert p.returncode == 2 and "--param-grid" in p.stderr
    p = hbl("sweep", "report", str(tmp_path), check=False)
    assert p.returncode == 2 and "not a sweep directory" in p.stderr
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    p = hbl("sweep", "--trace", "bundled:hm_0", "--policies", "lru", "--out", str(a_file), check=False)
    assert p.returncode == 2 and "a file, not a directory" in p.stderr and "Traceback" not in p.stderr
    for plugin in ("python", "python:x.py:P"):     # every cell failed on 'needs a plugin'; 'unknown policy'
        p = hbl("sweep", "--trace", "bundled:hm_0", "--policies", "lru," + plugin, "--out", str(tmp_path / "o"),
                check=False)
        assert p.returncode == 2 and "runs in hbl simulate --policy python:FILE.py:CLASS only" in p.stderr


def test_report_takes_a_file_of_the_sweep_as_its_directory(tmp_path):
    """hbl sweep report DIR/cells.jsonl said 'DIR/cells.jsonl: not a sweep directory (no cells.jsonl)';
    hbl plot and hbl.results.load take the journal for its directory, and now report does."""
    out = str(tmp_path / "runs")
    hbl("sweep", "--trace", "bundled:hm_0", "--hss", "cost", "--policies", "fast-only,lru", "--out", out,
        "--workers", "1", "--quiet")
    by_dir = json.loads(hbl("sweep", "report", out, "--json").stdout)
    for f in ("cells.jsonl", "results.csv"):
        assert json.loads(hbl("sweep", "report", os.path.join(out, f), "--json").stdout) == by_dir
    assert by_dir["cells"] == 2 and "lru" in by_dir["configs"]["cost"]["normalized"]["hm_0"]



def test_a_failed_cell_is_named_with_its_error(tmp_path):
    """A sweep with failed cells said only '1 failed' (the error was in cells.jsonl)."""
    out = str(tmp_path / "runs")
    p = hbl("sweep", "--trace", "bundled:hm_0", "--hss", "cost", "--policies", "fast-only,smq",
            "--param-grid", "smq.promote=-1,2", "--out", out, "--workers", "1", "--quiet", "--json", check=False)
    assert p.returncode == 2 and json.loads(p.stdout)["failed"] == 1
    assert json.loads(p.stdout)["first_error"].startswith("smq on bundled:hm_0 (cost, seed 1, promote=-1): HblError")
    assert "1 cells failed" in p.stderr and "promote=-1" in p.stderr and "Traceback" not in p.stderr


TRAIN = "synth:zipf:requests=7000,pages=4000"    # a training family (hbl/trace/split.py)


def test_tune_searches_on_training_workloads_only(tmp_path):
    pytest.importorskip("optuna", reason="hbl sweep tune needs the tune extra: pip install -e '.[tune]'")
    out = str(tmp_path / "tune")
    args = ["sweep", "tune", "--trace", TRAIN, "--test", "synth:web:requests=5000", "--policies", "sibyl",
            "--space", "lr=1e-4:1e-1:log", "--trials", "3", "--out", out, "--workers", "2", "--json"]
    r = json.loads(hbl(*args).stdout)
    records = journal(out)
    by = {(rec["trace"], rec["policy"], json.dumps(rec["params"], sort_keys=True)): rec for rec in records}
    base = by[(TRAIN, "fast-only", "{}")]["result"]["avg_latency_us"]
    assert len(r["trials"]) == 3
    for t in r["trials"]:
        cell = by[(TRAIN, "sibyl", json.dumps(t["params"], sort_keys=True))]
        assert t["value"] == pytest.approx(cell["result"]["avg_latency_us"] / base)
    assert r["best_train_value"] == min(t["value"] for t in r["trials"])
    on_test = {json.dumps(rec["params"], sort_keys=True) for rec in records
               if rec["trace"] != TRAIN and rec["policy"] == "sibyl"}
    assert on_test == {"{}", json.dumps(r["best_params"], sort_keys=True)}, "the search saw the test workload"
    again = json.loads(hbl(*args).stdout)
    assert again["trials"] == r["trials"] and len(journal(out)) == len(records)   # replayed, nothing recomputed
    p = hbl("sweep", "tune", "--trace", TRAIN, "--test", TRAIN, "--policies", "sibyl",
            "--space", "lr=1e-4:1e-1:log", "--out", out, check=False)
    assert p.returncode == 2 and "must not be training workloads" in p.stderr
    p = hbl("sweep", "tune", "--trace", "bundled:hm_0", "--policies", "sibyl", "--space", "lr=1e-4:1e-1:log",
            "--out", out, check=False)
    assert p.returncode == 2 and "bundled:hm_0 is an evaluation workload" in p.stderr


def test_tune_sampler_seed_decides_the_trials_and_is_recorded(tmp_path):
    pytest.importorskip("optuna", reason="hbl sweep tune needs the tune extra: pip install -e '.[tune]'")
    def run(seed, name):
        return json.loads(hbl("sweep", "tune", "--trace", TRAIN, "--policies", "sibyl", "--space",
                              "lr=1e-4:1e-1:log", "--trials", "2", "--out", str(tmp_path / name), "--workers", "1",
                              "--sampler-seed", str(seed), "--json", "--quiet").stdout)
    a, b, c = run(1, "a"), run(2, "b"), run(2, "c")
    assert (a["sampler_seed"], b["sampler_seed"]) == (1, 2)
    assert [t["params"] for t in b["trials"]] == [t["params"] for t in c["trials"]]
    assert [t["params"] for t in a["trials"]] != [t["params"] for t in b["trials"]]


def test_tune_refuses_a_parameter_the_policy_does_not_take(tmp_path):
    """Every trial of it once ran, and failed, before the error."""
    pytest.importorskip("optuna", reason="hbl sweep tune needs the tune extra: pip install -e '.[tune]'")
    p = hbl("sweep", "tune", "--trace", TRAIN, "--policies", "smq", "--space", "nope=1:2", "--trials", "2",
            "--out", str(tmp_path / "tune"), check=False)
    assert p.returncode == 2 and "--space nope: policy smq takes no parameter 'nope'" in p.stderr
    assert "trial" not in p.stdout and not (tmp_path / "tune").exists()


def test_tune_scores_a_trial_by_the_geomean_over_its_cells():
    """The arithmetic mean of latency / Fast-Only was the traces of the largest ratios alone (on cost
    7 to 415 over the regimes set); the agents are chosen and validated by the geomean."""
    from types import SimpleNamespace
    from hbl.experiments import sweep_tune
    cells = sweep_tune._Cells("harmonia", {}, ["cost"], [1], {}, {})
    cells.base_latency = {("a", "cost", 1): 10.0, ("b", "cost", 1): 10.0}
    cs = [dict(key="ka", trace="a", hss="cost", seed=1), dict(key="kb", trace="b", hss="cost", seed=1)]
    session = SimpleNamespace(records={"ka": dict(status="ok", result=dict(avg_latency_us=10.0)),
                                       "kb": dict(status="ok", result=dict(avg_latency_us=1000.0))})
    value, error = cells.score(session, cs)
    assert error is None and value == pytest.approx(10.0)     # ratios 1 and 100; their mean would be 50.5


def test_tune_fails_a_trial_whose_runs_did_not_start_from_the_shipped_agents():
    """A parameter that changes the agents' shape (placement gamma sets vmax) kept the shipped agents from
    loading: the run started untrained, silently, and scored as a trial of that parameter."""
    from types import SimpleNamespace
    from hbl.experiments import sweep_tune
    cells = sweep_tune._Cells("harmonia", {}, ["cost"], [1], {}, {})
    cells.base_latency = {("a", "cost", 1): 10.0}
    cs = [dict(key="ka", trace="a", hss="cost", seed=1)]
    note = "the shipped agents of harmonia on cost could not be loaded with these parameters"
    session = SimpleNamespace(records={"ka": dict(status="ok", result=dict(avg_latency_us=5.0,
                                                                           agents_not_loaded=note))})
    assert cells.score(session, cs) == (None, note)


def test_tune_checks_a_space_named_as_param_takes_it_and_for_policies_without_parameters():
    """--space smq.promote=1:8 (POLICY.NAME, as --param and --param-grid take it) runs as promote: the
    up-front check refused it; and a space for lru (which takes no parameter) passed it, every trial failing."""
    from hbl.errors import HblError
    from hbl.experiments import sweep_tune
    space = lambda *names: [(n, 1.0, 8.0, "float") for n in names]
    sweep_tune._check([TRAIN], [], space("promote", "smq.promote"), 2, "smq")
    with pytest.raises(HblError, match=r"--space lru.promote: a parameter of policy lru, not of smq"):
        sweep_tune._check([TRAIN], [], space("lru.promote"), 2, "smq")
    with pytest.raises(HblError, match=r"--space smq.nope: policy smq takes no parameter 'nope' \(it takes: "):
        sweep_tune._check([TRAIN], [], space("smq.nope"), 2, "smq")
    with pytest.raises(HblError, match=r"--space promote: policy lru takes no parameter 'promote' \(it takes: none\)"):
        sweep_tune._check([TRAIN], [], space("promote"), 2, "lru")
    sweep_tune._check([TRAIN], [], space("promote"), 2, "no-such-policy")     # the grid names it


def test_embedded_cluster_listens_on_loopback_only():
    """The scheduler, the nannies, the workers and any HTTP endpoint: nothing but 127.0.0.1."""
    import distributed
    import psutil
    from hbl.experiments.sweep import dask_client
    client, cluster = dask_client(distributed, 2, None)
    try:
        client.wait_for_workers(2, timeout=60)
        procs = [psutil.Process()] + psutil.Process().children(recursive=True)
        listening = [c.laddr for p in procs for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        assert len(listening) >= 5, listening      # scheduler, its HTTP endpoints, 2 nannies, 2 workers
        assert {a.ip for a in listening} == {"127.0.0.1"}, listening
    finally:
        client.close()
        cluster.close()
