"""The live copier and settle, emulated on the host (no device-mapper): the copy throttle, the copy
passes and their flushes, copy_many's depth, settle's end and summary, a copier I/O's completion.
The rest of the controller's bookkeeping: test_live.py."""
import os
import time

import numpy as np
import pytest

from hbl.live.status import CpuLedger


def test_copy_throttle_never_exceeds_its_ceiling():
    """hbl up --copy-limit: the starting rate, the floor and every increase stay at or under it."""
    from hbl.live.copier import Throttle
    t = Throttle(64 << 20, ceiling=2 << 20)
    assert t.rate == t.floor == 2 << 20
    t.idle_latency(1_000_000, 0.0)
    for _ in range(50):
        t.feedback(1_000_000)           # latency at the idle level: the rate would grow
    assert t.rate == 2 << 20
    d = Throttle()
    assert (d.rate, d.floor, d.ceiling) == (64 << 20, 4 << 20, 1 << 30)
    f = Throttle(16 << 20, floor=16 << 20, ceiling=16 << 20)     # hbl up --copy-rate 16M: fixed
    f.idle_latency(1_000_000, 0.0)
    f.feedback(10_000_000)              # 10x the idle latency: the adaptive rate would back off
    f.feedback(1_000_000)
    assert f.rate == 16 << 20


def test_copier_flushes_only_the_members_written_since_their_last_flush(tmp_path, monkeypatch):
    """A flush of a member nothing was copied to since its last one is skipped (on an HDD
    under load it waits behind the queue); a member written is flushed once."""
    from hbl.live import copier
    paths = []
    for i in range(2):
        p = tmp_path / ("m%d" % i)
        p.write_bytes(bytes(4 << 20))
        paths.append(str(p))
    try:
        cp = copier.Copier(paths, copier.Throttle(1 << 30))
    except OSError as exc:
        pytest.skip("O_DIRECT not supported under %s: %s" % (tmp_path, exc))
    synced = []
    real = os.fsync
    monkeypatch.setattr(copier.os, "fsync", lambda fd: (synced.append(cp.fds.index(fd)), real(fd)))
    try:
        cp.copy(0, 0, 1, 1 << 20, 1 << 20)
    except OSError as exc:
        pytest.skip("O_DIRECT I/O not supported under %s: %s" % (tmp_path, exc))
    cp.flush([0, 1])
    cp.flush([0, 1])
    assert synced == [1]                 # the destination, once; the source was only read
    cp.copy(1, 0, 0, 0, 4096)
    cp.flush([1])
    assert synced == [1]                 # member 0 was written, but not asked for
    cp.flush([0, 1])
    assert synced == [1, 0]
    cp.close()


def test_copy_many_keeps_depth_copies_in_flight_and_copies_every_byte(tmp_path):
    """A batch's copies, two at a time: every extent lands whole at its destination, the
    bytes are counted once, and an error in one lane is raised once both have stopped."""
    from hbl.live import copier
    MiB = 1 << 20
    rng = np.random.default_rng(3)
    src, dst = tmp_path / "src", tmp_path / "dst"
    data = rng.integers(0, 256, 6 * MiB, dtype=np.uint8).tobytes()
    src.write_bytes(data)
    dst.write_bytes(bytes(8 * MiB))
    try:
        cp = copier.Copier([str(src), str(dst)], copier.Throttle(1 << 30), depth=2)
    except OSError as exc:
        pytest.skip("O_DIRECT not supported under %s: %s" % (tmp_path, exc))
    import threading
    in_flight, most, lock = [0], [0], threading.Lock()
    real = cp._io

    def io(fn, d, part, off):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.02)
        try:
            return real(fn, d, part, off)
        finally:
            with lock:
                in_flight[0] -= 1
    cp._io = io
    jobs = [(0, i * MiB, 1, (7 - i) * MiB, MiB) for i in range(6)]
    try:
        cp.copy_many(jobs)
    except OSError as exc:
        pytest.skip("O_DIRECT I/O not supported under %s: %s" % (tmp_path, exc))
    out = dst.read_bytes()
    assert all(out[(7 - i) * MiB:(8 - i) * MiB] == data[i * MiB:(i + 1) * MiB] for i in range(6))
    assert most[0] == 2 and cp.bytes == 6 * MiB
    with pytest.raises(OSError, match="short read from .*src"):
        cp.copy_many(jobs[:3] + [(0, 100 * MiB, 1, 0, MiB)])     # past the end of src: a short read
    assert in_flight[0] == 0
    cp.close()


