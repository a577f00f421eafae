"""The records' path in C (ctypes_core/records.c, hbl/live/records.py: one call a poll, one an
observe, one a track) against the numpy path it replaced (tests/live_old_reading.py, main
21dac63's): the same polls, holds and batches through both, and after every step the same
written flags, counters, heat, latencies, decider feed, frontier moves, requests in flight,
open writes and batch notes.  A record dropped or sorted out otherwise fails it."""
import collections
import types

import numpy as np
import pytest

from hbl import record

MiB = 1 << 20
DM, MEMBERS, STRANGER = 99, {7: 0, 8: 1}, 5
NEXT = 64


class FakeDecider:
    def __init__(self):
        self.fed, self.set = [], []

    def feed(self, requests):
        self.fed.append(np.array(requests))

    def device(self, e):
        return (e * 7 + 3) % 2

    def set_devices(self, ex, devs):
        self.set.append((list(ex), list(devs)))


class FakeQueue(dict):
    def ask(self, e, want, t, src):
        self[e] = (want, t, src)


class FakeBatch:
    def __init__(self, moving, hold):
        self.moving, self.t, self.member, self.logical = np.array(moving, np.int64), {"hold": hold}, [], []

    def note_member_writes(self, dev, off, length, done_ns, unknown):
        self.member.append(np.stack([dev, off, length, done_ns, np.asarray(unknown, np.int64)], 1).tolist())

    def note_logical_writes(self, first, last):
        self.logical.append((np.asarray(first).tolist(), np.asarray(last).tolist()))


def reader(cls, bio, own_seq):
    """A controller's reading (Observer or the old one) over a fake meta, decider and copier."""
    from hbl.live.in_flight import InFlight
    from hbl.live.open_writes import OpenWrites
    c = cls.__new__(cls)
    rng = np.random.default_rng(11)
    c.meta = types.SimpleNamespace(extent_bytes=MiB, nextents=NEXT, members=[{"data_start": 0}, {"data_start": 4096}],
                                   dev=rng.integers(0, 2, NEXT).astype(np.int8),
                                   slot=rng.permutation(NEXT).astype(np.int32),
                                   written=(rng.random(NEXT) < 0.3).astype(np.uint8))
    c.dm_dev, c.member_dev, c.clock_offset = DM, dict(MEMBERS), 0
    c.options = types.SimpleNamespace(frontier=2)
    c.decider, c.queue, c.batch, c.held = FakeDecider(), FakeQueue(), None, None
    c.in_flight, c.open_writes = InFlight(c.meta, bio), OpenWrites(c.meta, bio, own_pid=4242)
    c.count = collections.Counter()
    c.heat, c.rw = np.zeros(NEXT, np.float32), np.zeros((NEXT, 2), np.uint32)
    c.lat, c.lat_n, c.reads = np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2))
    c.win, c.newest_ts = [0, 0, 0, 0], 0
    c.recent_holds, c.held_waits = collections.deque(maxlen=16), []
    c.unsorted, c.unsorted_n, c.unobserved, c.unobserved_n = [], 0, [], 0
    c.own_io = np.zeros((0, 3), np.int64)
    own = iter(own_seq)
    c.copier = types.SimpleNamespace(own_io=lambda: next(own))
    return c


def polls(rng, n):
    """Record arrays as a capture gives them: requests on the dm device (every op, lengths 0 to
    3 MiB, some past the last extent), member I/O (completed or not), a device of neither; the
    member records at the addresses of earlier requests, so that completions end some."""
    out, t = [], 10**12
    for _ in range(n):
        k = int(rng.integers(1, 60))
        r = record.empty(k)
        r["device"] = rng.choice([DM, DM, DM, 7, 8, STRANGER], k)
        r["op"] = rng.choice([0, 0, 1, 1, 2, 3], k)
        r["length"] = rng.choice([0, 512, 4096, 4096, 65536, MiB, 3 * MiB], k)
        ext = rng.integers(0, NEXT + 3, k)
        r["offset"] = ext * MiB + rng.integers(0, 256, k) * 4096
        r["time_ns"] = t + np.sort(rng.integers(0, 10**6, k))
        r["latency_ns"] = np.where(rng.random(k) < 0.8, rng.integers(1, 10**7, k), 0)
        r["pid"] = rng.choice([100, 4242], k)
        t += 10**6
        out.append(r)
    return out


