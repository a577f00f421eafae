import hashlib

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


def test_writes_come_in_runs_and_the_read_share_stays():
    d, _ = load("synth:burst:requests=40000,burst=1000,read=0.3")
    w = d["op"] == record.WRITE
    starts = np.flatnonzero(w[1:] & ~w[:-1]) + 1          # where a run of writes begins
    assert w[:1000].all() and not w[1000:1429].any() and (np.diff(starts) == 1429).all()
    assert abs((~w).mean() - 0.3) < 0.01
    assert np.isin(d["length"] // 4096, (1, 2)).all()      # the preset's writes are small
    # burst=0 (every other preset): the same trace as before the key existed (digests taken at main 6509afc)
    for spec, digest in (("synth:zipf:requests=5000", "e66a4765a604db1c"),
                         ("synth:mixed:requests=5000,seed=2,burst=0", "981441f2cec9134c")):
        assert hashlib.sha256(load(spec)[0].tobytes()).hexdigest()[:16] == digest, spec


def test_a_log_appends_records_and_leaves_full_pages_alone():
    """synth:log: each append starts on the page the last record ended on (written again) or the one
    after it, so the log's tail only moves forward and a page it left is never written by it again."""
    d, _ = load("synth:log:requests=20000,read=0,log=1")
    first, last = d["offset"] // 4096, (d["offset"] + d["length"]) // 4096 - 1
    step = first[1:] - last[:-1]
    assert np.isin(step, (0, 1)).all() and (step == 0).mean() > 0.3      # records share their pages
    assert (np.diff(last) >= 0).all() and np.isin(d["length"] // 4096, (1, 2, 3)).all()
    m, _ = load("synth:log:requests=20000")                               # the preset: 5% reads
    assert abs((m["op"] == record.READ).mean() - 0.05) < 0.01
    for spec in ("synth:log:log=2", "synth:log:log=-0.1"):
        with pytest.raises(HblError):
            load(spec)


def test_bad_specs():
    for spec in ("synth:nope", "synth:zipf:alpha", "synth:zipf:read=2", "synth:zipf:size=0",
                 "synth:burst:burst=x"):
        with pytest.raises(HblError):
            load(spec)