def test_settle_copies_at_full_speed_and_ends_when_nothing_is_left():
    """settle's passes are not held to the copy rate (an extent written since it was planned
    is copied whole there, before the hold: at the rate's floor that took 250 ms); it goes
    round while a pass copies something or a request to a moving extent is in flight, and
    ends at its limit otherwise."""
    import types
    from hbl.live import controller as ctl
    from hbl.live.batch import Batch
    from hbl.live.settle import SETTLE_S
    MiB = 1 << 20
    copies, flushed, in_flight = [], [], [2, 1, 0]
    c = types.SimpleNamespace(dm_dev=99, unsorted=[], clock_offset=0)
    c.cap = types.SimpleNamespace(poll=lambda timeout_ms: np.zeros(0))
    c.meta = types.SimpleNamespace(extent_bytes=MiB, members=[{"data_start": 0}, {"data_start": 4096}],
                                   written=np.array([0, 0, 0, 1], np.uint8))
    c.copier = types.SimpleNamespace(copy=lambda *a, **k: copies.append((a, k)), flush=flushed.append)
    c.drain_until = lambda wall_ns, max_polls=1000, wait_ms=0: True
    c.track = lambda: None
    c.pump = lambda timeout_ms=0: None
    c.in_flight = types.SimpleNamespace(count=lambda *a: in_flight.pop(0) if in_flight else 0)
    c.recopy = lambda plan, writes, limit=False: ctl.Controller.recopy(c, plan, writes, limit)
    b = Batch.__new__(Batch)
    b.c, b.m, b.moving = c, c.meta, np.array([3], np.int64)
    b.plan = [{"extent": 3, "src": 1, "src_slot": 5, "dst": 0, "dst_slot": 1, "copy": False}]
    b.mwrites, b.mark, b.settle_inflight, b.t, b.looked = [], 0, 0, {"prepared": 0}, None
    assert b.settle()
    # extent 3 was written since it was planned: copied whole, unlimited, and flushed
    assert len(copies) == 1 and copies[0][0][4] == MiB and copies[0][1] == {"limit": False}
    assert b.plan[0]["copy"] and flushed == [[0]]
    assert b.settle_inflight == 2 and not in_flight      # it went round until nothing was in flight
    assert not b.settle_timed_out
    # nothing ever settles: it ends at its limit
    c.in_flight.count = lambda *a: 1
    t0 = time.monotonic()
    assert b.settle()
    assert SETTLE_S <= time.monotonic() - t0 < SETTLE_S + 1
    assert b.settle_timed_out


def test_settle_summary_splits_the_holds_by_whether_settle_ran_out_of_time():
    from hbl.live import status as ctl
    steps = [{"hold_ms": float(h), "settle_timed_out": h >= 40} for h in (5, 10, 12, 45, 80)]
    assert ctl.settle_summary(steps) == {"settle_timeouts": 2,
                                         "hold_ms_by_settle": {"timed_out_p99": 80.0, "settled_p99": 12.0}}
    assert ctl.settle_summary([]) == {"settle_timeouts": 0,
                                      "hold_ms_by_settle": {"timed_out_p99": None, "settled_p99": None}}


