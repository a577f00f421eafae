"""Pretrained agents: trained on workloads the evaluation does not use, shipped, loaded by default."""
import json

import pytest

from hbl import pretrained
from hbl.cli import main
from hbl.compare import default_traces
from hbl.errors import HblError
from hbl.sim import simulate


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
        for seed in range(1, pretrained.SEEDS + 1):
            assert pretrained.shipped(policy, hss, seed), (policy, hss, seed)


def test_runs_start_from_the_shipped_agents_and_act_on_them_at_once():
    trace = "bundled:mds_0"
    pre = simulate(trace, hss="perf", policy="harmonia", seed=2)
    fresh = simulate(trace, hss="perf", policy="harmonia", seed=2, load_agents=False)
    assert pre["agents_from"] == "pretrained:harmonia-perf-s2"
    assert fresh["agents_from"] == "untrained"
    # a loaded agent's warm-up is behind it: it explores at epsilon (0.001), not at random
    assert pre["agents"][0]["explorations"] <= 0.01 * pre["agents"][0]["decisions"] + 2
    assert fresh["agents"][0]["explorations"] > 0.3 * fresh["agents"][0]["decisions"]
    # seeds 1..3 start from three different pretrained agents, seed 4 from the first again
    assert simulate(trace, hss="perf", policy="harmonia", seed=4)["agents_from"] == "pretrained:harmonia-perf-s1"
    # a policy without agents has nothing to start from
    assert "agents_from" not in simulate(trace, hss="perf", policy="lru")


def test_shape_changing_parameters_start_untrained():
    r = simulate("bundled:mds_0", hss="perf", policy="sibyl", params=["hidden1=8"])
    assert r["agents_from"] == "untrained"


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


def test_pretrain_refuses_without_out_and_names_bad_policies(tmp_path, capsys):
    assert main(["pretrain"]) == 2
    assert "--out DIR is required" in capsys.readouterr().err
    with pytest.raises(HblError, match="unknown policy 'nope'"):
        pretrained.pretrain_all(["nope"], ["perf"], 1, tmp_path)


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
    sim = Simulator(config, "harmonia", config.capacity_pages(footprint_pages([data]), 4096), seed=1,
                    params=[param])
    sim.load_agents(pretrained.shipped("harmonia", "perf", 1))
    before = [a.params() for a in sim.agents()]
    sim.feed(data)
    after, steps = [a.params() for a in sim.agents()], [a.stats()["train_steps"] for a in sim.agents()]
    assert steps[frozen] == 0 and (after[frozen] == before[frozen]).all()
    assert steps[1 - frozen] > 0 and not (after[1 - frozen] == before[1 - frozen]).all()
