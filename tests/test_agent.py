"""The C agent core against NumPy references, learning, determinism, save/load."""
from pathlib import Path

import numpy as np
import pytest

from hbl.sim.agent import Agent
from hbl.core import ffi, lib
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl import record
from hbl.sim import Simulator, simulate
from hbl.trace import open_trace

SIZES = [7, 20, 30, 102]


def np_forward(params, x, sizes=SIZES, dtype=np.float64):
    a, off = np.asarray(x, dtype), 0
    for l in range(len(sizes) - 1):
        ni, no = sizes[l], sizes[l + 1]
        W = params[off:off + ni * no].reshape(no, ni).astype(dtype); off += ni * no
        b = params[off:off + no].astype(dtype); off += no
        z = W @ a + b
        a = z / (1 + np.exp(-z)) if l < len(sizes) - 2 else z
    return a


def c_array(a, t="float"):
    a = np.ascontiguousarray(a, dtype=np.float32 if t == "float" else np.int32)
    return a, ffi.cast(t + " *", ffi.from_buffer(a))


@pytest.mark.parametrize("n", [1, 100])   # one sample; a full tile of 64 and a short one
def test_forward_matches_numpy(n):
    rng = np.random.default_rng(0)
    n_params = lib.hbl_mlp_nparams(c_array(SIZES, "int32_t")[1], 3)
    assert n_params == 7 * 20 + 20 + 20 * 30 + 30 + 30 * 102 + 102
    sizes, sp = c_array(SIZES, "int32_t")
    for _ in range(5):
        params, pp = c_array(rng.normal(0, 0.5, n_params))
        x, xp = c_array(rng.random((n, 7)))
        out = ffi.new("float[]", n * 102)
        lib.hbl_mlp_forward_ref(sp, 3, pp, xp, n, out)
        got = np.frombuffer(ffi.buffer(out), np.float32).reshape(n, 102)
        for k in range(n):
            np.testing.assert_allclose(got[k], np_forward(params, x[k]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [1, 100])
def test_gradient_matches_finite_differences(n):
    """The gradient summed over a minibatch (the training kernels' tiles, the last
    one short) against central differences of the summed loss."""
    rng = np.random.default_rng(1)
    sizes, sp = c_array(SIZES, "int32_t")
    n_params = lib.hbl_mlp_nparams(sp, 3)
    params, pp = c_array(rng.normal(0, 0.5, n_params))
    x, xp = c_array(rng.random((n, 7)))
    dout, dp = c_array(rng.normal(0, 1, (n, 102)))
    grad = ffi.new("float[]", n_params)
    lib.hbl_mlp_grad_ref(sp, 3, pp, xp, dp, n, grad)
    p64 = params.astype(np.float64)
    loss = lambda p: sum(float(np.dot(dout[k], np_forward(p, x[k]))) for k in range(n))
    scale = 1 + np.sqrt(n)   # the sum's rounding grows with the samples
    for i in rng.choice(n_params, 80, replace=False):
        e = np.zeros(n_params); e[i] = 1e-4
        numeric = (loss(p64 + e) - loss(p64 - e)) / 2e-4
        assert abs(grad[i] - numeric) <= 1e-3 * scale + 1e-2 * abs(numeric), (i, grad[i], numeric)


@pytest.mark.parametrize("nactions,atoms,hidden", [(2, 51, (20, 30)), (3, 51, (20, 30)), (4, 21, (20, 30)),
                                                    (2, 8, (20, 30)), (2, 5, (20, 30)), (2, 11, (16, 16))])
def test_decision_values_match_numpy(nactions, atoms, hidden):
    """The decision path (the int16 inference network; the C51 expectation eight atoms at a
    time over atoms padded to whole registers) against NumPy's FP32 network on the same weights:
    the values to 2e-3 (int16 sums and a degree-3 exp), the greedy action wherever the best
    two values are further apart than that.  (16, 16) with 2 x 11 atoms is harmonia's
    placement network, which has its own unrolled forward pass."""
    nbins = [2, 8, 64, 64, 8, nactions, 64]
    ag = Agent(nbins=nbins, nactions=nactions, atoms=atoms, vmin=-3.0, vmax=7.0, seed=11, hidden=hidden)
    rng = np.random.default_rng(2)
    for _ in range(300):   # move the weights away from their initialisation
        s, s2 = (rng.integers(0, nbins).astype(np.uint8) for _ in range(2))
        ag.remember(s, int(rng.integers(nactions)), float(rng.random() * 5), s2)
    for _ in range(20):
        ag.train()
    ag.sync()
    params = ag.params().astype(np.float64)
    sizes = [7, *hidden, nactions * atoms]
    support = np.linspace(-3.0, 7.0, atoms)
    scale = 1.0 / (np.array(nbins) - 1)
    for s in rng.integers(0, nbins, size=(40, 7)).astype(np.uint8):
        logits = np_forward(params, s * scale, sizes).reshape(nactions, atoms)
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        expected = (p * support).sum(axis=1) / p.sum(axis=1)
        got = np.array(ag.values(s))
        np.testing.assert_allclose(got, expected, rtol=2e-3, atol=2e-3)
        if np.sort(expected)[-1] - np.sort(expected)[-2] > 4e-3:
            assert ag.greedy(s) == int(np.argmax(expected))


def np_project(r, gamma, p, vmin, vmax):
    A = len(p)
    z = np.linspace(vmin, vmax, A)
    dz = (vmax - vmin) / (A - 1)
    out = np.zeros(A)
    tz = np.clip(r + gamma * z, vmin, vmax)
    b = (tz - vmin) / dz
    lo, hi = np.floor(b).astype(int), np.ceil(b).astype(int)
    for j in range(A):
        if lo[j] == hi[j]:
            out[lo[j]] += p[j]
        else:
            out[lo[j]] += p[j] * (hi[j] - b[j])
            out[hi[j]] += p[j] * (b[j] - lo[j])
    return out


@pytest.mark.parametrize("r,gamma", [(0.3, 0.9), (0.0, 0.0), (5.0, 0.9), (-2.0, 0.5), (0.77, 0.1)])
def test_c51_projection_matches_numpy(r, gamma):
    rng = np.random.default_rng(2)
    p = rng.random(51)
    p /= p.sum()
    pa, pp = c_array(p)
    out = ffi.new("float[]", 51)
    lib.hbl_c51_project(r, gamma, pp, 51, 0.0, 10.0, out)
    got = np.array(list(out))
    np.testing.assert_allclose(got, np_project(r, gamma, pa.astype(np.float64), 0.0, 10.0), atol=1e-5)
    assert abs(got.sum() - 1) < 1e-5


@pytest.mark.parametrize("head", ["dqn", "c51"])
def test_agent_learns_a_known_best_policy(head):
    """Hot data (feature 0 >= 4) belongs on device 0, cold data on device 1."""
    ag = Agent(nbins=[8, 4], nactions=2, head=head, vmin=0, vmax=2, gamma=0.5, lr=3e-3, warmup=2000,
               epsilon=0.05, batch=64, buffer=1000, train_every=10, sync_every=100, seed=3)
    rng = np.random.default_rng(3)
    best = lambda s: 0 if s[0] >= 4 else 1
    s = rng.integers(0, [8, 4]).astype(np.uint8)
    for step in range(8000):
        a = ag.act(s)
        r = 1.0 if a == best(s) else 0.1
        s2 = rng.integers(0, [8, 4]).astype(np.uint8)
        ag.remember(s, a, r, s2)
        if step % 10 == 0:
            ag.train()
        if step % 100 == 0:
            ag.sync()
        s = s2
    states = [np.array([h, n], np.uint8) for h in range(8) for n in range(4)]
    accuracy = np.mean([ag.greedy(st) == best(st) for st in states])
    assert accuracy >= 0.95   # a random policy gets 0.5


def test_sibyl_beats_random_placement():
    trace = "synth:zipf:requests=150000,pages=50000,alpha=1.0,read=0.7,seed=5"
    learned = simulate(trace, hss="perf", policy="sibyl", fast_capacity="5%", params=["warmup=5000"])
    rand = simulate(trace, hss="perf", policy="sibyl", fast_capacity="5%", params=["epsilon=1", "warmup=0"])
    assert learned["avg_latency_us"] < 0.85 * rand["avg_latency_us"]
    assert learned["read_hit_ratio"] > rand["read_hit_ratio"] + 0.05


def test_seeded_runs_are_bit_identical():
    run = lambda seed: simulate("bundled:hm_0", hss="perf", policy="harmonia", seed=seed)
    a, b, c = run(7), run(7), run(8)
    for k in ("avg_latency_us", "p99_latency_us", "promotions", "evictions", "agents"):
        assert a[k] == b[k]
    assert a["agents"] != c["agents"]


def test_save_load_round_trip_and_refusals(tmp_path):
    path = tmp_path / "sibyl.agent"
    simulate("bundled:hm_0", hss="perf", policy="sibyl", save_agents=str(path))
    from hbl.devices import load_hss
    cfg = load_hss("perf")
    fresh = Simulator(cfg, "sibyl", [100, None])
    loaded = Simulator(cfg, "sibyl", [100, None])
    loaded.load_agents(path)
    states = np.random.default_rng(0).integers(0, [2, 8, 64, 64, 8, 2], size=(50, 6)).astype(np.uint8)
    v_loaded = [loaded.agents()[0].values(s) for s in states]
    again = Simulator(cfg, "sibyl", [100, None])
    again.load_agents(path)
    assert v_loaded == [again.agents()[0].values(s) for s in states]          # exact round trip
    assert v_loaded != [fresh.agents()[0].values(s) for s in states]          # and not the initial weights
    raw = bytearray(path.read_bytes())
    raw[100] ^= 0xFF
    bad = tmp_path / "corrupt.agent"
    bad.write_bytes(bytes(raw))
    with pytest.raises(HblError, match="checksum"):
        fresh.load_agents(bad)
    assert [fresh.agents()[0].values(s) for s in states[:3]] != v_loaded[:3]   # refused file changed nothing
    (tmp_path / "short.agent").write_bytes(bytes(path.read_bytes()[:40]))
    with pytest.raises(HblError, match="not an hbl agent file"):
        fresh.load_agents(tmp_path / "short.agent")
    with pytest.raises(HblError, match="policy 'sibyl', not 'harmonia'"):
        Simulator(cfg, "harmonia", [100, None]).load_agents(path)
    tri = load_hss("tri")
    with pytest.raises(HblError, match=r"another shape than this configuration: 2 actions \(devices\) in the file, 3"):
        Simulator(tri, "sibyl", [100, 300, None]).load_agents(path)   # said '6 state features ... (binned differently)'
    raw = bytearray(path.read_bytes())
    raw[8:12] = (3).to_bytes(4, "little")
    (tmp_path / "v3.agent").write_bytes(bytes(raw))
    with pytest.raises(HblError, match="version 3, this hbl reads versions 1 and 2"):
        fresh.load_agents(tmp_path / "v3.agent")


def test_version_1_files_load_and_give_the_fp32_reference():
    """A file of version 1 (FP32 inference weights) is quantized at load; its FP32 copy
    serves as the reference of the shadow at once."""
    from hbl.devices import load_hss
    from hbl.trace import load
    path = Path(__file__).parent / "data" / "agents" / "sibyl-cost-v1.agent"   # shipped until 2026-12-02
    assert int.from_bytes(path.read_bytes()[8:12], "little") == 1
    sim = Simulator(load_hss("cost"), "sibyl", [500, None], seed=2)
    sim.agents()[0].set_shadow(True)
    sim.load_agents(path)
    data, _ = load("synth:hm:requests=5000")
    sim.feed(data)
    compared, agreed = sim.agents()[0].agreement()
    assert compared > 4000 and agreed >= 0.999 * compared


def test_quantized_inference_agrees_with_fp32_on_realized_states():
    """Agents trained online from a short trace decide with the int16 network; on every greedy
    decision of the run (the states it met), the FP32 network of the same weights picks the same
    action >= 99.9% of the time; both agents fit in 206 KiB."""
    from hbl.devices import load_hss
    from hbl.trace import load
    data, _ = load("synth:prxy:requests=60000")
    sim = Simulator(load_hss("cost"), "harmonia", [2000, None], params={"sync_every": 500})
    for a in sim.agents():
        a.set_shadow(True)
    sim.feed(data)
    for a in sim.agents():
        compared, agreed = a.agreement()
        assert a.stats()["syncs"] > 5 and compared > 1000
        assert agreed >= 0.999 * compared, (compared, agreed)
        a.set_shadow(False)
    assert sum(a.memory_bytes() for a in sim.agents()) <= 206 * 1024


@pytest.mark.parametrize("hss", ["tri", "quad"])
def test_three_and_four_device_action_spaces(hss):
    r = simulate("synth:mixed:requests=60000,pages=20000", hss=hss, policy="harmonia", check=True,
                 params=["warmup=2000"])
    ndev = len(r["devices"])
    assert ndev == (3 if hss == "tri" else 4)
    assert all(u > 0 for u in r["used_pages"])        # every device of the action space holds data
    assert r["promotions"] > 0 and r["evictions"] > 0


def test_queue_feature_is_opt_in():
    # harmonia's placement agent sees Harmonia's 7 features unless queue_feature=1 adds the background
    # queues' fill as an 8th; the migration agent keeps 7 and Sibyl its 6 either way
    def widths(policy, params=None):
        config = load_hss("cost")
        sim = Simulator(config, policy, [100, None], params=params)
        return [a.nfeatures for a in sim.agents()]
    assert widths("harmonia") == [7, 7] and widths("sibyl") == [6]
    assert widths("harmonia", ["queue_feature=1"]) == [8, 7]
    assert widths("harmonia-placement-only", ["queue_feature=1"]) == [8]
    # the shipped tri agents were trained without it: such a run starts untrained (and keeps its invariants)
    r = simulate("bundled:hm_1", hss="tri", policy="harmonia", params=["queue_feature=1"], check=True)
    assert r["agents_from"] == "untrained"
    assert simulate("bundled:hm_1", hss="tri", policy="harmonia")["agents_from"] == "pretrained:harmonia-tri"
    # the shipped cost agents were trained with it (issue 26): they run with it unasked (and keep the
    # invariants), and without it untrained
    r = simulate("bundled:hm_1", hss="cost", policy="harmonia", check=True)
    assert r["agents_from"] == "pretrained:harmonia-cost" and r["params"]["queue_feature"] == 1
    assert r["sync_evictions"] > 0
    assert simulate("bundled:hm_1", hss="cost", policy="harmonia",
                    params=["queue_feature=0"])["agents_from"] == "untrained"


def test_init_out_starts_every_action_alike():
    # init_out=1, the default (m_init_out=1 for the migration agent; results/learning/scratch.txt): an
    # untrained network's output layer starts at zero, so every action has the same value in every state
    # (the greedy action is the first, the fastest device); with init_out=0 (Glorot) each action's value
    # is a random function of the state, the same for a seed on every workload
    config = load_hss("cost")
    rng = np.random.default_rng(0)
    states = np.stack([rng.integers(0, b, 50) for b in (2, 8, 64, 64, 8, 2, 64)], 1)

    def gaps(params):
        sim = Simulator(config, "harmonia", [100, None], params=params, seed=1)
        return [np.abs(np.diff([a.values(s) for s in states], axis=1)).max() for a in sim.agents()]
    assert all(g > 1e-3 for g in gaps(["init_out=0", "m_init_out=0"]))
    assert gaps(None) == [0, 0]
    assert gaps(["m_init_out=0"])[0] == 0 and gaps(["m_init_out=0"])[1] > 1e-3
    assert gaps(["init_out=2", "m_init_out=2"]) == [0, 0]   # and a pessimistic start: 0.99 on the lowest atom
    low = Simulator(config, "harmonia", [100, None], params=["init_out=2"], seed=1).agents()[0]
    assert all(v < 0.1 for s in states for v in low.values(s))
    with pytest.raises(HblError, match="init_out"):
        Simulator(config, "harmonia", [100, None], params=["init_out=3"])
    sim = Simulator(config, "harmonia", [100, None], seed=1)
    assert {sim.agents()[0].greedy(s) for s in states} == {0}
    # and it learns from there: after a run the actions' values differ again
    data = record.concat(list(open_trace("synth:mixed:requests=20000,pages=2000")))
    sim.feed(data)
    assert np.abs(np.diff([sim.agents()[0].values(s) for s in states], axis=1)).max() > 0


def test_pretraining_starts_from_glorot_unless_told():
    """hbl pretrain's untrained start is init_out=0 (as every shipped agent was pretrained), the
    online default's only where params say so."""
    from hbl.sim.pretrained import pretrain_params
    assert pretrain_params("harmonia", None) == {"init_out": 0.0, "m_init_out": 0.0}
    assert pretrain_params("sibyl", ["lr=0.01"]) == {"lr": 0.01, "init_out": 0.0}
    assert pretrain_params("harmonia", ["init_out=1"])["init_out"] == 1.0
    assert pretrain_params("lru", None) is None


def test_agent_config_errors():
    with pytest.raises(HblError, match="nactions"):
        Agent(nbins=[2], nactions=9)
    with pytest.raises(HblError, match="unknown parameter 'lrr'"):
        simulate("bundled:mds_0", policy="harmonia", params=["lrr=1"])
    with pytest.raises(HblError, match="window must be"):
        simulate("bundled:mds_0", policy="sibyl", params=["reward=1", "window=0"])


def test_page_reward_teaches_from_each_pages_next_access():
    """reward=1: a decision is rewarded when its page is next accessed, or with 0 once
    `window` later decisions pushed it out; the default rewards the request itself."""
    from hbl import record
    from hbl.devices import load_hss

    def run(pages, params):
        reqs = record.empty(len(pages))
        reqs["offset"] = np.asarray(pages) * 4096
        reqs["length"] = 4096
        reqs["op"] = record.WRITE
        reqs["time_ns"] = np.arange(len(pages)) * 1000
        sim = Simulator(load_hss("perf"), "sibyl", [100, None], params=params)
        sim.feed(reqs)
        return sim.agents()[0].stats()

    once = np.arange(3000)                     # no page comes back
    twice = np.repeat(np.arange(1500), 2)      # each page comes back at once
    st = run(once, ["reward=1", "window=64"])
    assert st["buffered"] == 3000 - 64 and st["reward_ewma"] == 0     # all pushed out unanswered
    st = run(twice, ["reward=1", "window=64"])
    # a first access is answered by the next request, a second waits: the 32 of the last 64 decisions still do
    assert st["buffered"] == 3000 - 32 and st["reward_ewma"] > 0
    assert run(once, [])["reward_ewma"] > 0                           # the request's own latency


def test_memory_and_inference_figures():
    from hbl.experiments.bench import agent_figures
    from hbl.devices import load_hss
    from hbl.trace import load
    data, _ = load("synth:hm:requests=20000")
    cfg = load_hss("cost")
    sim = Simulator(cfg, "harmonia", [500, None])
    sim.feed(data)
    f = agent_figures(sim)
    expected = sum(a.memory_bytes() for a in sim.agents())
    assert f["agents_memory_bytes"] == expected and expected > 50_000
    assert 0 < f["placement_decision_ns"] and 0 < f["placement_inference_ns"]
    assert 0 < f["placement_inference_fp32_ns"] and 0 < f["placement_linear_fp32_ns"]
    assert expected <= 206 * 1024


def test_agreement_names_a_migration_only_policy_s_one_agent_migration():
    """bench --agreement's rows name each agent by its role; harmonia-migration-only's only agent is its
    migration agent (it was labelled "placement": the roles were read from a fixed tuple by position)."""
    from hbl.experiments import bench
    rows = bench.agreement_run(("harmonia-migration-only", "perf", "bundled:hm_0", 1))
    assert [r["agent"] for r in rows] == ["migration"]
    assert [r["agent"] for r in bench.agreement_run(("harmonia", "perf", "bundled:hm_0", 1))] == \
        ["placement", "migration"]


def test_agents_are_not_saved_over_a_node_that_is_not_a_regular_file(tmp_path):
    """Saving writes a file whole and renames it into place: onto /dev/null (as root) that replaced the device
    node with a regular file. The agent core refuses, whoever calls it (a socket stands in for the device)."""
    import os
    import socket
    import stat
    node = tmp_path / "node"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(node))
        sim = Simulator(load_hss("perf"), "sibyl", [100, None])
        with pytest.raises(HblError, match="node: not a regular file"):
            sim.save_agents(node)
        assert stat.S_ISSOCK(os.stat(node).st_mode) and not (tmp_path / "node.tmp").exists()
