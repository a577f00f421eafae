"""The live controller's bookkeeping, emulated on the host (no device-mapper): holds, requests in
flight, the read hit ratio, the records' path and the status (the copier and settle:
test_live_copier.py; the move queue: test_live_queue.py).  The controller itself runs in the VM
(vm/guest/tests/test_live.py, run by tests/test_vm.py)."""
import os
import time

import numpy as np

from hbl import record


def test_requests_issued_in_a_hold_wait_until_its_release():
    """The wait of a request held by a batch is its release minus its issue; requests to
    other extents, or issued before or after the hold, are not counted."""
    import collections
    from hbl import record
    from hbl.live.controller import Controller
    c = Controller.__new__(Controller)
    c.held_waits = collections.deque()
    c.recent_holds = collections.deque([(np.array([3, 7], np.int64), 1_000_000_000, 1_030_000_000)])
    log = record.empty(5)
    log["time_ns"] = [1_010_000_000, 1_020_000_000, 1_020_000_000, 990_000_000, 1_030_000_000]
    first = np.array([7, 4, 2, 3, 3], np.int64)
    last = np.array([7, 4, 3, 3, 3], np.int64)     # the third spans extents 2-3: it touches 3
    c._note_held(log, first, last)
    assert sorted(c.held_waits) == [10.0, 20.0]


