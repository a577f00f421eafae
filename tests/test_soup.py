"""Agents started from one common network (init_seed), and weights written back into an agent
(hbl_agent_set_params), as scripts/soup.py averages pretraining seeds (results/pretrain/soup.txt)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim import Simulator, simulate

TRACE = "synth:mixed:requests=20000,seed=3"


def agents(seed, params=None):
    return Simulator(load_hss("perf"), "harmonia", [100, None], params=params, seed=seed).agents()


def test_init_seed_draws_another_seeds_weights_and_is_off_by_default():
    one, two = agents(1), agents(2)
    common = agents(2, {"init_seed": 1, "m_init_seed": 2})
    for a, b, c in zip(one, two, common):
        assert np.array_equal(a.params(), c.params())        # seed 2 starts from seed 1's networks
        assert not np.array_equal(a.params(), b.params())
    # the run's own seed still drives exploration and replay: seed 1 with its own draw named is seed 1
    named = {"init_seed": 1, "m_init_seed": 2}
    a, b = simulate(TRACE, hss="perf", policy="harmonia", seed=1, load_agents=False), \
        simulate(TRACE, hss="perf", policy="harmonia", seed=1, load_agents=False, params=named)
    assert a["avg_latency_us"] == b["avg_latency_us"] and a["agents"] == b["agents"]
    c = simulate(TRACE, hss="perf", policy="harmonia", seed=2, load_agents=False, params=named)
    assert c["agents"] != a["agents"]


def test_set_params_writes_weights_and_syncs_the_deciding_network(tmp_path):
    src, dst = agents(1), agents(2)
    states = np.random.default_rng(0).integers(0, 2, size=(30, dst[0].nfeatures)).astype(np.uint8)
    for a, b in zip(src, dst):
        m1, m2 = a.moments()
        b.set_params(a.params(), m1, m2)
        assert np.array_equal(a.params(), b.params())
        assert all(np.array_equal(x, y) for x, y in zip(a.moments(), b.moments()))
    assert [src[0].values(s) for s in states] == [dst[0].values(s) for s in states]
    with pytest.raises(HblError, match="parameters"):
        dst[0].set_params(np.zeros(3, np.float32))
    # moments shorter than the parameters are refused before C reads past them; a 2-D array is laid flat
    w, (m1, m2) = src[0].params(), src[0].moments()
    with pytest.raises(HblError, match="first moments"):
        dst[0].set_params(w, m1[:-1], m2)
    with pytest.raises(HblError, match="second moments"):
        dst[0].set_params(w, m1, m2[:-1])
    dst[0].set_params(w.reshape(1, -1))
    assert np.array_equal(dst[0].params(), w)
    # init_seed is a whole seed or refused with a message (a fraction by the parameter table's
    # whole-number check, before the agent's own range check sees it)
    for bad, message in ((-1, "init_seed must be a whole number from 0"),
                         (1.5, "parameter 'init_seed' must be a whole number \\(got 1.5\\)")):
        with pytest.raises(HblError, match=message):
            agents(1, {"init_seed": bad})


def test_soup_of_one_network_is_that_network(tmp_path):
    spec = importlib.util.spec_from_file_location("soup", Path(__file__).parents[1] / "scripts" / "soup.py")
    soup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soup)
    f = tmp_path / "harmonia-perf-s1.agent"
    simulate(TRACE, hss="perf", policy="harmonia", seed=1, load_agents=False, save_agents=str(f))
    out = tmp_path / "soup" / "harmonia-perf.agent"
    dist = soup.soup([f, f, f], "harmonia", "perf", out)
    assert all(d == 0 for per in dist for d in per)
    a, b = soup.load(f, "harmonia", "perf").agents(), soup.load(out, "harmonia", "perf").agents()
    for x, y in zip(a, b):
        assert np.allclose(x.params(), y.params(), rtol=0, atol=1e-6)


def test_soup_of_the_placement_agent_only_keeps_the_first_files_migration_agent(tmp_path):
    spec = importlib.util.spec_from_file_location("soup", Path(__file__).parents[1] / "scripts" / "soup.py")
    soup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soup)
    files = []
    for seed in (1, 2):
        files.append(tmp_path / ("s%d.agent" % seed))
        simulate(TRACE, hss="perf", policy="harmonia", seed=seed, load_agents=False, save_agents=str(files[-1]))
    out = tmp_path / "soup" / "harmonia-perf.agent"
    soup.soup(files, "harmonia", "perf", out, only=[0])
    a, b = (soup.load(f, "harmonia", "perf").agents() for f in files)
    s = soup.load(out, "harmonia", "perf").agents()
    assert np.allclose(s[0].params(), (a[0].params() + b[0].params()) / 2, rtol=0, atol=1e-6)
    assert np.array_equal(s[1].params(), a[1].params())
