"""Hindsight credit (ctypes_core/hindsight.c, reward=2 / m_reward=2): every decision is
credited, per action, with the device time its page's later accesses saved against the
default action, once its horizon has passed."""
import random

import numpy as np
import pytest

from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim import Simulator, simulate

LEARN_FAST = ["train_every=25", "sync_every=100"]


def _reread_trace(path, requests=40_000, rereads=6, within=60, seed=1):
    """Every written page is read `rereads` times within the next `within` requests: a write
    absorbed by the fast device saves each of those reads a trip to the slow one."""
    rng = random.Random(seed)
    rows, pending, page = [], [], 0
    while len(rows) < requests:
        rows.append(("Write", page))
        pending += [(len(rows) + rng.randint(1, within), page) for _ in range(rereads)]
        pending.sort()
        page += 1
        while pending and pending[0][0] <= len(rows):
            rows.append(("Read", pending.pop(0)[1]))
    with open(path, "w") as f:
        for i, (op, p) in enumerate(rows):
            f.write("%d,t,0,%s,%d,4096,100\n" % (128166625932151588 + i * 1000, op, p * 4096))
    return str(path)


def test_hindsight_placement_learns_to_absorb_writes_that_are_read_again(tmp_path):
    trace = _reread_trace(tmp_path / "reread.csv")
    run = lambda *p: simulate(trace, hss="cost", policy="harmonia", load_agents=False, seed=1,
                              params=list(p) + LEARN_FAST)
    hindsight = run("reward=2", "horizon=200")
    latency = run("reward=0")
    # the credit of a write is the reads it saved: absorbing is learned from scratch
    assert hindsight["fast_write_share"] > 0.7
    assert hindsight["fast_write_share"] > latency["fast_write_share"] + 0.05
    assert hindsight["avg_latency_us"] < 0.9 * latency["avg_latency_us"]


def test_hindsight_credits_every_action_of_a_decision(tmp_path):
    """A credited decision teaches each of its actions: the migration agent's buffer holds a
    transition per device for each candidate, and the rewards are differences (some negative)."""
    r = simulate("synth:zipf:requests=30000,pages=20000", hss="tri", policy="harmonia", seed=1,
                 params=["m_reward=2", "m_horizon=2000"])
    mig = r["agents"][1]
    assert mig["buffered"] > 0 and mig["buffered"] % 3 == 0
    plain = simulate("synth:zipf:requests=30000,pages=20000", hss="tri", policy="harmonia", seed=1)
    assert plain["agents"][1]["buffered"] != mig["buffered"]


def test_hindsight_is_deterministic():
    run = lambda: simulate("bundled:mds_0", hss="perf", policy="harmonia", seed=2,
                           params=["reward=2", "m_reward=2"])
    a, b = run(), run()
    assert a["avg_latency_us"] == b["avg_latency_us"] and a["promotions"] == b["promotions"]


@pytest.mark.parametrize("param", ["horizon=-1", "horizon=40000", "m_horizon=1e9"])
def test_horizons_out_of_range_are_refused(param):
    prefix = "m_" if param.startswith("m_") else ""
    with pytest.raises(HblError, match="%shorizon must be 0..32768" % prefix):
        simulate("bundled:mds_0", hss="perf", policy="harmonia", seed=1,
                 params=["%sreward=2" % ("m_" if prefix else ""), param])


def test_credit_clean_changes_what_read_admission_learns_and_is_off_by_default():
    """credit_clean=1 (the push-off copy charged only for a dirty page): rule 8 pushes off only
    pages it promoted itself, unwritten, so clean; credited without that copy, its promotions pay
    more often and it promotes more.  credit_clean=0 is the default; other values are refused."""
    run = lambda *p: simulate("synth:src:requests=50000,seed=2", hss="perf", policy="harmonia",
                              seed=1, params=["read_admit=8", *p])
    default, off, on = run(), run("credit_clean=0"), run("credit_clean=1")
    assert default["avg_latency_us"] == off["avg_latency_us"] and default["promotions"] == off["promotions"]
    assert on["promotions"] > 2 * off["promotions"]
    with pytest.raises(HblError, match="credit_clean must be 0 or 1"):
        run("credit_clean=2")