def test_requests_in_flight_until_a_member_request_at_their_address_completes():
    """Before the hold, a request is in flight from its record on the dm device until a
    member request starting at the address the mapping sends it to completes; counted if
    it is to a moving extent, or to any extent and queued before the others were routed
    away; none kept on a member whose records carry no completion, none older than
    IN_FLIGHT_S."""
    import types
    from hbl.live.in_flight import IN_FLIGHT_S, InFlight
    MiB, ms = 1 << 20, 1_000_000
    meta = types.SimpleNamespace(extent_bytes=MiB, members=[{"data_start": 4096}, {"data_start": 8192},
                                                            {"data_start": 0}],
                                 dev=np.zeros(20, np.int64), slot=np.arange(20, dtype=np.int64))
    meta.dev[[3, 9]] = [1, 2]                          # extent 3 on member 1 (slot 3), 9 on member 2 (bio-based)
    f = InFlight(meta, [False, False, True])
    t0 = 10_000 * ms
    off = np.array([3 * MiB + 8192, 5 * MiB, 7 * MiB, 9 * MiB, 4 * MiB], np.int64)
    t = np.array([t0, t0 - 10 * ms, t0 + 5 * ms, t0, t0 - int(IN_FLIGHT_S * 1e9) - 300 * ms], np.int64)
    f.issued(meta, t, off, off // MiB)
    now, moving = t0 + 200 * ms, np.array([3, 7], np.int64)
    assert f.count(now, moving, routed_ns=t0 - 20 * ms) == 2      # extents 3 and 7
    assert f.count(now, moving, routed_ns=t0) == 3                # and extent 5, queued before the routing
    f.completed(np.array([1, 0]), np.array([8192 + 3 * MiB + 8192, 4096 + 7 * MiB + 4096]))   # 3's; not 7's address
    assert f.count(now, moving, routed_ns=t0) == 2
    f.completed(np.array([0, 0]), np.array([4096 + 7 * MiB, 4096 + 5 * MiB]))
    assert f.count(now, moving, routed_ns=t0) == 0
    assert f.count(now, np.zeros(0, np.int64), routed_ns=t0) == 0
    # kept no longer than IN_FLIGHT_S behind the newest request, counted or not
    late = t0 + int(IN_FLIGHT_S * 1e9) + 10 * ms
    f.issued(meta, np.array([t0, late], np.int64), np.array([3 * MiB, 3 * MiB], np.int64),
             np.array([3, 3], np.int64))
    assert len(f.t) == 1
    # three requests in flight to one block (a read and writes): each completion ends one, the oldest
    f.issued(meta, np.array([late + 2 * ms, late + 1 * ms], np.int64), np.array([3 * MiB, 3 * MiB], np.int64),
             np.array([3, 3], np.int64))
    f.completed(np.array([1, 1, 0]), np.array([8192 + 3 * MiB, 8192 + 3 * MiB, 4096]))
    assert f.t.tolist() == [late + 2 * ms]
    f.completed(np.array([1, 1]), np.array([8192 + 3 * MiB] * 2))      # one more completion than kept
    assert len(f.t) == 0


def test_requests_held_by_a_batch_are_not_counted_in_flight_on_their_old_slots():
    """The records read in a hold are sorted out (Controller.track) with the mapping in
    force, except the moving extents' requests queued after the hold began: they wait in
    the hold and complete on their new slots."""
    import types
    from hbl import record
    from hbl.live.controller import Controller
    from hbl.live.in_flight import InFlight
    MiB, ms = 1 << 20, 1_000_000
    c = Controller.__new__(Controller)
    c.meta = types.SimpleNamespace(extent_bytes=MiB, nextents=10, members=[{"data_start": 0}, {"data_start": 0}],
                                   dev=np.ones(10, np.int8), slot=np.arange(10, dtype=np.int32))
    c.dm_dev, c.member_dev, c.clock_offset = 99, {7: 0, 8: 1}, 0
    c.in_flight = InFlight(c.meta, [False, False])
    c.unsorted, c.unsorted_n = [], 0
    own = []
    c.own_io = np.zeros((0, 3), np.int64)

    def take_own():
        out = np.array(own, np.int64).reshape(-1, 3)
        own.clear()
        return out
    c.copier = types.SimpleNamespace(own_io=take_own)
    T = 5_000 * ms
    c.batch = types.SimpleNamespace(moving=np.array([3], np.int64), t={"hold": T})
    c.held = []
    b = record.empty(4)
    b["device"] = [99, 99, 99, 8]
    b["op"] = [record.WRITE, record.READ, record.READ, record.READ]
    b["offset"] = [3 * MiB, 3 * MiB + 4096, 4 * MiB, 4 * MiB + 8192]
    b["length"] = 4096
    b["time_ns"] = [T + 5 * ms, T - 5 * ms, T + 5 * ms, T + 6 * ms]
    b["latency_ns"] = [0, 0, 0, 1 * ms]       # the last: a member read elsewhere, completed
    c.unsorted.append(b)
    c.track()
    assert c.unsorted == [] and len(c.in_flight.t) == 2            # the held write left out
    assert c.in_flight.count(T + 10 * ms, np.array([3], np.int64), routed_ns=0) == 1
    assert c.in_flight.count(T + 10 * ms, np.array([3], np.int64), routed_ns=T + 10 * ms) == 2
    # the copier re-reads the block extent 3's request is at: its completion ends nothing; the
    # application's own completion there does (their records in either order, the copier's
    # noted before or after its record is read)
    c.held = c.batch = None
    m = record.empty(2)
    m["device"], m["offset"], m["length"], m["latency_ns"] = 8, 3 * MiB + 4096, 4096, 1 * ms
    own[:] = [(1, 3 * MiB + 4096, 4096)]
    c.unsorted.append(m[:1])
    c.track()
    assert c.in_flight.count(T + 10 * ms, np.array([3], np.int64), routed_ns=0) == 1
    c.unsorted.append(m[1:])
    c.track()
    assert c.in_flight.count(T + 10 * ms, np.array([3], np.int64), routed_ns=0) == 0
    own[:] = [(1, 7 * MiB, 4096)]           # its record not read yet: kept for the next call
    c.unsorted.append(m[1:])
    c.track()
    assert c.own_io.tolist() == [[1, 7 * MiB, 4096]]


def test_the_last_look_before_the_hold_sees_a_new_request_to_a_moving_extent():
    """settle's last look reads what records there are: a request on the dm device to a
    moving extent among them, or a member write to a moving extent's old slot, means one
    more round, and they are taken at once; one to another extent, or another member
    record, does not, and they are taken (observed) only once the hold has begun, so that
    the decider's work does not widen the window before it."""
    import types
    from hbl import record
    from hbl.live.batch import Batch
    from hbl.live.controller import Controller
    MiB = 1 << 20
    arriving, taken = [], []
    c = types.SimpleNamespace(dm_dev=99, unsorted=[])
    c.cap = types.SimpleNamespace(poll=lambda timeout_ms: record.concat(arriving) if arriving else record.empty(0))
    c.take = taken.append
    b = Batch.__new__(Batch)
    b.c, b.m, b.moving = c, types.SimpleNamespace(extent_bytes=MiB), np.array([3, 7], np.int64)
    b.t, b.looked = {}, None
    c._member_index = lambda mem: np.where(mem["device"] == 5, 1, -1)        # device 5 is member 1
    c.member_writes = lambda mem: Controller.member_writes(c, mem)
    b.wdev, b.wlo = np.array([1, 1], np.int64), np.array([10 * MiB, 20 * MiB], np.int64)   # the old slots

    def recs(device, offset, t=0, op=record.READ):
        r = record.empty(1)
        r["device"], r["offset"], r["length"], r["time_ns"], r["op"] = device, offset, 4096, t, op
        return r
    assert not b.last_look() and b.looked is None and not taken
    arriving[:] = [recs(99, 4 * MiB), recs(5, 7 * MiB)]       # another extent; a member record
    assert not b.last_look()
    assert not taken and len(b.looked) == 2                  # kept for after the hold's routing
    b.take_looked()
    assert len(taken) == 1 and len(taken[0]) == 2 and b.looked is None
    b.take_looked()
    assert len(taken) == 1
    arriving[:] = [recs(5, 3 * MiB), recs(99, 7 * MiB + 8192)]
    assert b.last_look()
    assert len(taken) == 2 and len(taken[1]) == 2 and b.looked is None     # taken now: settle goes round
    # on a member: a read of an old slot, a write elsewhere, a write on another device: kept
    arriving[:] = [recs(5, 10 * MiB), recs(5, 30 * MiB, op=record.WRITE), recs(6, 20 * MiB, op=record.WRITE)]
    assert not b.last_look() and len(b.looked) == 3
    b.take_looked()
    # a write to an old slot (its request on the dm device read in an earlier pass): taken now
    arriving[:] = [recs(5, 21 * MiB - 4096, op=record.WRITE)]
    assert b.last_look() and len(taken) == 4 and b.looked is None
    # the requests to moving extents queued between the last look and the hold's routing
    c.clock_offset = 1000
    b.t.update(look=100, hold=150, held=200)
    c.unsorted = [recs(99, 3 * MiB, 1099), recs(99, 3 * MiB, 1100), recs(99, 7 * MiB, 1199), recs(99, 4 * MiB, 1150),
                  recs(5, 3 * MiB, 1150), recs(99, 7 * MiB, 1200)]
    assert b.window_requests() == 2


def test_the_read_hit_ratio_counts_page_reads_only_as_the_simulator_does():
    """read_hit_ratio is the simulator's: the page reads (an extent is the page) the fast
    device served, over the page reads; writes count in fast_write_share and, with the reads,
    in fast_request_share.  Here every write goes to the fast device and most reads to the
    slow one: counting the writes as hits would give 0.5, counting requests not pages 0.25."""
    import collections
    import types
    from hbl import record
    from hbl.live import status
    from hbl.live.controller import Controller
    MiB = 1 << 20
    c = Controller.__new__(Controller)
    c.meta = types.SimpleNamespace(extent_bytes=MiB, nextents=8, members=[{}, {}],
                                   dev=np.array([0, 0, 0, 0, 1, 1, 1, 1]), written=np.zeros(8, np.uint8))
    c.dm_dev, c.recent_holds, c.decide = 99, collections.deque(), lambda *a: None
    c.lat, c.heat, c.rw = np.zeros((2, 2)), np.zeros(8, np.float32), np.zeros((8, 2), np.uint32)
    c.count, c.win = collections.Counter(), [0, 0, 0, 0]
    c.member_dev, c.batch, c.open_writes = {}, None, types.SimpleNamespace(bio=np.zeros(2, bool))
    b = record.empty(7)
    b["device"], b["time_ns"] = 99, 1
    b["op"] = [record.WRITE] * 3 + [record.READ] * 4
    b["offset"] = [0, 1 * MiB, 2 * MiB, 4 * MiB, 5 * MiB, 4 * MiB - 4096, 6 * MiB]   # the 6th spans extents 3 and 4
    b["length"] = [4096] * 5 + [8192, 4096]
    c.note(b)
    c.observe_pending()
    assert (c.count["reads"], c.count["writes"]) == (4, 3)
    assert (c.count["read_pages"], c.count["fast_read_pages"]) == (5, 1)
    assert status.hit_figures(c.count) == {"read_hit_ratio": 0.2, "fast_write_share": 1.0,
                                           "fast_request_share": 4 / 7}
    assert c.win == [7, 4, 5, 1]       # the timeline's window: requests, fast ones, page reads, fast ones
    assert status.hit_figures(collections.Counter()) == {"read_hit_ratio": 0.0, "fast_write_share": 0.0,
                                                          "fast_request_share": 0.0}


def test_a_long_holds_late_writes_have_no_time_when_their_completion_is_unknown():
    """The log of a long hold gives each write copied again in the hold its completion in ms
    from the hold; a write carried from before the batch with no completion known (time 0)
    has none, where it used to print about -1.8e12 ms (its 0 less the wall-clock hold)."""
    from hbl.live.batch import late_write_times
    hold = 1_796_277_854_000_000_000                  # a wall-clock hold, ns (2026-12)
    rows = np.array([[1, 0, 4096, hold - 2_500_000, 0],      # completed 2.5 ms before the hold
                     [0, 8192, 4096, hold + 12_000_000, 1],  # bio-based, queued 12 ms into it
                     [1, 4096, 4096, 0, 1]], np.int64)       # open write from before the batch
    assert late_write_times(rows, hold) == [(1, -2.5), (0, 12.0), (1, None)]
    assert late_write_times(np.zeros((0, 5), np.int64), hold) == []


def test_records_mark_their_extents_written_at_once_and_reach_the_decider_in_one_go():
    """note(): a write read marks its extent written at once (a batch's copies and the
    remaps without copy depend on it) and its frontier is computed then; the latencies, the
    counters and the decider wait for observe_pending(), which takes every poll noted in one
    call (per poll its fixed cost was most of the controller's thread)."""
    import collections
    import types
    from hbl import record
    from hbl.live.controller import Controller
    MiB = 1 << 20
    c = Controller.__new__(Controller)
    c.meta = types.SimpleNamespace(extent_bytes=MiB, nextents=8, members=[{}, {}],
                                   dev=np.array([0, 0, 0, 0, 1, 1, 1, 1]), written=np.zeros(8, np.uint8))
    fed = []
    c.dm_dev, c.recent_holds = 99, collections.deque()
    c.decide = lambda log, last, first_writes: fed.append((len(log), first_writes.tolist()))
    c.lat, c.heat, c.rw = np.zeros((2, 2)), np.zeros(8, np.float32), np.zeros((8, 2), np.uint32)
    c.count, c.win = collections.Counter(), [0, 0, 0, 0]
    c.member_dev, c.batch, c.open_writes = {}, None, types.SimpleNamespace(bio=np.zeros(2, bool))

    def poll(op, extent):
        b = record.empty(1)
        b["device"], b["time_ns"], b["op"], b["offset"], b["length"] = 99, 1, op, extent * MiB, 4096
        return b
    c.note(poll(record.WRITE, 5))
    c.note(poll(record.WRITE, 5))                   # written already: not a first write
    c.note(poll(record.READ, 2))
    assert c.meta.written.tolist() == [0, 0, 0, 0, 0, 1, 0, 0]
    assert not fed and c.count["writes"] == 0
    c.observe_pending()
    assert fed == [(3, [True, False, False])]
    assert (c.count["reads"], c.count["writes"]) == (1, 2) and not c.notes().s.records
    c.observe_pending()                             # nothing noted since: nothing fed
    assert len(fed) == 1


def test_the_status_gives_each_steps_median_over_the_batches():
    from hbl.live.status import StepRows, step_row, steps_p50
    steps = [{"copy": 10.0, "hold_ms": 3, "late_writes": [(1, 2.0)], "settle_timed_out": True},
             {"copy": 30.0, "hold_ms": 9, "late_writes": [], "settle_timed_out": False},
             {"copy": 20.0, "hold_ms": 1, "late_writes": [], "settle_timed_out": False},
             {"copy": 40.0, "hold_ms": 2, "late_writes": [], "settle_timed_out": False}]
    assert steps_p50(steps, [step_row(b) for b in steps]) == {"copy": 25.0, "hold_ms": 2.5}
    assert steps_p50([], []) == {}
    ring = StepRows(3)                  # as the controller keeps them: the last 3 batches
    for b in steps:
        ring.append(step_row(b))
    assert steps_p50(steps, ring) == {"copy": 30.0, "hold_ms": 2.0}


def test_a_status_reader_asks_the_controller_and_waits_for_its_answer(tmp_path, monkeypatch):
    """ask_status leaves a request file and waits until the controller has removed it (it
    writes its status, then removes the request); unanswered, it gives up after wait_s."""
    import threading
    from hbl.live.paths import Paths, ask_status
    monkeypatch.setenv("HBL_RUN_DIR", str(tmp_path / "run"))
    p = Paths("x", str(tmp_path / "state"))
    p.make()
    assert not ask_status(p, wait_s=0.05)            # nobody answers
    assert os.path.exists(p.status_asked)
    os.unlink(p.status_asked)
    seen = []

    def controller():
        while not os.path.exists(p.status_asked):
            time.sleep(0.01)
        seen.append(True)
        os.unlink(p.status_asked)
    th = threading.Thread(target=controller)
    th.start()
    assert ask_status(p, wait_s=60)
    th.join()
    assert seen and not os.path.exists(p.status_asked)
