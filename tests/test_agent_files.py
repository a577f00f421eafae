"""An agent file carries what it needs to run: its placement agent's width decides queue_feature
(hbl.sim.agent_files.run_params), for the simulator, hbl compare and the live decider alike."""
import pytest

from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.live.decider import Decider
from hbl.sim import Simulator, simulate
from hbl.sim.registry import policy_names
from hbl.sim.agent_files import QUEUE_FEATURE_POLICIES, QUEUE_FEATURES, run_params

TRACE = "synth:zipf:requests=3000"


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """Agents of 8 placement features (trained briefly with queue_feature=1)."""
    path = tmp_path_factory.mktemp("agents") / "wide.agent"
    simulate(TRACE, hss="cost", policy="harmonia", params=["queue_feature=1"], load_agents=False,
             save_agents=str(path))
    return path


def test_an_eight_feature_file_runs_with_the_queue_feature_unasked(wide):
    r = simulate(TRACE, hss="cost", policy="harmonia", load_agents=str(wide), check=True)
    assert r["agents_from"] == str(wide)
    assert r["params"]["queue_feature"] == 1   # and the file loaded: the run's placement agent is 8 wide
    # saying so explicitly is the same run
    assert simulate(TRACE, hss="cost", policy="harmonia", load_agents=str(wide),
                    params=["queue_feature=1"])["avg_latency_us"] == r["avg_latency_us"]
    assert run_params(wide, "harmonia", {"lr": 0.5}) == {"lr": 0.5, "queue_feature": 1.0}


def test_a_queue_feature_that_contradicts_the_file_is_an_error_naming_it(wide, tmp_path):
    with pytest.raises(HblError, match="wide.agent: .*8 state features.*queue_feature=1.*queue_feature=0"):
        simulate(TRACE, hss="cost", policy="harmonia", load_agents=str(wide), params=["queue_feature=0"])
    seven = tmp_path / "seven.agent"
    simulate(TRACE, hss="tri", policy="harmonia", load_agents=False, save_agents=str(seven))
    with pytest.raises(HblError, match="seven.agent: .*7 state features.*queue_feature=0"):
        simulate(TRACE, hss="tri", policy="harmonia", load_agents=str(seven), params=["queue_feature=1"])
    junk = tmp_path / "junk.agent"
    junk.write_bytes(b"not agents" * 20)
    with pytest.raises(HblError, match="junk.agent: not an hbl agent file"):
        simulate(TRACE, hss="cost", policy="harmonia", load_agents=str(junk))


def test_a_shipped_file_that_cannot_be_read_is_an_error_not_an_untrained_run(tmp_path, monkeypatch):
    # a run that did not name agents starts untrained when asked for another queue_feature than the
    # shipped file's (test_agent.py), but a shipped file it cannot read is a broken install: reported
    from hbl.sim import agent_files
    junk = tmp_path / "harmonia-cost.agent"
    junk.write_bytes(b"not agents" * 20)
    monkeypatch.setattr(agent_files, "shipped", lambda policy, hss, seed=None: junk)
    with pytest.raises(HblError, match="harmonia-cost.agent: not an hbl agent file"):
        simulate(TRACE, hss="cost", policy="harmonia")


def test_seven_feature_files_run_as_before(tmp_path):
    for hss in ("tri", "quad"):   # the shipped 7-feature agents
        r = simulate(TRACE, hss=hss, policy="harmonia")
        assert r["agents_from"] == "pretrained:harmonia-" + hss
        assert "queue_feature" not in r["params"]
    seven = tmp_path / "seven.agent"
    simulate(TRACE, hss="cost", policy="harmonia-placement-only", load_agents=False, save_agents=str(seven))
    assert run_params(seven, "harmonia-placement-only", {"lr": 0.5}) == {"lr": 0.5}


def test_the_queue_feature_policies_are_those_it_widens():
    config = load_hss("cost")
    widened = []
    for p in policy_names():
        sim = Simulator(config, p, [100, None]) if p != "python" else None
        if sim is None or not sim.agents() or "queue_feature" not in _takes(p):
            continue
        if Simulator(config, p, [100, None], params=["queue_feature=1"]).agents()[0].nfeatures == QUEUE_FEATURES:
            widened.append(p)
    assert sorted(widened) == sorted(QUEUE_FEATURE_POLICIES)


def _takes(policy):
    from hbl.sim.registry import policy_params
    return policy_params(policy_names().index(policy))


def test_the_live_decider_starts_from_an_eight_feature_file(wide):
    d = Decider("harmonia", 1 << 20, [8, 100], agents=str(wide))
    assert d.agents_from == str(wide) and d.agents()[0].nfeatures == QUEUE_FEATURES
    with pytest.raises(HblError, match="wide.agent"):
        Decider("harmonia", 1 << 20, [8, 100], params={"queue_feature": 0}, agents=str(wide))
    assert Decider("lru", 1 << 20, [8, 100], agents=str(wide)).agents_from is None


def test_the_perf_agents_shipped_before_issue_26s_run_from_the_command_line(tmp_path):
    """`--agent` keeps loading the agents shipped before 1f9da19 (7 placement features, while today's
    perf agent has 8): the file decides the run's width, as a user who kept an older file expects."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    from hbl.sim import agent_files
    old = Path(__file__).parent / "data" / "agents" / "harmonia-perf-7f.agent"   # git show 1f9da19^:...
    assert run_params(old, "harmonia", {}) == {}                                  # 7 wide: no queue feature
    assert run_params(agent_files.shipped("harmonia", "perf"), "harmonia", {}) == {"queue_feature": 1.0}
    out = subprocess.run([sys.executable, "-m", "hbl.cli", "simulate", "--hss", "perf", "--policy", "harmonia",
                          "--agent", str(old), "--trace", TRACE, "--json"],
                         capture_output=True, text=True, check=True).stdout
    r = json.loads(out)
    assert r["agents_from"] == str(old) and "queue_feature" not in r["params"]
    assert r["agents"][0]["decisions"] > 0
    today = simulate(TRACE, hss="perf", policy="harmonia")
    assert today["avg_latency_us"] != r["avg_latency_us"]   # the older file, not today's, decided

