"""Pretrained agents: trained on workloads the evaluation does not use, shipped, loaded by default."""
import json

import pytest

from hbl.sim import pretrained
from hbl.cli import main
from hbl.experiments.compare import default_traces
from hbl.errors import HblError
from hbl.sim import simulate
from hbl.sim.agent_files import run_params
from hbl.trace import split


def _family(trace):
    return trace.split(":")[1] if trace.startswith("synth:") else trace


def test_training_suite_shares_no_workload_with_the_evaluation():
    train = {_family(t) for t in pretrained.training_traces()}
    evaluation = {_family(t) for t in default_traces()}
    assert train and not train & evaluation
    assert all(t.startswith("synth:") for t in pretrained.training_traces())   # no real trace is trained on


@pytest.mark.parametrize("policy", pretrained.POLICIES)
def test_every_policy_and_preset_has_its_shipped_agents(policy):
    for hss in pretrained.HSS:
        assert pretrained.shipped(policy, hss), (policy, hss)


def test_the_shipped_agents_are_the_best_of_their_seeds_on_validation():
    """What `hbl pretrain --select` chose, among SELECT_SEEDS pretraining seeds, on the validation
    traces only (no evaluation workload), is what ships, and the record says so."""
    sel = json.loads((pretrained.AGENTS_DIR / "selection.json").read_text())
    assert sel["traces"] == pretrained.validation_traces()
    evaluation = {_family(t) for t in default_traces()}
    rows = {(r["policy"], r["hss"]): r for r in sel["rows"]}
    assert set(rows) == {(p, h) for p in pretrained.POLICIES for h in pretrained.HSS}
    for r in rows.values():
        # a row chosen on another validation set (issue 26's harmonia perf and cost) names its traces
        traces = r.get("traces", sel["traces"])
        assert not {_family(t.split(":requests")[0]) for t in traces} & evaluation
        assert all(split.side(t) == "training" for t in traces)
        assert len(r["validation"]) == pretrained.SELECT_SEEDS
        assert r["validation"][str(r["seed"])] == min(r["validation"].values())


def test_each_shipped_agent_with_a_recipe_of_its_own_records_it():
    """The harmonia perf and cost agents of issue 26 were made and chosen otherwise than the rest:
    recipe.json and selection.json say how, `hbl pretrain --list` shows it, and the file runs as made."""
    own = pretrained.recipe()["agents"]
    rows = {(r["policy"], r["hss"]): r for r in pretrained.listing()}
    sel = {(r["policy"], r["hss"]): r for r in json.loads((pretrained.AGENTS_DIR / "selection.json").read_text())["rows"]}
    assert set(own) == {"harmonia-perf.agent", "harmonia-cost.agent"}
    for name, r in own.items():
        key = ("harmonia", name.split("-")[1].split(".")[0])
        assert rows[key]["recipe"] == r["recipe"] and rows[key]["params"] == r["params"] == ["queue_feature=1"]
        assert rows[key]["seed"] == sel[key]["seed"] == r["chosen_seed"] and rows[key]["validation"] == "regimes"
        assert all(split.side(t) == "training" for t in r["traces"])
        assert run_params(pretrained.selected_file(*key), "harmonia", {}) == {"queue_feature": 1.0}
    assert rows[("harmonia", "tri")]["recipe"] == "default" and rows[("harmonia", "tri")]["validation"] == "families"


def test_runs_start_from_the_shipped_agents_and_act_on_them_at_once():
    trace = "bundled:mds_0"
    pre = simulate(trace, hss="perf", policy="harmonia", seed=2)
    fresh = simulate(trace, hss="perf", policy="harmonia", seed=2, load_agents=False)
    glorot = simulate(trace, hss="perf", policy="harmonia", seed=2, load_agents=False,
                      params=["init_out=0", "m_init_out=0"])
    assert pre["agents_from"] == "pretrained:harmonia-perf"
    assert fresh["agents_from"] == glorot["agents_from"] == "untrained"
    # a loaded agent's warm-up is behind it: it explores at epsilon (0.001), not at random; an untrained
    # one from the zero start has none either (results/learning/short.txt); from Glorot it explores at random
    for r in (pre, fresh):
        assert r["agents"][0]["explorations"] <= 0.01 * r["agents"][0]["decisions"] + 2
    assert glorot["agents"][0]["explorations"] > 0.3 * glorot["agents"][0]["decisions"]
    # every seed starts from the one chosen set of agents: seeds vary the online runs only
    assert simulate(trace, hss="perf", policy="harmonia", seed=4)["agents_from"] == "pretrained:harmonia-perf"
    # a policy without agents has nothing to start from
    assert "agents_from" not in simulate(trace, hss="perf", policy="lru")


