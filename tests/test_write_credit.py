"""The write credit check (scripts/write_credit.py, ctypes_core/sim_diag.c hbl_sim_diag_flip_write and
hbl_sim_diag_judge_write): a write's placement flipped to the slowest device in a deterministic
replay, and the placement agent's hindsight credit of that write (reward=2, HBL_JUDGE_WRITE)."""
import pytest

from hbl import record
from hbl.core import lib
from hbl.devices import load_hss
from hbl.sim import footprint_pages
from hbl.trace import open_trace
from helpers import script

HOT, WROTE_AT = 7, 1000


def _trace(path, rewrites=0):
    """Reads of distinct cold pages 10 ms apart (no queueing on any device), one write of page HOT at
    request WROTE_AT, then `rewrites` writes of it, every 10th request."""
    with open(path, "w") as f:
        cold = 100
        for i in range(3000):
            t = 128166625932151588 + i * 100000
            hot = i == WROTE_AT or (WROTE_AT < i and i % 10 == 0 and (i - WROTE_AT) // 10 <= rewrites)
            if hot:
                f.write("%d,t,0,Write,%d,4096,100\n" % (t, HOT * 4096))
            else:
                f.write("%d,t,0,Read,%d,4096,100\n" % (t, cold * 4096))
                cold += 1
    data = record.concat(list(open_trace(str(path))))
    cfg = load_hss("perf")   # an SSD below: no head position, the credit's device time is the model's
    return cfg, cfg.capacity_pages(footprint_pages([data]), 4096), data


def test_a_write_flipped_to_the_slow_device_costs_what_its_credit_says(tmp_path):
    wc = script("write_credit")
    cfg, caps, data = _trace(tmp_path / "w.csv")
    base = wc.Run("lru", cfg, caps, data)
    judged = wc.Run("lru", cfg, caps, data, judge=[(WROTE_AT, HOT)])
    assert judged.latency == base.latency                       # judging changes nothing
    c = judged.credits[(WROTE_AT, HOT)]
    assert c["kind"] == 2 and c["accesses"] == 1 and c["npages"] == 1 and not c["ended"]
    t = wc.terms(c, space=0.0)                                  # asserts own + rewrite + reread - push = credit
    assert t["rewrite"] == 0 and t["reread"] == 0 and t["own"] > 0
    flip = wc.Run("lru", cfg, caps, data, flips=[(WROTE_AT, HOT)], to=len(cfg.devices) - 1)
    assert flip.counters["wpages_slow"] == base.counters["wpages_slow"] + 1
    nothing = wc.Run("lru", cfg, caps, data, flips=[(WROTE_AT + 1, HOT)], to=len(cfg.devices) - 1)
    assert nothing.latency == base.latency                      # no write of HOT there: nothing flipped
    truth = flip.latency - base.latency
    # the write's own time on the slow device less on the fast one, and nothing else: the credit is right
    assert truth > 0 and t["credit"] + t["push"] == pytest.approx(truth, rel=0.2)


def test_a_judged_write_splits_its_later_writes_from_the_write_itself(tmp_path):
    wc = script("write_credit")
    cfg, caps, data = _trace(tmp_path / "w.csv", rewrites=5)
    run = wc.Run("lru", cfg, caps, data, judge=[(WROTE_AT, HOT)])
    c = run.credits[(WROTE_AT, HOT)]
    assert c["nrewrite"] == 5 and c["nreread"] == 0 and c["accesses"] == 6
    t = wc.terms(c, space=0.0)
    assert t["rewrite"] == pytest.approx(5 * t["own"])
    assert wc.group_of(c) == "rewritten"


def test_write_flips_are_refused_where_moves_are(tmp_path):
    cfg, caps, data = _trace(tmp_path / "w.csv")
    from hbl.sim import Simulator
    sim = Simulator(cfg, "harmonia", caps)
    assert lib.hbl_sim_diag_flip_write(sim.sim, WROTE_AT, HOT, 1) == -1
    sim = Simulator(cfg, "lru", caps)
    assert lib.hbl_sim_diag_flip_write(sim.sim, WROTE_AT, HOT, -1) == -1   # a write lands somewhere
    assert lib.hbl_sim_diag_judge_write(sim.sim, WROTE_AT, HOT, 1.0) == 0


def test_credit_next_ends_a_write_credit_at_the_pages_next_write(tmp_path):
    """credit_next (hindsight.c end_next; harmonia's --param credit_next=1): a later write places the
    page again, so the first write's evaluation ends there, credited with the write itself only (the
    rewrites are not its), and the later write judged is queued as a decision of its own, which it is
    not while the first one's evaluation runs."""
    wc = script("write_credit")
    cfg, caps, data = _trace(tmp_path / "w.csv", rewrites=5)
    later = WROTE_AT + 10                                       # the first rewrite's request
    judge = [(WROTE_AT, HOT), (later, HOT)]
    old = wc.Run("lru", cfg, caps, data, judge=judge)
    nxt = wc.Run("lru", cfg, caps, data, judge=judge, opts=(0, 1))
    assert nxt.latency == old.latency                           # judging changes nothing
    c, n = old.credits[(WROTE_AT, HOT)], nxt.credits[(WROTE_AT, HOT)]
    assert c["accesses"] == 6 and (later, HOT) not in old.credits
    assert n["accesses"] == 1 and not n["ended"]
    t = wc.terms(c, space=0.0)
    assert n["cost"][1] - n["cost"][0] == pytest.approx(t["own"])
    assert n["benefit"][0] == pytest.approx(t["own"] - t["push"])
    assert nxt.credits[(later, HOT)]["accesses"] == 1           # itself: the next rewrite ends it in turn