def test_the_copy_throttle_measures_its_idle_level_even_when_the_policy_always_plans():
    """An interval that copies nothing gives the throttle its idle level (the slowest member's
    mean read latency over the reads completed in it); when the policy always has a move
    (lru), the controller leaves one interval idle every IDLE_EVERY_S.  Before, the level was
    sampled only when a plan came back empty: lru's stayed the one of its first seconds and
    its copies at the 4 MiB/s floor in every run."""
    import types
    from hbl.live import copier
    from hbl.live.controller import Controller
    from hbl.live.options import Options
    MiB = 1 << 20
    assert not copier.Throttle(16 * MiB, floor=16 * MiB, ceiling=16 * MiB).wants_idle(0.0)   # a fixed rate
    c = Controller.__new__(Controller)
    c.copier = types.SimpleNamespace(throttle=copier.Throttle(8 * MiB))
    c.reads = np.zeros((2, 2))
    c.idle_from = None
    c.check_members = lambda: None
    c.full_batch, c.options = None, Options(max_batch=8)
    c.cpu_ledger = CpuLedger()
    executed = []
    c.plan = lambda: [{"extent": 1}]
    c.execute = executed.append
    thr = c.copier.throttle

    def tick(now, nvme_ms=None, hdd_ms=None):     # reads completed during the interval before
        for d, ms in enumerate((nvme_ms, hdd_ms)):
            if ms is not None:
                c.reads[d] += (10 * ms * 1e6, 10)
        c.tick(now)
    tick(0.0)
    assert not executed and thr.baseline is None            # the first interval: idle
    tick(0.25, nvme_ms=0.1, hdd_ms=40)
    assert thr.baseline == 40e6 and len(executed) == 1        # the slowest member's mean, then a batch
    t = 0.5
    while t < 0.25 + copier.IDLE_EVERY_S:
        tick(t, nvme_ms=0.2, hdd_ms=90)                       # under copies: not the idle level
        t += 0.25
    assert thr.baseline == 40e6
    n = len(executed)
    tick(t)
    assert len(executed) == n                                 # an idle interval, IDLE_EVERY_S on
    tick(t + 0.25, hdd_ms=50)
    assert thr.baseline == 0.7 * 40e6 + 0.3 * 50e6 and len(executed) == n + 1
    # a plan that comes back empty is an idle interval too (and one with no reads leaves the level)
    c.plan = lambda: []
    tick(t + 0.5)
    tick(t + 0.75)
    assert thr.baseline == 0.7 * 40e6 + 0.3 * 50e6
    tick(t + 1.0, hdd_ms=60)
    assert thr.baseline == 0.7 * (0.7 * 40e6 + 0.3 * 50e6) + 0.3 * 60e6
    # and the rate follows: under 1.5x the level it rises, above it falls
    r = thr.rate
    thr.feedback(1.2 * thr.baseline)
    assert thr.rate > r
    thr.feedback(2 * thr.baseline)
    assert thr.rate < r + (4 << 20)


def test_each_copier_io_ends_one_completion_alike_the_first_not_ended_yet():
    """match_rows (the observer's matching of the copier's own I/Os): an own I/O ends the first completion with its member, offset and length
    that no own I/O before it ended; one that finds none is left (for the next call)."""
    from hbl.live.in_flight import match_rows
    done = np.array([[0, 4096, 4096], [1, 0, 4096], [0, 4096, 4096], [0, 4096, 8192], [0, 4096, 4096]], np.int64)
    own = np.array([[0, 4096, 4096], [1, 8192, 4096], [0, 4096, 4096], [1, 0, 4096], [1, 0, 4096]], np.int64)
    keep, matched = match_rows(done, own)
    assert keep.tolist() == [False, False, False, True, True]
    assert matched.tolist() == [True, False, True, True, False]


def test_each_pass_copies_the_writes_read_since_the_pass_before_and_no_others():
    """A record is read after its write completed: a pass copies again the spans of the old
    slots written in the rows read since the last pass, once (it used to copy again what
    the pass before had copied, when written in the 50 ms before it)."""
    import types
    from hbl.live.batch import Batch
    from hbl.live.controller import Controller
    MiB = 1 << 20
    copies = []
    c = Controller.__new__(Controller)
    c.meta = types.SimpleNamespace(extent_bytes=MiB, members=[{"data_start": 0}, {"data_start": 4096}],
                                   written=np.ones(10, np.uint8))
    c.copier = types.SimpleNamespace(copy=lambda *a, **k: copies.append(a))
    c.drain_until = lambda wall_ns, max_polls=1000, wait_ms=0: True
    c.clock_offset = 0
    b = Batch.__new__(Batch)
    b.c, b.m = c, c.meta
    b.plan = [{"extent": 2, "src": 1, "src_slot": 5, "dst": 0, "dst_slot": 1, "copy": True}]
    b.mwrites, b.mark = [], 0
    old = 4096 + 5 * MiB

    def read(off, length):         # a member write record read from the ring
        b.mwrites.append(np.array([[1, old + off, length, 0, 0]], np.int64))
    read(8192, 4096)
    assert b.copy_pass() == 4096 and copies[-1] == (1, old + 8192, 0, MiB + 8192, 4096)
    assert b.copy_pass() == 0 and len(copies) == 1           # nothing read since: nothing copied again
    read(0, 4096)
    read(65536, 8192)
    assert b.copy_pass() == 65536 + 8192                     # one I/O over the span of what was read since
    assert copies[-1] == (1, old, 0, MiB, 65536 + 8192) and len(copies) == 2
    read(4096, 4096)
    b.mwrites.append(np.array([[0, 3 * MiB, 4096, 0, 0]], np.int64))    # another member's slot: not this move's
    assert b.copy_pass() == 4096 and len(copies) == 3
