"""The live controller reading its records with fewer calls (issue 29 item 4): the polls of a
drain taken as one, settle sorting out the requests in flight only on the passes that decide
on them, the members' latencies in a few numpy calls; none of it may miss or double a record."""
import types

import numpy as np
import pytest

from hbl import record

MiB = 1 << 20


def recs(times, device=99, offset=0, latency=0, op=record.READ):
    r = record.empty(len(times))
    r["time_ns"], r["device"], r["offset"], r["length"], r["latency_ns"], r["op"] = times, device, offset, 4096, \
        latency, op
    return r


def reader(polls):
    """An Observer over a fake ring that gives the record arrays `polls` in turn, then nothing;
    take() records what it is given."""
    from hbl.live.observe import Observer
    o = Observer()
    o.taken, o.polled = [], []

    def poll(timeout_ms):
        o.polled.append(timeout_ms)
        return polls.pop(0) if polls else record.empty(0)
    o.cap = types.SimpleNamespace(poll=poll)
    o.take = o.taken.append
    return o


def test_a_drain_takes_every_record_of_its_polls_once_in_order_in_one_take():
    polls = [recs([1, 2]), recs([3]), record.empty(0), recs([4]), record.empty(0), record.empty(0), recs([9])]
    o = reader(polls)
    o.drain(wait_ms=2)
    assert o.polled[0] == 2 and set(o.polled[1:]) == {0}
    assert len(o.taken) == 1 and o.taken[0]["time_ns"].tolist() == [1, 2, 3, 4]      # two empty polls in a row end it
    assert polls and polls[0]["time_ns"].tolist() == [9]                           # left for the next read


def test_drain_until_stops_at_the_first_record_completed_after_its_time_and_takes_all_before():
    o = reader([recs([10, 20]), recs([30], latency=[15]), recs([60]), recs([70])])
    assert o.drain_until(40, wait_ms=3)               # 30 + 15 completed after 40: every earlier one is read
    assert o.polled == [3, 0]
    assert len(o.taken) == 1 and o.taken[0]["time_ns"].tolist() == [10, 20, 30]
    o = reader([recs([10]), recs([20])])
    assert o.drain_until(100) and o.taken[0]["time_ns"].tolist() == [10, 20]     # the ring ran dry first
    o = reader([recs([10]), recs([20]), recs([30])])
    assert not o.drain_until(100, max_polls=2)        # not caught up: the caller copies whole
    assert o.taken[0]["time_ns"].tolist() == [10, 20]
    o = reader([])
    assert o.drain_until(100) and o.taken == []


def test_settle_sorts_out_every_record_once_though_it_skips_the_passes_that_copy():
    """settle's pass that copied something goes round again without sorting out the requests
    in flight; the records it read are sorted out by the next pass's track (or the finish's):
    each given to InFlight once, none left out."""
    from hbl.live import controller as ctl
    from hbl.live.batch import Batch
    c = ctl.Controller.__new__(ctl.Controller)
    c.meta = types.SimpleNamespace(extent_bytes=MiB, nextents=10, members=[{"data_start": 0}, {"data_start": 4096}],
                                   dev=np.zeros(10, np.int8), slot=np.arange(10, dtype=np.int32),
                                   written=np.array([0, 0, 0, 1] + [0] * 6, np.uint8))
    c.dm_dev, c.member_dev, c.clock_offset = 99, {7: 0, 8: 1}, 0
    c.unsorted, c.unsorted_n, c.held, c.batch = [], 0, None, None
    c.own_io = np.zeros((0, 3), np.int64)
    c.note = lambda b: None                          # (observing them is not what this test is about)
    issued, completed, tracks = [], [], []
    c.in_flight = types.SimpleNamespace(issued=lambda m, t, off, first: issued.extend(t.tolist()),
                                        completed=lambda dev, off: completed.extend(off.tolist()),
                                        count=lambda *a: 0)
    real_track = c.track
    c.track = lambda: (tracks.append(len(c.unsorted)), real_track())
    copies = []
    c.copier = types.SimpleNamespace(copy=lambda *a, **k: copies.append(a), flush=lambda devs: None,
                                     own_io=lambda: np.zeros((0, 3), np.int64))
    n = [0]

    def poll(timeout_ms):               # every poll: a request on the dm device and a member completion
        n[0] += 1
        if n[0] > 12:
            return record.empty(0)
        return record.concat([recs([1000 + n[0]], offset=n[0] * 4096),
                              recs([2000 + n[0]], device=7, offset=n[0] * 8192, latency=5)])
    c.cap = types.SimpleNamespace(poll=poll, stats=lambda: {"lost": 0})
    c.recopy = lambda plan, writes, limit=False: 0
    b = Batch.__new__(Batch)
    b.c, b.m, b.moving = c, c.meta, np.array([3], np.int64)
    b.plan = [{"extent": 3, "src": 1, "src_slot": 5, "dst": 0, "dst_slot": 1, "copy": False}]
    b.mwrites, b.mark, b.settle_inflight, b.t, b.looked = [], 0, 0, {"prepared": 0}, None
    assert b.settle()
    assert len(copies) == 1                          # the first pass copied extent 3 (written): no track there
    assert tracks and tracks[0] > 0                  # the next pass's track sorted out the first pass's records too
    b.take_looked()
    c.track()                                        # as the batch's finish does
    polled = min(n[0], 12)
    assert sorted(issued) == [1000 + i for i in range(1, polled + 1)]
    assert sorted(completed) == [i * 8192 for i in range(1, polled + 1)]


