"""harmonia's reuse_feature=1 (an experiment, results/pretrain/reuse.txt): a 9th placement feature, the
share of recent requests whose page was accessed before within the fastest device's characteristic time,
in eighths; it needs queue_feature=1 (agents see a prefix of the state), and an agent file of 9 features
runs with both (hbl.sim.agent_files.run_params)."""
import numpy as np
import pytest

from hbl import record
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim import Simulator, simulate
from hbl.sim.agent_files import REUSE_FEATURES, run_params

TRACE = "synth:zipf:requests=3000"
BOTH = ["queue_feature=1", "reuse_feature=1"]


def _reuse_bins(pages):
    """The reuse bins of the placement agent's remembered states (it decides writes) after writes to
    `pages` in order, on a 100-page fast device."""
    sim = Simulator(load_hss("perf"), "harmonia", [100, None], params=BOTH)
    r = record.empty(len(pages))
    r["offset"], r["length"], r["op"] = np.asarray(pages) * 4096, 4096, record.WRITE
    r["time_ns"] = 10_000_000 * np.arange(1, len(r) + 1)
    sim.feed(r)
    sim.check()
    placement = sim.agents()[0]
    assert placement.nfeatures == REUSE_FEATURES
    return placement.buffer_states()[:, REUSE_FEATURES - 1]


def test_a_loop_over_few_pages_is_the_top_bin_a_scan_of_new_pages_the_bottom():
    n = 5000   # 5 rounds of migrate_every (1000): the running share is within e^-4 of its level
    loop = _reuse_bins(np.arange(n) % 20)
    scan = _reuse_bins(np.arange(n) + 1000)
    assert len(loop) > 500 and len(scan) > 500
    assert set(loop) == {7} and set(scan) == {0}
    # a loop then a scan of a round (the buffer's 1000 states are the scan's): the share falls from the
    # loop's (bin 7) to e^-1 of it (0.37, bin 2), through every bin between
    mixed = _reuse_bins(np.concatenate([np.arange(n) % 20, np.arange(1000) + 1000]))
    assert len(mixed) == 1000 and set(mixed) == {2, 3, 4, 5, 6, 7}


def test_the_feature_is_the_ninth_and_needs_the_queue_feature():
    config = load_hss("cost")

    def widths(policy, params=None):
        return [a.nfeatures for a in Simulator(config, policy, [100, None], params=params).agents()]
    assert widths("harmonia", BOTH) == [9, 7] and widths("harmonia-placement-only", BOTH) == [9]
    assert widths("harmonia", ["queue_feature=1", "reuse_feature=0"]) == [8, 7]
    with pytest.raises(HblError, match="reuse_feature=1 needs queue_feature=1"):
        Simulator(config, "harmonia", [100, None], params=["reuse_feature=1"])
    with pytest.raises(HblError, match="reuse_feature must be 0 or 1"):
        Simulator(config, "harmonia", [100, None], params=["queue_feature=1", "reuse_feature=2"])


def test_a_nine_feature_file_runs_with_both_features_unasked(tmp_path):
    nine, eight = tmp_path / "nine.agent", tmp_path / "eight.agent"
    simulate(TRACE, hss="cost", policy="harmonia", params=BOTH, load_agents=False, save_agents=str(nine))
    simulate(TRACE, hss="cost", policy="harmonia", params=["queue_feature=1"], load_agents=False,
             save_agents=str(eight))
    assert run_params(nine, "harmonia", {"lr": 0.5}) == {"lr": 0.5, "queue_feature": 1.0, "reuse_feature": 1.0}
    assert run_params(eight, "harmonia", {}) == {"queue_feature": 1.0}
    r = simulate(TRACE, hss="cost", policy="harmonia", load_agents=str(nine), check=True)
    assert r["agents_from"] == str(nine) and r["params"]["reuse_feature"] == 1 and r["params"]["queue_feature"] == 1
    assert simulate(TRACE, hss="cost", policy="harmonia", load_agents=str(nine),
                    params=BOTH)["avg_latency_us"] == r["avg_latency_us"]
    with pytest.raises(HblError, match="nine.agent: .*9 state features.*reuse_feature=1.*reuse_feature=0"):
        simulate(TRACE, hss="cost", policy="harmonia", load_agents=str(nine), params=["reuse_feature=0"])
    with pytest.raises(HblError, match="nine.agent: .*9 state features.*queue_feature=1.*queue_feature=0"):
        simulate(TRACE, hss="cost", policy="harmonia", load_agents=str(nine), params=["queue_feature=0"])
    with pytest.raises(HblError, match="eight.agent: .*8 state features.*reuse_feature=0.*reuse_feature=1"):
        simulate(TRACE, hss="cost", policy="harmonia", load_agents=str(eight), params=BOTH)
    # the shipped cost agents (8 features) do not load with it: such a run starts untrained
    assert simulate(TRACE, hss="cost", policy="harmonia", params=BOTH)["agents_from"] == "untrained"
