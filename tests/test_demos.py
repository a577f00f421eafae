"""Demonstrations from the oracle (ctypes_core/demos.c): the large-margin loss of DQfD, the
labels the trace's future gives, and the warm start that acts on them."""
import numpy as np
import pytest

from hbl.sim import pretrained
from hbl.sim.agent import Agent
from hbl.core import ffi, lib
from hbl.errors import HblError
from hbl.sim import simulate
from hbl.sim.registry import wants_future

TRACE = "synth:mixed:requests=30000,seed=2"
LEARN_FAST = ["train_every=25", "sync_every=100"]


def _margin(out, nactions, atoms, support, label, margin=0.8, weight=1.0):
    """J_E and its gradient from the C function, one sample (stride 1)."""
    o = ffi.new("float[]", list(map(float, out)))
    d = ffi.new("float[]", len(out))
    sup = ffi.new("float[]", list(map(float, support))) if support is not None else ffi.NULL
    j = lib.hbl_demo_margin(o, 1, nactions, atoms, sup, label, margin, weight, d)
    return j, np.array(list(d))


def _margin_np(out, nactions, atoms, support, label, margin=0.8):
    out = np.asarray(out, np.float64)
    if support is None:
        q = out[:nactions]
    else:
        lg = out.reshape(nactions, atoms)
        p = np.exp(lg - lg.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        q = p @ np.asarray(support, np.float64)
    return max(q[a] + (margin if a != label else 0) for a in range(nactions)) - q[label]


@pytest.mark.parametrize("head", ["dqn", "c51"])
def test_margin_loss_and_gradient_match_numpy(head):
    rng = np.random.default_rng(5)
    nactions, atoms = 3, 11
    support = None if head == "dqn" else np.linspace(0, 10, atoms)
    n = nactions * (1 if head == "dqn" else atoms)
    for trial in range(20):
        out = rng.normal(0, 2, n)
        label = int(rng.integers(nactions))
        j, grad = _margin(out, nactions, atoms, support, label)
        want = _margin_np(out, nactions, atoms, support, label)
        assert j == pytest.approx(want, rel=1e-4, abs=1e-5)
        if want <= 0:
            assert not grad.any()   # the label leads by the margin: nothing to learn
            continue
        eps = 1e-3
        for i in range(n):
            up, dn = out.copy(), out.copy()
            up[i] += eps
            dn[i] -= eps
            fd = (_margin_np(up, nactions, atoms, support, label) - _margin_np(dn, nactions, atoms, support, label)) / (2 * eps)
            assert grad[i] == pytest.approx(fd, abs=2e-3)


@pytest.mark.parametrize("head", ["dqn", "c51"])
def test_demonstrations_push_the_labelled_action_above_the_others(head):
    """The rewards say action 0 (1.0 against 0.2), the demonstrator says action 1: without the
    loss the agent prefers 0, with it the label's value leads."""
    def train(demo):
        ag = Agent(nbins=[2, 2], nactions=2, head=head, hidden=(8,), atoms=11, vmin=0, vmax=2, gamma=0.0,
                   lr=3e-3, batch=32, buffer=256, seed=1, demo=demo, demo_margin=0.5)
        rng = np.random.default_rng(1)
        for i in range(256):
            s = rng.integers(0, 2, 2).astype(np.uint8)
            a = i % 2
            ag.remember(s, a, 1.0 if a == 0 else 0.2, s, label=1)
        for _ in range(1500):
            ag.train()
        ag.sync()
        return [ag.values(np.array([x, y], np.uint8)) for x in range(2) for y in range(2)]

    for q in train(0.0):
        assert q[0] > q[1] + 0.3        # the rewards alone
    for q in train(2.0):
        assert q[1] > q[0]              # the label leads (the loss wants it by the margin)


def test_demo_weight_zero_changes_nothing():
    base = simulate(TRACE, hss="cost", policy="harmonia", load_agents=False, params=LEARN_FAST)
    zero = simulate(TRACE, hss="cost", policy="harmonia", load_agents=False,
                    params=LEARN_FAST + ["demo=0", "m_demo=0", "demo_follow=0"])
    assert zero["avg_latency_us"] == base["avg_latency_us"]
    assert not wants_future("harmonia", LEARN_FAST + ["demo=0"])
    assert wants_future("harmonia", ["m_demo=0.5"]) and wants_future("oracle")


def test_following_the_labels_places_as_the_oracle_rule_says():
    """demo_follow=1: the placement agent places every labelled write as the label says, so its
    decisions no longer depend on its seed; a run that learns from the labels differs from one
    that does not."""
    run = lambda seed, *p: simulate(TRACE, hss="cost", policy="harmonia", load_agents=False, seed=seed,
                                    params=LEARN_FAST + list(p))
    a, b = run(1, "demo_follow=1"), run(2, "demo_follow=1")
    assert a["fast_write_share"] == pytest.approx(b["fast_write_share"], abs=0.02)
    assert 0 < a["fast_write_share"] < 1   # the rule both absorbs and bypasses writes here
    free = run(1)
    taught = run(1, "demo=1")
    assert taught["avg_latency_us"] != free["avg_latency_us"]


def test_demonstrations_need_the_future_and_reward_0():
    with pytest.raises(HblError, match="future"):
        simulate(TRACE, hss="cost", policy="sibyl", load_agents=False, params=["demo=1"])
    with pytest.raises(HblError, match="reward=0"):
        simulate(TRACE, hss="cost", policy="harmonia", load_agents=False, params=["demo=1", "reward=2"])


def test_warm_passes_follow_then_learn():
    assert pretrained.pass_params(["demo_warm=1", "demo=0.5"], 0) == {"demo": 0.5, "demo_follow": 1.0}
    assert pretrained.pass_params(["demo_warm=1", "demo=0.5"], 1) == {"demo": 0.5}
    assert pretrained.pass_params({"m_demo_warm": 2}, 1) == {"m_demo_follow": 1.0}
    assert pretrained.pass_params(None, 0) is None
