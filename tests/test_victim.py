"""harmonia's victim order on its full fastest device (--param victim, ctypes_core/victim.c)."""
import pytest

from hbl import record
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim import Simulator, simulate


class _Pages:
    """A fast device of 10 pages under harmonia-migration-only (every write placed on it, no migration
    rounds), fed one single-page request at a time; hit(page) reads it and tells whether the fast
    device served it.  live: moves carried in batches, as the live device's controller does."""

    def __init__(self, *params, live=False):
        more = dict(open_loop=True, live_batches=True) if live else {}
        self.sim = Simulator(load_hss("perf"), "harmonia-migration-only", [10, None], params=list(params),
                             migrate_max=0, **more)
        self.t, self.step = 0, 1_000_000_000 if live else 10_000_000


    def feed(self, op, *pages):
        for p in pages:
            r = record.empty(1)
            r["offset"], r["length"], r["op"] = p * 4096, 4096, op
            self.t += self.step             # every copy (live: every batch of moves) done before the next
            r["time_ns"] = self.t
            self.sim.feed(r)
        self.sim.check()
        return self

    def write(self, *pages):
        return self.feed(record.WRITE, *pages)

    def read(self, *pages):
        return self.feed(record.READ, *pages)

    def hit(self, page):
        before = self.sim.stats().fast_read_hits
        self.read(page)
        return self.sim.stats().fast_read_hits > before


@pytest.mark.parametrize("live", [False, True])
def test_a_scan_of_once_written_pages_does_not_push_off_a_page_accessed_again(live):
    # page 0 written (it arrives on the fast device) and read there: accessed again.  A scan of 30
    # once-written pages then fills the device three times over.  LRU pushes 0 off; SLRU keeps it,
    # pushing off the scan's own pages, oldest first
    for order, kept in ((0, False), (1, True)):
        d = _Pages("victim=%d" % order, live=live).write(0).read(0).write(*range(100, 130))
        assert d.hit(0) == kept
        assert d.hit(129) and not d.hit(100)       # the newest scan page is there, the oldest gone
        assert d.sim.stats().fallback_evictions >= 21


def test_order_2_protects_a_page_read_again_but_not_one_written_again():
    # an fsynced log writes each page twice (consecutive records) and never again: order 1 protects such
    # a page, so a scan of once-written pages keeps it; order 2 protects only on a read, so it goes as
    # under LRU, while a page read again is kept by both
    for order, kept in ((0, False), (1, True), (2, False)):
        assert _Pages("victim=%d" % order).write(0, 0).write(*range(100, 130)).hit(0) == kept
    for order, kept in ((0, False), (1, True), (2, True)):
        assert _Pages("victim=%d" % order).write(0).read(0).write(*range(100, 130)).hit(0) == kept


@pytest.mark.parametrize("live", [False, True])
def test_2q_does_not_protect_a_page_written_twice_in_a_row_against_one_reused_after_a1in(live):
    # page 0 written, pushed off by a scan (it leaves from A1in: A1out remembers it), written again: a
    # reference after its correlated period, so it enters Am.  Page 5 is written twice in a row (an
    # fsynced log's page: the second write is correlated) and stays in A1in.  A scan of once-written
    # pages then takes A1in's oldest while A1in holds more than Kin (2 of 10 pages): 5 goes, 0 stays.
    # SLRU (order 1) does the opposite: 5's second write protects it, 0 arrived anew and is probationary
    for order, kept0, kept5 in ((0, False, False), (1, False, True), (3, True, False)):
        d = _Pages("victim=%d" % order, live=live).write(0).write(*range(100, 110)).write(0).write(5, 5)
        d.write(*range(200, 230))
        assert (d.hit(0), d.hit(5)) == (kept0, kept5), order
        assert d.hit(229) and not d.hit(200)


def test_2q_counts_no_access_while_a_page_is_in_a1in():
    # page 7 written and read twice while still in A1in: correlated references, so a scan of
    # once-written pages pushes it off as under LRU; SLRU protects it
    for order, kept in ((0, False), (1, True), (3, False)):
        assert _Pages("victim=%d" % order).write(7).read(7, 7).write(*range(200, 230)).hit(7) == kept


def test_the_access_that_brings_a_page_is_not_its_second():
    # read admission (read_admit=1) promotes each read miss: the read that promotes a scan page is its
    # arrival, not a second access, so the scan stays probationary and 0 (written, read there) stays.
    # Counted as a second access, the 10 scan pages would each be protected, and 0, the protected
    # segment's least recently used, would be pushed back to probation and off
    for order, kept in ((0, False), (1, True)):
        d = _Pages("victim=%d" % order, "read_admit=1").write(0).read(0)
        for p in range(200, 215):
            d.read(p, p)                           # the first read places it below, the second promotes it
        assert d.sim.stats().promotions >= 15
        assert d.hit(0) == kept


def test_the_protected_segment_is_bounded_so_a_new_hot_set_gets_in():
    # 10 pages accessed twice fill the device with protected pages; at most 8 stay protected, so a
    # new page accessed twice while there is protected in turn and an old one goes
    d = _Pages("victim=1").write(*range(10)).read(*range(10))
    d.write(50).read(50).write(*range(60, 70))
    assert d.hit(50)


def test_the_default_is_lru_and_a_bad_order_is_refused():
    trace = "synth:mixed:requests=20000,seed=3"
    base = simulate(trace, hss="perf", policy="harmonia", seed=1)
    same = simulate(trace, hss="perf", policy="harmonia", params={"victim": 0}, seed=1)
    slru = simulate(trace, hss="perf", policy="harmonia", params={"victim": 1}, seed=1)
    figures = ("avg_latency_us", "read_hit_ratio", "fallback_evictions", "promotions", "evictions", "read_pages")
    assert [base[k] for k in figures] == [same[k] for k in figures]
    assert base["fallback_evictions"] > 0
    assert [slru[k] for k in figures[:2]] != [base[k] for k in figures[:2]]
    twoq = simulate(trace, hss="perf", policy="harmonia", params={"victim": 3}, seed=1)
    assert [twoq[k] for k in figures[:2]] != [base[k] for k in figures[:2]]
    for bad in (4, 1.5, -1):
        with pytest.raises(HblError, match="victim"):
            simulate(trace, hss="perf", policy="harmonia", params={"victim": bad}, seed=1)
