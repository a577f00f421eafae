"""The live controller's move queue, emulated on the host (no device-mapper): what it holds, refuses
and gives back stale, the rate its full batches carry, and Controller.plan asking it no more than
that rate holds (hbl/live/moves.py)."""
import numpy as np

from hbl.live.status import CpuLedger


def _queue_counts():
    return {"asked_moves": 0, "stale_moves": 0, "refused_moves": 0}


def test_move_queue_holds_what_its_full_batches_carry_before_a_move_goes_stale():
    """The queue's capacity is the moves per second the recent full batches carried times
    STALE_S; before one is measured, max_batch every interval; never under one full batch."""
    from hbl.live.moves import STALE_S, MoveQueue
    q = MoveQueue(_queue_counts())
    assert q.rate() is None
    assert q.capacity(8, 0.25) == int(8 / 0.25 * STALE_S)
    q.carried(8, 0.5)
    q.carried(8, 1.5)                          # 16 moves in 2 s
    assert q.rate() == 8.0
    assert q.capacity(8, 0.25) == int(8.0 * STALE_S)
    for _ in range(64):                        # a slow copier: the old measures age out
        q.carried(8, 4.0)
    assert q.rate() == 2.0
    assert q.capacity(8, 0.25) == 8            # 2 moves/s * 2 s = 4, but a full batch at least


def test_moves_past_the_queue_capacity_are_refused_at_once_the_oldest_first():
    """Past its capacity the queue gives back the oldest decisions at once (the decider told
    they stay), counted as refused, not stale; the batch takes the newest; a second ask for
    a queued extent is one ask, and an ask the decider undid leaves the queue."""
    from hbl.live.moves import MoveQueue
    count = _queue_counts()
    q = MoveQueue(count)
    dev = np.ones(40, np.int8)
    s = 1_000_000_000
    for e in range(20):
        q.ask(e, 0, s + e * 1000, at=1)       # extent 19 decided last
    q.ask(5, 0, s + 5 * 1000, at=1)           # asked again: one ask
    q.ask(30, 0, s, at=1)
    q.ask(30, 1, s, at=1)                     # undone by the decider before it was carried out
    assert count["asked_moves"] == 21 and len(q) == 20 and 30 not in q
    free = [list(range(100, 140)), []]
    back = []
    out = q.take(dev, free, {}, 4, 0.8, s + 20 * 1000, back.extend)   # capacity 4 / 0.8 s * STALE_S = 10
    assert [mv[0] for mv in out] == [19, 18, 17, 16]
    assert [mv[3] for mv in out] == [100, 101, 102, 103]          # a free slot each
    assert sorted(back) == list(range(10))                        # the 10 oldest past the capacity
    assert count["refused_moves"] == 10 and count["stale_moves"] == 0
    assert sorted(q.moves) == list(range(10, 16))                 # the rest wait for the next batch
    # under its capacity nothing is refused
    q2 = MoveQueue(_queue_counts())
    for e in range(20):
        q2.ask(e, 0, s + e, at=1)
    back2 = []
    assert len(q2.take(dev, [list(range(40)), []], {}, 4, 0.1, s + 20, back2.extend)) == 4   # capacity 80
    assert back2 == [] and len(q2) == 16


def test_moves_not_started_within_stale_s_are_given_back_stale():
    from hbl.live.moves import STALE_S, MoveQueue
    count = _queue_counts()
    q = MoveQueue(count)
    dev = np.ones(10, np.int8)
    t = 10_000_000_000
    q.ask(1, 0, t, at=1)
    q.ask(2, 0, t + int(STALE_S * 1e9) + 1, at=1)
    q.ask(3, 0, 0, at=1)                       # a remap the controller asked: never stale, first
    back = []
    out = q.take(dev, [list(range(10)), []], {}, 8, 1.6, t + int(STALE_S * 1e9) + 5, back.extend)  # capacity 10
    assert [mv[0] for mv in out] == [3, 2] and back == [1] and count["stale_moves"] == 1


def test_plan_asks_the_queue_for_no_more_than_the_carried_rate_holds():
    """Controller.plan: every move the decider asks for is queued and counted; past what the
    full batches measured carry in STALE_S, the oldest are refused and the decider told."""
    import types
    from hbl.live.controller import Controller
    from hbl.live.moves import STALE_S, MoveQueue
    from hbl.live.options import Options
    c = Controller.__new__(Controller)
    c.count = _queue_counts()
    c.queue = MoveQueue(c.count)
    n = 200
    c.meta = types.SimpleNamespace(dev=np.ones(n, np.int8), slot=np.arange(n), written=np.ones(n, np.uint8),
                                   members=[{}, {}])
    told = {}
    asked = iter([{e: 0 for e in range(100)}, {e: 0 for e in range(100, 110)}])
    c.decider = types.SimpleNamespace(take_moves=lambda: next(asked),
                                      put_back=lambda ex, d: told.update(zip(list(ex), list(d))),
                                      waiting=lambda ex, d: None)
    c.check_lost = lambda: None
    c.flip, c.failed, c.unsure = [], {}, False
    c.free = [list(range(1000, 1300)), []]
    c.options = Options(max_batch=8, interval=0.25)
    c.newest_ts = 5_000_000_000
    for _ in range(4):
        c.queue.carried(8, 1.0)                # 8 moves/s measured: 16 held
    plan = c.plan()
    cap = int(8 * STALE_S)
    assert len(plan) == 8 and c.count["asked_moves"] == 100
    assert c.count["refused_moves"] == 100 - cap and len(c.queue) == cap - 8
    # the decisions of one tick share its time: kept in the order the decider made them
    assert sorted(told) == list(range(cap, 100)) and set(told.values()) == {1}     # told they stay
    assert [mv["extent"] for mv in plan] == list(range(8))
    c.newest_ts += 100_000_000
    plan = c.plan()                            # ten newer decisions go first
    assert [mv["extent"] for mv in plan] == list(range(100, 108))
    assert c.count["asked_moves"] == 110 and c.count["stale_moves"] == 0


def test_a_full_batch_is_measured_from_its_start_to_the_next_tick():
    """The rate the queue is sized by: a full batch (max_batch moves) counts from the tick
    that began it to the next tick, an idle interval after it included; a batch that is not
    full (the queue was emptied) is not what the controller can carry, and is left out."""
    import types
    from hbl.live import copier
    from hbl.live.controller import Controller
    from hbl.live.moves import MoveQueue
    from hbl.live.options import Options
    c = Controller.__new__(Controller)
    c.copier = types.SimpleNamespace(throttle=copier.Throttle(8 << 20, floor=8 << 20, ceiling=8 << 20))  # never idle
    c.reads, c.idle_from, c.check_members = np.zeros((2, 2)), None, lambda: None
    c.full_batch, c.options = None, Options(max_batch=2)
    c.cpu_ledger = CpuLedger()
    c.queue = MoveQueue(_queue_counts())
    sizes = iter([2, 2, 1, 2, 0])
    c.plan = lambda: [{}] * next(sizes)
    c.execute = lambda plan: None
    for now in (0.0, 0.5, 1.5, 2.0, 3.0):
        c.tick(now)
    # full at 0.0 (0.5 s to the next tick) and 0.5 (1.0 s); 1.5 not full; full at 2.0 (1.0 s)
    assert list(c.queue.carried_full) == [(2, 0.5), (2, 1.0), (2, 1.0)]
    assert c.queue.rate() == 6 / 2.5
