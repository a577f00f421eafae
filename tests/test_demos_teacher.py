"""Demonstrations from a realizable teacher (ctypes_core/teacher.c, demo_teacher=K): the labels say
where a non-learning policy, run beside the agents on the same requests, keeps the pages."""
import pytest

from hbl.errors import HblError
from hbl.sim import simulate

TRACE = "synth:mixed:requests=30000,seed=2"
READS = "synth:zipf:read=1,requests=20000,seed=2"
LEARN_FAST = ["train_every=25", "sync_every=100"]
LRU, CDE = 1, 2     # their numbers in teacher.c's table


def run(trace, *params, policy="harmonia"):
    return simulate(trace, hss="cost", policy=policy, load_agents=False, params=LEARN_FAST + list(params))


def test_placement_labels_follow_the_teacher():
    """demo_follow=1 places each write as its label says: with lru (which writes every page to its
    fastest device and keeps it there) every write goes fast; with cde the agent writes fast as
    often as cde itself does; the oracle's labels on this trace bypass many writes."""
    oracle = run(TRACE, "demo_follow=1")
    assert oracle["fast_write_share"] < 0.9
    assert run(TRACE, "demo_follow=1", "demo_teacher=%d" % LRU)["fast_write_share"] == 1.0
    cde = simulate(TRACE, hss="cost", policy="cde")["fast_write_share"]
    assert cde < 0.995
    assert run(TRACE, "demo_follow=1", "demo_teacher=%d" % CDE)["fast_write_share"] == pytest.approx(cde, abs=0.003)


def test_migration_labels_follow_the_teacher():
    """m_demo_follow=1 moves each candidate as its label says.  On a trace of reads alone cde's fastest
    device stays empty (cde moves nothing on a read), so it labels every page below it 'stay': no
    promotion; lru promotes what is read, and so does the oracle's rule."""
    follow = lambda *p: run(READS, "m_demo_follow=1", *p, policy="harmonia-migration-only")["promotions"]
    assert follow("demo_teacher=%d" % CDE) == 0
    assert follow("demo_teacher=%d" % LRU) > 0
    assert follow() > 0


def test_a_teacher_without_demonstrations_changes_nothing():
    base = run(TRACE)
    assert run(TRACE, "demo_teacher=%d" % LRU)["avg_latency_us"] == base["avg_latency_us"]


@pytest.mark.parametrize("bad", ["10", "-1", "1.5"])
def test_a_teacher_outside_the_table_is_an_error(bad):
    with pytest.raises(HblError, match="demo_teacher"):
        run(TRACE, "demo=0.1", "demo_teacher=" + bad)
