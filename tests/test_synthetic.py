import numpy as np
import pytest

from hbl import record
from hbl.errors import HblError
from hbl.trace import load


def test_seeded_and_deterministic():
    a, _ = load("synth:zipf:requests=20000,seed=3")
    b, _ = load("synth:zipf:requests=20000,seed=3")
    c, _ = load("synth:zipf:requests=20000,seed=4")
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_read_ratio_footprint_and_sizes():
    d, _ = load("synth:uniform:requests=50000,read=0.7,pages=1000,size=2")
    assert abs((d["op"] == record.READ).mean() - 0.7) < 0.02
    assert (d["offset"] // 4096 + 2 <= 1000).all() and (d["length"] == 8192).all()
    assert (np.diff(d["time_ns"].astype(np.int64)) >= 0).all()


def test_zipf_is_skewed_uniform_is_not():
    z, _ = load("synth:zipf:requests=100000,alpha=1.2,pages=10000")
    u, _ = load("synth:uniform:requests=100000,pages=10000")
    top = lambda d: np.sort(np.bincount((d["offset"] // 4096).astype(np.int64)))[::-1][:100].sum() / len(d)
    assert top(z) > 0.4 and top(u) < 0.05


def test_sequential_streams_continue():
    d, _ = load("synth:sequential:requests=10000,streams=1,pages=100000")
    ends = d["offset"][:-1] + d["length"][:-1]
    assert (d["offset"][1:] == ends).mean() > 0.95


def test_phases_move_the_hot_set():
    d, _ = load("synth:phases:requests=100000,pages=20000,phases=1,alpha=1.2")
    first, second = d[:50000], d[50000:]
    hot = lambda x: set(np.argsort(np.bincount((x["offset"] // 4096).astype(np.int64), minlength=20000))[-50:])
    assert len(hot(first) & hot(second)) < 10


def test_bad_specs():
    for spec in ("synth:nope", "synth:zipf:alpha", "synth:zipf:read=2", "synth:zipf:size=0"):
        with pytest.raises(HblError):
            load(spec)