def test_shape_changing_parameters_start_untrained_and_say_why(capsys):
    r = simulate("bundled:mds_0", hss="perf", policy="sibyl", params=["hidden1=8"])
    assert r["agents_from"] == "untrained"
    # the run says why, naming the file and what differs (a run given no parameters has nothing to say)
    note = r["agents_not_loaded"]
    assert "sibyl-perf.agent" in note and "hidden layers 20x30 in the file, 8x30 here" in note
    assert "agents_not_loaded" not in simulate("bundled:mds_0", hss="perf", policy="sibyl")
    # a reward that changes the value range: harmonia's placement agent cannot load its shipped weights
    r = simulate("bundled:mds_0", hss="cost", policy="harmonia", params=["reward=2"])
    assert r["agents_from"] == "untrained" and "value range 0..10 in the file, -2..4 here" in r["agents_not_loaded"]
    # an explicit queue_feature the shipped file contradicts
    assert "queue_feature=1, not the queue_feature=0" in simulate(
        "bundled:mds_0", hss="cost", policy="harmonia", params=["queue_feature=0"])["agents_not_loaded"]
    # asked for untrained: nothing to warn about
    assert "agents_not_loaded" not in simulate("bundled:mds_0", hss="perf", policy="sibyl", params=["hidden1=8"],
                                               load_agents=False)
    # both commands warn on stderr, and compare's table says it too
    assert main(["simulate", "--trace", "bundled:mds_0", "--hss", "perf", "--policy", "sibyl", "--param",
                 "hidden1=8", "--quiet", "--json"]) == 0
    assert "hbl: warning: the shipped agents of sibyl on perf" in capsys.readouterr().err
    assert main(["compare", "--trace", "bundled:mds_0", "--hss", "perf", "--policies", "lru,sibyl", "--param",
                 "sibyl.hidden1=8", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "hbl: warning: the shipped agents of sibyl on perf" in err and "NOTE: the shipped agents" in out


def test_pretrain_writes_agents_that_load(tmp_path, capsys):
    rc = main(["pretrain", "--out", str(tmp_path), "--policies", "sibyl", "--hss", "perf", "--seeds", "1",
               "--passes", "1", "--trace", "synth:zipf:requests=4000,pages=2000", "--json", "--quiet"])
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["policy"], r["hss"], r["seed"]) for r in rows] == [("sibyl", "perf", 1)]
    path = tmp_path / "sibyl-perf-s1.agent"
    r = simulate("bundled:mds_0", hss="perf", policy="sibyl", load_agents=str(path))
    assert r["agents_from"] == str(path)
    assert r["agents"][0]["decisions"] > 0
    assert not list(tmp_path.glob("*.part"))


def test_pretraining_writes_the_same_agents_whatever_the_jobs(tmp_path, capsys):
    """A seed's agents depend on the seed and the recipe, not on how many trainings ran at once (a
    shared random state or a result taken from the wrong worker would show here)."""
    files = {}
    for jobs in (1, 2):
        out = tmp_path / ("j%d" % jobs)
        assert main(["pretrain", "--out", str(out), "--policies", "harmonia", "--hss", "cost", "--seeds", "2",
                     "--passes", "1", "--jobs", str(jobs), "--trace", "synth:zipf:requests=4000,pages=2000",
                     "--trace", "synth:log:requests=4000", "--quiet"]) == 0
        files[jobs] = {p.name: p.read_bytes() for p in sorted(out.glob("*.agent"))}
    capsys.readouterr()
    assert sorted(files[1]) == ["harmonia-cost-s1.agent", "harmonia-cost-s2.agent"]
    assert files[1] == files[2]
    assert files[1]["harmonia-cost-s1.agent"] != files[1]["harmonia-cost-s2.agent"]