def prepared(meta, moving):
    """A batch's new mapping (Batch.prepare's): a Meta of its own, the moving extents on the other
    member, its written flags copied now."""
    new = types.SimpleNamespace(**vars(meta))
    new.dev, new.slot, new.written = meta.dev.copy(), meta.slot.copy(), meta.written.copy()
    new.dev[moving] = 1 - new.dev[moving]
    return new


def release(c):
    """Controller.release_held's way: the records read in the hold noted as one."""
    b, c.held = record.joined(c.held or []), None
    if b is not None:
        c.note(b)


def state(c):
    oi = c.in_flight
    return {"written": c.meta.written.tolist(), "heat": c.heat.tolist(), "rw": c.rw.tolist(),
            "lat": c.lat.tolist(), "lat_n": c.lat_n.tolist(), "reads": c.reads.tolist(), "count": dict(c.count),
            "win": list(c.win), "newest": c.newest_ts, "waits": list(c.held_waits),
            "fed": [[x[f].tolist() for f in record.REQUEST.names] for x in c.decider.fed], "set": c.decider.set, "queue": dict(c.queue),
            "in_flight": (oi.t.tolist(), oi.ext_of.tolist(), oi.key.tolist()), "own": c.own_io.tolist(),
            "open": (dict(c.open_writes.cur), dict(c.open_writes.prev))}


