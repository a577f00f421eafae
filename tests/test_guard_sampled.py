"""Sampled shadows (scripts/guard_sampled.py): the sample keeps exactly the hashed pages, R = 1 is the full
run bit for bit, the agreement counts are rule H's decisions."""
import random

import numpy as np

from hbl import record
from hbl.devices import load_hss
from hbl.sim import Simulator, footprint_pages
from hbl.trace import open_trace
from helpers import script

M64 = (1 << 64) - 1


def _splitmix_final(x):
    """splitmix64's finalizer in Python integers (independent of the script's NumPy one)."""
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _trace(path, n=6000, pages=3000, hot=150, seed=5, length=4096):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            page = rng.randrange(hot) if rng.random() < 0.9 else rng.randrange(pages)
            op = "Write" if rng.random() < 0.1 else "Read"
            f.write("%d,t,0,%s,%d,%d,100\n" % (128166625932151588 + i * 1000, op, page * 4096, length))
    data = record.concat(list(open_trace(str(path))))
    return data, footprint_pages([data])


def test_the_sample_keeps_exactly_the_pages_of_the_hashed_set(tmp_path):
    g = script("guard_sampled")
    data, _ = _trace(tmp_path / "t.csv")
    for rate in (8, 32):
        want = {p for p in range(3000) if (_splitmix_final(p) >> 32) < (1 << 32) // rate}
        assert 3000 / rate * 0.7 < len(want) < 3000 / rate * 1.3
        kept = data[g.keep(data, rate)]
        touched = {int(o) // 4096 for o in data["offset"]}
        assert {int(o) // 4096 for o in kept["offset"]} == want & touched
        # every request of a kept page is kept (the sample is by location, not by request)
        assert len(kept) == sum(1 for o in data["offset"] if int(o) // 4096 in want)
    assert set(np.flatnonzero(g.in_sample(np.arange(3000), 32))) <= set(np.flatnonzero(g.in_sample(np.arange(3000), 8)))
    assert g.in_sample(np.arange(3000), 1).all()


def test_a_multi_page_request_is_kept_whole_by_its_first_page(tmp_path):
    g = script("guard_sampled")
    data, _ = _trace(tmp_path / "t.csv", length=3 * 4096)
    m = g.keep(data, 8)
    first = data["offset"] // 4096
    assert (m == g.in_sample(first, 8)).all()
    assert not (m == g.in_sample(first + 1, 8)).all()


def test_rate_one_is_the_full_members_alone_bit_for_bit(tmp_path):
    g = script("guard_sampled")
    data, fp = _trace(tmp_path / "t.csv")
    cfg = load_hss("perf")
    full = g.run(data, "perf", 1, ("lru", "arc"), 1000, 1)
    assert full["kept"] == len(data) and full["footprint_pages"] == fp
    assert full["caps"] == cfg.capacity_pages(fp, 4096)
    for p in ("lru", "arc"):
        sim = Simulator(cfg, p, cfg.capacity_pages(fp, 4096), seed=1)
        sim.feed(data)
        st = sim.stats()
        assert full["cum_us"][p][-1] == st.latency_sum_ns / st.requests / 1e3
    s = g.run(data, "perf", 1, ("lru", "arc"), 1000, 8)
    assert s["kept"] < len(data) / 4 and s["footprint_pages"] < fp / 4
    assert s["caps"] == cfg.capacity_pages(s["footprint_pages"], 4096)
    a = g.compare(full["cum_us"], full["cum_us"], g.active_trail(full["cum_us"], ("lru", "arc"), 0.02),
                  ("lru", "arc"), 0.02, "all")
    assert a["points"] == 5 and a["leader"] == a["switch"] == a["exact"] == 5 and max(a["rel_err"]) == 0


def test_the_decision_agreement_is_rule_hs():
    g = script("guard_sampled")
    pf = ("harmonia", "lru", "arc")
    full = {"harmonia": [10.0, 10.0, 10.0], "lru": [9.0, 9.9, 9.0], "arc": [11.0, 11.0, 11.0]}
    samp = {"harmonia": [10.0, 10.0, 10.0], "lru": [9.95, 9.0, 9.0], "arc": [11.0, 8.0, 11.0]}
    act = g.active_trail(full, pf, 0.02)
    assert act == ["harmonia", "lru", "lru"]           # lru beats harmonia by 10% after the first window
    a = g.compare(full, samp, act, pf, 0.02, "all")
    # window 1: both lead lru; full switches, sampled (0.5% better) does not. window 2: sampled leads arc
    # and switches to it, full stays on lru.
    assert (a["points"], a["leader"], a["switch"], a["exact"]) == (2, 1, 0, 0)
    assert (a["full_switches"], a["sampled_switches"], a["switches_matched"]) == (1, 1, 0)
    m = g.compare(full, dict(samp, harmonia=[99.0] * 3), act, pf, 0.02, "mixed")   # harmonia's figure the full one
    assert m["switch"] == 0 and len(m["rel_err"]) == 4


def test_an_evaluation_workload_is_refused(capsys):
    g = script("guard_sampled")
    assert g.main(["--trace", "synth:hm:requests=1000", "--seeds", "1"]) == 2
    assert "not a training workload" in capsys.readouterr().err
    assert g.main(["--trace", "synth:src:requests=1000", "--rates", "0"]) == 2
    assert "--rates must be >= 1" in capsys.readouterr().err