def test_member_latencies_in_a_few_calls_are_the_per_member_ewma():
    """The EWMA of each member's read and write latency (the first mean as it is, then 0.2 of
    each new mean) and the reads' sums, as the loop over members and ops gave them."""
    from hbl.live.observe import Observer
    rng = np.random.default_rng(3)
    o = Observer()
    o.meta = types.SimpleNamespace(members=[{}, {}, {}], extent_bytes=MiB, nextents=4, written=np.zeros(4, np.uint8))
    o.member_dev, o.dm_dev, o.batch = {7: 0, 8: 1, 9: 2}, 99, None
    o.open_writes = types.SimpleNamespace(bio=np.zeros(3, bool))
    o.lat, o.lat_n, o.reads = np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2))
    lat, lat_n, reads = o.lat.copy(), o.lat_n.copy(), o.reads.copy()
    for k in range(6):
        n = 200
        mem = recs(np.arange(n), device=rng.choice([7, 8, 5], n), latency=rng.integers(0, 3, n) * rng.integers(1, 10**7, n),
                   op=rng.choice([record.READ, record.WRITE, record.FLUSH], n))
        if k == 2:
            mem = mem[mem["device"] != 8]           # a member with nothing this time keeps its figures
        o.note(mem)                                 # (no request: observing them is the latencies alone)
        o.observe_pending()
        idx = np.array([o.member_dev.get(int(d), -1) for d in mem["device"]])
        for d in range(3):                          # the reference: per member and op
            for op in (0, 1):
                sel = (idx == d) & (mem["op"] == op) & (mem["latency_ns"] > 0)
                if sel.any():
                    v = float(mem["latency_ns"][sel].mean())
                    lat[d, op] = v if lat_n[d, op] == 0 else 0.8 * lat[d, op] + 0.2 * v
                    lat_n[d, op] += sel.sum()
                    if op == 0:
                        reads[d] += (mem["latency_ns"][sel].sum(), sel.sum())
    assert np.allclose(o.lat, lat, rtol=1e-9) and (o.lat_n == lat_n).all() and np.allclose(o.reads, reads, rtol=1e-12)
    assert o.lat_n[2].sum() == 0 and o.lat[1, 0] > 0


def test_the_cpu_ledger_sums_each_span_under_its_name():
    """CpuLedger.add counts the thread's user and kernel CPU from `since` to now under a name,
    summing the spans of one name, and returns now (the next span's start)."""
    from hbl.live.status import CpuLedger, thread_times
    led = CpuLedger()
    t0 = thread_times()
    sum(i * i for i in range(200000))                 # some CPU for the span
    t1 = led.add("a", t0)
    assert led.spent["a"] == [t1[0] - t0[0], t1[1] - t0[1]] and sum(led.spent["a"]) > 0
    t2 = led.add("a", t1)
    led.add("b", t2)
    assert led.spent["a"] == pytest.approx([t2[0] - t0[0], t2[1] - t0[1]])
    assert set(led.spent) == {"a", "b"}


def reference_match(a, b, rank):
    """match_rows as a loop: each row of b, in order, ends the earliest (by rank, then index) equal
    row of a not ended yet."""
    left, hit = [True] * len(a), [False] * len(b)
    order = sorted(range(len(a)), key=lambda i: (rank[i], i))
    for j, row in enumerate(b):
        for i in order:
            if left[i] and a[i] == row:
                left[i], hit[j] = False, True
                break
    return left, hit


@pytest.mark.parametrize("w", [1, 3])
def test_match_rows_ends_the_earliest_equal_row_once_per_row_as_a_loop_would(w):
    """The C core's matching (the requests in flight ended by their completions, the copier's
    own I/Os by theirs) against the loop it stands for, on rows drawn from few values so that
    most have equals on both sides, with ranks that are not the rows' order."""
    from hbl.live.in_flight import match_rows
    rng = np.random.default_rng(7)
    for _ in range(200):
        na, nb = rng.integers(0, 12, 2)
        a, b = rng.integers(0, 3, (na, w)), rng.integers(0, 3, (nb, w))
        rank = rng.integers(0, 4, na)
        for r in (rank, None):
            left, hit = match_rows(a if w > 1 else a[:, 0], b if w > 1 else b[:, 0], rank=r)
            want = reference_match([tuple(x) for x in a], [tuple(x) for x in b], rank if r is not None else range(na))
            assert (left.tolist(), hit.tolist()) == want


def test_a_completion_ends_the_oldest_request_in_flight_at_its_address():
    from hbl.live.in_flight import InFlight
    m = types.SimpleNamespace(extent_bytes=MiB, members=[{"data_start": MiB}], dev=np.zeros(4, np.int8),
                              slot=np.arange(4, dtype=np.int32))
    f = InFlight(m, [False])
    f.issued(m, np.array([30, 10, 20], np.int64), np.array([0, 0, 0], np.int64), np.array([0, 0, 0], np.int64))
    f.completed(np.array([0, 0], np.int64), np.array([MiB, MiB], np.int64))
    assert f.t.tolist() == [30]             # the two oldest of three at that address, whatever their order read