def _cycle(sim, pages, requests):
    """Reads of `pages` pages in turn, 10 ms apart (every copy done before the next request)."""
    from hbl import record
    seq = np.tile(np.arange(pages), requests // pages) + 100
    r = record.empty(len(seq))
    r["offset"], r["length"], r["op"] = seq * 4096, 4096, record.READ
    r["time_ns"] = 10_000_000 * np.arange(1, len(r) + 1)
    sim.feed(r)
    sim.check()
    return sim.stats()


def test_credit_resident_credits_a_promotion_only_with_the_reads_before_its_eviction():
    """credit_resident=1: 12 pages read in turn through a 10-page fast device under rule 8 (no
    migration, every write placed fast): each promoted page is pushed off by rule 8's next
    promotions 10 requests later, 2 before its re-read.  Credited over the whole horizon, a
    promotion counts the re-reads after its page left, so rule 8 promotes every miss and never hits;
    credited only while its page stays, a promotion is worth nothing, rule 8 promotes fewer and
    the pages it leaves on the fast device are there when read again.  Default 0; 2 is refused."""
    def run(*p):
        # (m_warmup=500: the warm-up's random moves first fill the fast device here, as in test_admit.py's
        # read_admit tests; without them rule 8 never judges a horizon)
        sim = Simulator(load_hss("perf"), "harmonia-migration-only", [10, None],
                        params=["read_admit=8", "m_warmup=500", *p], migrate_max=0)
        return _cycle(sim, 12, 80_000)

    default, horizon, resident = run(), run("credit_resident=0"), run("credit_resident=1")
    assert (default.promotions, default.fast_read_hits) == (horizon.promotions, horizon.fast_read_hits)
    assert horizon.promotions > 40_000 and horizon.fast_read_hits == 0
    assert resident.promotions < 0.8 * horizon.promotions
    assert resident.fast_read_hits > 10_000
    with pytest.raises(HblError, match="credit_resident must be 0 or 1"):
        run("credit_resident=2")


def test_credit_copy_keeps_an_untrained_agent_writing_fast_and_is_off_by_default():
    """credit_copy=1 (copies charged at the run's measured background device time per page, not a
    scattered page's seek and rotation; results/diagnosis/write-credit.txt): on cost a log's copies
    down to the HDD are near-sequential, so a fast write's push-off charge no longer outweighs the
    HDD write it saves and the untrained placement agent keeps writing fast.  credit_copy=0 is the
    default; other values are refused."""
    run = lambda *p: simulate("synth:log:requests=60000,seed=2", hss="cost", policy="harmonia", seed=1,
                              load_agents=False, params=["reward=2", *p])
    default, off, on = run(), run("credit_copy=0"), run("credit_copy=1")
    assert default["avg_latency_us"] == off["avg_latency_us"]
    assert off["fast_write_share"] < 0.7 and on["fast_write_share"] > 0.99
    with pytest.raises(HblError, match="credit_copy must be 0 or 1"):
        run("credit_copy=2")


def test_credit_next_is_off_by_default_and_changes_the_untrained_agent():
    """credit_next=1 (a write decision's credit ends at its page's next write, that write's own
    decision then queued; results/diagnosis/write-credit-next.txt): 0 is the default; with reward=2 the
    credits, so the untrained agent's choices, change on a log whose pages are rewritten; other values
    are refused."""
    run = lambda *p: simulate("synth:log:requests=60000,seed=2", hss="cost", policy="harmonia", seed=1,
                              load_agents=False, params=["reward=2", "credit_copy=1", *p])
    default, off, on = run(), run("credit_next=0"), run("credit_next=1")
    assert default["avg_latency_us"] == off["avg_latency_us"]
    assert on["avg_latency_us"] != off["avg_latency_us"]
    with pytest.raises(HblError, match="credit_next must be 0 or 1"):
        run("credit_next=2")