@pytest.mark.parametrize("bio", [[False, False], [False, True]])
def test_the_c_path_notes_observes_and_tracks_every_record_as_the_numpy_path_did(monkeypatch, bio):
    from hbl.live import observe, records
    from hbl.live.controller import Controller
    import live_old_reading as old
    for mod in (observe, old):                   # the limits reached often, as a long run reaches them
        monkeypatch.setattr(mod, "OBSERVE_MAX", 500)
        monkeypatch.setattr(mod, "TRACK_MAX", 700)
    monkeypatch.setattr(records, "FIRST_CAP", 8)     # the arrays grown often, what was noted kept

    class Old(old.OldObserver, Controller):         # the old reading first in the order
        pass
    rng = np.random.default_rng(5)
    own_seq = [np.array([[0, int(o), 4096]], np.int64).reshape(-1, 3)[:int(rng.integers(0, 2))]
               for o in rng.integers(0, NEXT, 2000) * MiB]
    new, ref = reader(Controller, bio, own_seq), reader(Old, bio, own_seq)
    steps = rng.random(600)
    work = polls(rng, 600)
    batches = ends = rollbacks = 0
    for i, (u, b) in enumerate(zip(steps, work)):
        rollback, was_held = ends % 3 == 2, new.held is not None      # every third batch rolled back
        for c in (new, ref):
            if u < 0.05 and c.batch is None:                  # a batch begins: its new mapping prepared
                c.batch = FakeBatch(sorted({int(x) for x in b["offset"][:3] // MiB if x < NEXT}), int(b["time_ns"][0]))
                c.batch.new = prepared(c.meta, c.batch.moving)
            elif u < 0.10 and c.batch is not None and c.held is None:      # its hold
                c.track()
                c.held = []
                c.recent_holds.append((c.batch.moving, c.batch.t["hold"], c.batch.t["hold"] + 3 * 10**6))
            elif u < 0.15 and c.held is not None and rollback:   # a rollback (Batch.rollback): the hold
                c.batch = None                                    # released, the old mapping kept in force
                release(c)
                rollbacks += c is new
            elif u < 0.15 and c.held is not None:             # the release, then the batch's end
                c.track()                                    # (Batch.finish's order)
                mapping, c.batch = c.batch.new, None
                release(c)
                mapping.written |= c.meta.written
                c.meta = mapping                             # the new mapping in force, its own flags
            elif u < 0.20:
                c.observe_pending()
            elif u < 0.25:
                c.track()
            c.take(b)
        batches += new.batch is not None
        ends += was_held and new.held is None
        assert state(new) == state(ref), "step %d" % i
        if new.batch is not None:
            assert new.batch.member == ref.batch.member and new.batch.logical == ref.batch.logical, "step %d" % i
    for c in (new, ref):
        release(c)
        c.observe_pending()
        c.track()
    assert state(new) == state(ref)
    # the comparison saw every kind of work
    assert batches > 50 and rollbacks and sum(len(x) for x in new.decider.fed) > 3000 and new.decider.set and new.held_waits
    assert new.count["fast_write_pages"] and len(new.in_flight.t) and (bio[1] or len(new.own_io) <= 64)
    assert bio[1] == bool(new.open_writes.cur or new.open_writes.prev)


def test_page_accesses_count_every_extent_a_request_spans():
    """A request counts a page access per extent it spans, a fast one per such extent on device
    0, reads and writes apart (as the simulator counts them)."""
    from hbl.live.records import Notes
    meta = types.SimpleNamespace(extent_bytes=MiB, nextents=5, members=[{}, {}], written=np.zeros(5, np.uint8))
    n = Notes(meta, DM, MEMBERS)
    r = record.empty(4)
    r["device"], r["length"] = DM, [4096, 4 * MiB + 4096, 4096, 2 * MiB]
    r["offset"], r["op"] = [0, 0, MiB, 2 * MiB], [record.READ, record.READ, record.WRITE, record.WRITE]
    n.note(r, 1, meta.written)
    counts, newest = n.observe(np.array([0, 1, 0, 0, 1], np.int8), np.zeros((2, 2)), np.zeros(5, np.float32),
                               np.zeros((5, 2), np.uint32))
    assert {k: counts[k] for k in ("read_pages", "fast_read_pages", "write_pages", "fast_write_pages")} == \
        {"read_pages": 6, "fast_read_pages": 4, "write_pages": 3, "fast_write_pages": 2}
    assert meta.written.tolist() == [0, 1, 1, 1, 0]


def test_notes_keep_64_bit_offsets_and_times_and_refuse_arrays_the_c_core_would_overrun():
    """Offsets past 4 GiB and capture times (ns since 1970, past 2^60) come out whole: the
    written flags of extents past 4096 MiB, a member write's offset and completion, the
    requests' times and offsets for InFlight; a request past the last extent is left out.  A
    written array too small (a mapping of another size) or of another type is refused, not
    overrun."""
    from hbl.live.records import HELD, NOTE, WRITES, Notes
    ne, t0 = 6 * 1024, 1_765_000_000 * 10**9
    meta = types.SimpleNamespace(extent_bytes=MiB, nextents=ne, members=[{}, {}], written=np.zeros(ne, np.uint8))
    n = Notes(meta, DM, MEMBERS)
    r = record.empty(4)
    r["device"], r["op"] = [DM, 8, DM, DM], record.WRITE
    r["offset"] = [5 * 1024 * MiB + 4096, 9 * 1024 * MiB + 512, ne * MiB - 4096, ne * MiB]
    r["length"] = [2 * MiB, 4096, 4096, 4096]
    r["time_ns"], r["latency_ns"], r["pid"] = t0 + np.arange(4), 5 * 10**6, 100
    n.note(r, NOTE | WRITES, meta.written)
    assert np.flatnonzero(meta.written).tolist() == [5 * 1024, 5 * 1024 + 1, 5 * 1024 + 2, ne - 1]
    dev, off, length, done, pid = n.member_writes()
    assert (dev.tolist(), off.tolist(), done.tolist()) == ([1], [9 * 1024 * MiB + 512], [t0 + 1 + 5 * 10**6])
    n.note(r, HELD, meta.written)
    assert [x.tolist() for x in n.logical_writes()] == [[5 * 1024, ne - 1, ne], [5 * 1024 + 2, ne - 1, ne]]
    (t, qoff, first), (cdev, coff, clen), others = n.track_parts([r])
    assert (t.tolist(), qoff.tolist(), first.tolist()) == ([t0, t0 + 2, t0 + 3], r["offset"][[0, 2, 3]].tolist(),
                                                           [5 * 1024, ne - 1, ne])
    assert (cdev.tolist(), coff.tolist(), others) == ([1], [9 * 1024 * MiB + 512], 1)
    for bad in (np.zeros(ne - 1, np.uint8), np.zeros(ne, bool), np.zeros(ne, np.int64)):
        with pytest.raises(ValueError, match="written"):
            n.note(r, NOTE, bad)