def test_compare_agents_dir_starts_each_seed_from_its_pretraining_seed(tmp_path, capsys):
    """hbl compare --agents DIR: without a chosen file, online seed N starts from pretraining seed N's
    agents; with one (--select's POLICY-HSS.agent), every seed from it; a missing file is named before
    any run."""
    assert main(["pretrain", "--out", str(tmp_path), "--policies", "sibyl", "--hss", "perf", "--seeds", "2",
                 "--passes", "1", "--trace", "synth:zipf:requests=4000,pages=2000", "--quiet"]) == 0
    base = ["compare", "--trace", "bundled:mds_0", "--policies", "lru,sibyl", "--seeds", "2", "--quiet",
            "--agents", str(tmp_path)]

    def agents_from(extra):
        out = tmp_path / "c.json"
        assert main(base + ["--hss", "perf", "--output", str(out)] + extra) == 0, capsys.readouterr().err
        return {r["seed"]: r["agents_from"] for r in json.loads(out.read_text())["results"] if r["policy"] == "sibyl"}

    own = [str(pretrained.agent_file("sibyl", "perf", s, tmp_path)) for s in (1, 2)]
    assert agents_from([]) == {1: own[0], 2: own[1]}
    assert agents_from(["--seed", "2", "--seeds", "1"]) == {2: own[1]}
    chosen = pretrained.selected_file("sibyl", "perf", tmp_path)
    chosen.write_bytes(pretrained.agent_file("sibyl", "perf", 2, tmp_path).read_bytes())
    assert agents_from([]) == {1: str(chosen), 2: str(chosen)}
    capsys.readouterr()
    assert main(base + ["--hss", "cost"]) == 2
    assert "no agents for sibyl on cost, seed 1" in capsys.readouterr().err
    assert main(base + ["--hss", "perf", "--untrained"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(base[:-1] + [str(tmp_path / "none")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_pretrain_select_ships_the_best_seed_on_validation(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pretrained, "VALIDATION_REQUESTS", 3000)
    rc = main(["pretrain", "--out", str(tmp_path), "--policies", "sibyl", "--hss", "perf", "--seeds", "2",
               "--passes", "1", "--trace", "synth:zipf:requests=4000,pages=2000", "--select", "--json", "--quiet"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    (row,) = out["selected"]
    g = row["validation"]
    assert set(g) == {"1", "2"} and str(row["seed"]) == min(g, key=g.get)
    assert row["spread"] == pytest.approx(max(g.values()) / min(g.values()) - 1)
    chosen = pretrained.agent_file("sibyl", "perf", row["seed"], tmp_path).read_bytes()
    assert pretrained.selected_file("sibyl", "perf", tmp_path).read_bytes() == chosen
    assert json.loads((tmp_path / "selection.json").read_text())["rows"][0]["seed"] == row["seed"]


def test_pretrain_select_after_a_warm_start_validates_without_it(tmp_path, capsys, monkeypatch):
    """demo_warm is pretraining's own parameter (the first passes follow the oracle's labels): the
    validation runs must not be given it, as no policy takes it (they failed after all the training)."""
    monkeypatch.setattr(pretrained, "VALIDATION_REQUESTS", 3000)
    rc = main(["pretrain", "--out", str(tmp_path), "--policies", "harmonia", "--hss", "perf", "--seeds", "1",
               "--passes", "1", "--trace", "synth:zipf:requests=4000,pages=2000", "--param", "demo_warm=1",
               "--param", "demo=0.1", "--select", "--json", "--quiet"])
    assert rc == 0, capsys.readouterr().err
    (row,) = json.loads(capsys.readouterr().out)["selected"]
    assert row["seed"] == 1
    # the demonstrations read the validation trace's future: a validation run never takes them
    assert pretrained.validation_params(["demo_warm=1", "demo=0.1", "m_demo_warm=2", "m_demo=1", "demo_margin=0.2",
                                         "reward=2"]) == {"reward": 2.0}
    assert pretrained.validation_params(None) is None


def test_pretrain_select_on_a_named_validation_set(tmp_path, capsys, monkeypatch):
    """--validation NAME chooses on that set (the regimes' capture parts too) and says so; an unknown
    name is refused before any training."""
    monkeypatch.setattr(pretrained, "VALIDATION_REQUESTS", 3000)
    assert main(["pretrain", "--out", str(tmp_path), "--policies", "sibyl", "--hss", "perf", "--select",
                 "--validation", "nope"]) == 2
    assert "no such validation set (have: families, regimes, apps, fresh)" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
    rc = main(["pretrain", "--out", str(tmp_path), "--policies", "sibyl", "--hss", "perf", "--seeds", "1",
               "--passes", "1", "--trace", "synth:zipf:requests=4000,pages=2000", "--select", "--validation",
               "regimes", "--quiet"])
    assert rc == 0 and "validation set regimes" in capsys.readouterr().out
    sel = json.loads((tmp_path / "selection.json").read_text())
    assert sel["validation"] == "regimes" and sel["traces"][-2:] == [
        "workload:redis-aof@500000-750000", "workload:file-server@500000-750000"]


def test_select_names_the_missing_agents(tmp_path):
    with pytest.raises(HblError, match="no agents to choose from: .*sibyl-perf-s1.agent"):
        pretrained.select(tmp_path, ["sibyl"], ["perf"], 2)


def test_pretrain_refuses_without_out_and_names_bad_policies(tmp_path, capsys):
    assert main(["pretrain"]) == 2
    assert "--out DIR is required" in capsys.readouterr().err
    with pytest.raises(HblError, match="unknown policy 'nope'"):
        pretrained.pretrain_all(["nope"], ["perf"], 1, tmp_path)


@pytest.mark.parametrize("policy, message", [("lru", "policy lru has no agents"),
                                             ("archivist", "policy archivist has no agents"),
                                             ("harmonia-guard", "harmonia-guard has no agents of its own")])
def test_pretrain_refuses_a_policy_without_agents_before_any_work(tmp_path, policy, message):
    """It trained lru (or archivist) a whole pass, then failed on saving; harmonia-guard was 'unknown'."""
    with pytest.raises(HblError, match=message):
        pretrained.pretrain_all([policy], ["perf"], 1, tmp_path / "out", traces=["synth:src:requests=100000000"])
    assert not (tmp_path / "out").exists()
    (tmp_path / "a-file").write_text("x")      # was FileExistsError
    with pytest.raises(HblError, match="a file, not a directory"):
        pretrained.pretrain_all(["sibyl"], ["perf"], 1, tmp_path / "a-file", traces=["synth:src:requests=1000"])
    assert pretrained.agent_policies() == ["sibyl", "harmonia", "harmonia-placement-only", "harmonia-migration-only"]


def test_simulate_agent_none_starts_untrained(capsys):
    assert main(["simulate", "--trace", "bundled:mds_0", "--hss", "perf", "--policy", "harmonia",
                 "--agent", "none", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agents_from"] == "untrained"


@pytest.mark.parametrize("frozen", [0, 1])
def test_a_train_every_beyond_the_run_freezes_one_harmonia_agent(frozen):
    """results/learning/learndiag.txt freezes one agent at a time this way (lr must stay > 0): that agent
    keeps its shipped weights through the run, the other one still learns."""
    from hbl.devices import load_hss
    from hbl.record import concat
    from hbl.sim import Simulator, footprint_pages
    from hbl.trace import open_trace
    data = concat(list(open_trace("synth:hm:requests=30000")))
    config = load_hss("perf")
    param = ("train_every", "m_train_every")[frozen] + "=1000000000"
    shipped = pretrained.shipped("harmonia", "perf", 1)
    sim = Simulator.with_agents(config, "harmonia", config.capacity_pages(footprint_pages([data]), 4096), shipped,
                                seed=1, params={param.split("=")[0]: 1e9})
    before = [a.params() for a in sim.agents()]
    sim.feed(data)
    after, steps = [a.params() for a in sim.agents()], [a.stats()["train_steps"] for a in sim.agents()]
    assert steps[frozen] == 0 and (after[frozen] == before[frozen]).all()
    assert steps[1 - frozen] > 0 and not (after[1 - frozen] == before[1 - frozen]).all()
