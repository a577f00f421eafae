"""The live device's decider: the C policies in live mode, fed requests as the controller feeds
them, its moves against its table and the controller's queue, and its agents learning live."""
import subprocess
import time
import sys

import numpy as np
import pytest

from hbl import record
from hbl.errors import HblError
from hbl.live.decider import Decider

from helpers import MIB, live_requests as requests


@pytest.mark.parametrize("policy", ["lru", "smq", "cde", "harmonia", "sibyl"])
def test_decider_moves_respect_capacity_and_agree_with_its_table(policy):
    e = Decider(policy, MIB, [8, 200])
    e.set_devices(np.arange(200), np.ones(200))
    rng = np.random.default_rng(1)
    for k in range(40):
        ex = rng.zipf(1.3, 64) % 200
        e.feed(requests(ex, rng.integers(0, 2, 64), t0=k * 10**6))
        e.check()
        moves = e.take_moves()
        for x, d in moves.items():
            assert d == e.device(x)
    st = e.stats()
    assert st["used_pages"][0] <= 8 and sum(st["used_pages"]) == 200
    assert st["promotions"] > 0


def test_decider_lru_promotes_the_accessed_extent_and_evicts_the_oldest():
    e = Decider("lru", MIB, [2, 10])
    e.set_devices(np.arange(10), [0, 0] + [1] * 8)
    e.feed(requests([5], [record.READ]))
    assert e.take_moves() == {0: 1, 5: 0}    # 5 promoted; 0, least recently placed, evicted for it
    assert e.stats()["used_pages"] == [2, 8]
    assert e.take_moves() == {}              # taken once


def test_decider_put_back_restores_a_move_not_done():
    e = Decider("lru", MIB, [2, 10])
    e.set_devices(np.arange(10), [0, 0] + [1] * 8)
    e.feed(requests([7], [record.READ]))
    assert e.take_moves()[7] == 0
    e.set_devices([7], [1])                  # the controller could not do it
    assert e.device(7) == 1
    e.check()


def test_a_refused_eviction_keeps_a_read_admitted_extent_on_the_read_list():
    """read_admit=7 pushes off only extents read admission brought.  When the controller does not
    carry out such an extent's eviction (put_back), it is still read-admitted: a later read miss may
    push it off again; told as a plain placement it would count as placed by a write and stay."""
    def third_moves(tell):
        e = Decider("harmonia", MIB, [1, 1000], params={"read_admit": 7})
        e.set_devices(np.arange(1000), np.ones(1000))
        e.feed(requests([100], [record.READ]))
        assert e.take_moves() == {100: 0}                     # the read miss admitted
        e.feed(requests([200], [record.WRITE], t0=10**6))
        asked = e.take_moves()
        assert asked == {100: 1, 200: 0}                      # a write placed, the read-admitted one evicted
        tell(e)(sorted(asked), [0, 1])                        # neither move done: both where they were
        e.feed(requests([300, 300], [record.READ] * 2, t0=2 * 10**6))
        return e.take_moves()
    assert third_moves(lambda e: e.put_back) == {100: 1, 300: 0}
    assert third_moves(lambda e: e.set_devices) == {}         # what put_back is for


def test_an_eviction_asked_back_before_it_was_taken_keeps_a_read_admitted_extent_on_the_read_list():
    """read_admit=7 on a 2-extent fast device.  Extent 100 is read-admitted, then evicted for a write
    (200); before the controller takes that eviction, the migration agent asks 100 back (m_fill: a hot
    extent below, free space above).  The eviction is undone, 100's data never left: it is read
    admission's extent again, so a later read miss (300) takes its place, as in the simulator's batch
    path (sim_batch.c); told as a plain promotion it counted as placed and the read miss stayed below."""
    e = Decider("harmonia-migration-only", MIB, [2, 1000], params={"read_admit": 7, "m_fill": 1}, migrate_every=5)
    e.set_devices(np.arange(1000), np.ones(1000))
    e.feed(requests([201, 100], [record.WRITE, record.READ]))     # 201 placed by a write, 100 read-admitted
    assert e.take_moves() == {201: 0, 100: 0}
    e.feed(requests([200, 100], [record.WRITE, record.READ], t0=10**6))   # 100 evicted for 200; the read stays
    assert e.device(100) == 1
    e.set_devices([200], [1])                 # the controller says 200 is below: a free extent above
    e.feed(requests([201], [record.READ], t0=2 * 10**6))          # the 5th request: the migration round
    assert e.device(100) == 0                                     # asked back by the migration agent
    e.take_moves()
    e.check()
    e.feed(requests([300], [record.READ], t0=3 * 10**6))
    assert e.take_moves() == {300: 0, 100: 1}


def _controller(decider, n):
    """The controller's plan() (hbl/live/controller.py) with no device under it: the decider and the
    MoveQueue are real; _batch() below carries out the batch it plans."""
    import types
    from hbl.live import controller as ctl
    from hbl.live.moves import MoveQueue
    c = ctl.Controller.__new__(ctl.Controller)
    c.meta = types.SimpleNamespace(dev=np.ones(n, np.int8), slot=np.arange(n, dtype=np.int32),
                                   written=np.ones(n, np.uint8))
    c.decider, c.unsure, c.flip, c.failed, c.newest_ts = decider, False, [], {}, 0
    c.cap = types.SimpleNamespace(stats=lambda: {"lost": 0})
    c.count = {"asked_moves": 0, "stale_moves": 0, "refused_moves": 0}
    c.queue = MoveQueue(c.count)
    c.free = [list(range(n, n + 8)), list(range(n, n + 8))]
    c.options = types.SimpleNamespace(max_batch=8, interval=0.25)
    return c


def _batch(c, now_ns):
    """A tick's batch, carried out: {extent: device} of its moves."""
    c.newest_ts = now_ns
    plan = c.plan()
    for mv in plan:
        e = mv["extent"]
        c.free[mv["src"]].append(int(c.meta.slot[e]))
        c.meta.dev[e], c.meta.slot[e] = mv["dst"], mv["dst_slot"]
    return {mv["extent"]: mv["dst"] for mv in plan}


def test_an_eviction_asked_back_while_queued_in_the_controller_keeps_a_read_admitted_extent_on_the_read_list():
    """As above, but the controller took the eviction into its queue (MoveQueue) before the migration
    agent asked 100 back, and had not started it: the eviction is undone in the decider as one asked
    back before it was taken, so 100 is read admission's extent again and a later read miss (300)
    takes its place.  Told nothing (the controller dropping the queued move, the decider counting
    100 as promoted by the migration agent), the read miss stayed below."""
    e = Decider("harmonia-migration-only", MIB, [3, 1000], params={"read_admit": 7, "m_fill": 1}, migrate_every=6)
    e.set_devices(np.arange(1000), np.ones(1000))
    c = _controller(e, 1000)
    e.feed(requests([201, 100], [record.WRITE, record.READ]))       # 201 placed by a write, 100 read-admitted
    assert _batch(c, 1000) == {201: 0, 100: 0}
    c.options.max_batch = 1
    e.feed(requests([202, 200, 100], [record.WRITE, record.WRITE, record.READ], t0=10**6))
    assert e.device(100) == 1                                       # 202 into the free slot, 100 evicted for 200
    assert _batch(c, 10**6 + 2000) == {202: 0}                      # one move a batch: 100's eviction waits
    assert c.queue.moves.keys() == {100, 200}
    e.set_devices([202], [1])                                       # the controller's own remap: 202 below
    c.meta.dev[202] = 1
    e.feed(requests([201], [record.READ], t0=2 * 10**6))            # the 6th request: the migration round
    assert e.device(100) == 0                                       # asked back by the migration agent
    c.options.max_batch = 8
    assert _batch(c, 2 * 10**6) == {200: 0}                         # 100's eviction dropped: it stays
    e.check()
    e.feed(requests([300], [record.READ], t0=3 * 10**6))
    assert _batch(c, 3 * 10**6) == {300: 0, 100: 1}
    assert all(e.device(x) == c.meta.dev[x] for x in range(1000))


@pytest.mark.parametrize("shape", [[4, 200], [2, 8, 200]])
@pytest.mark.parametrize("policy,params", [("lru", None), ("harmonia", {"read_admit": 7}), ("smq", None)])
def test_the_decider_and_the_controllers_queue_agree_on_every_extent(shape, policy, params):
    """With moves waiting in the controller's queue (two a batch) and reversed or moved on meanwhile,
    every extent is, in the decider, where the controller has it or where its queued move takes it."""
    n = shape[-1]
    e = Decider(policy, MIB, shape, params=params, migrate_every=16)
    e.set_devices(np.arange(n), np.full(n, len(shape) - 1))
    c = _controller(e, n)
    c.meta.dev[:] = len(shape) - 1
    c.free = [list(range(n, n + 64)) for _ in shape]
    c.options.max_batch = 2
    rng = np.random.default_rng(4)
    for k in range(60):
        e.feed(requests(rng.zipf(1.2, 16) % n, rng.integers(0, 2, 16), t0=k * 10**6))
        _batch(c, k * 10**6)
        if len(shape) == 2:     # (3 devices: a move put back on the middle one makes no room there)
            e.check()
        want = [c.queue.moves[x][0] if x in c.queue.moves else c.meta.dev[x] for x in range(n)]
        assert [e.device(x) for x in range(n)] == want


def test_decider_refuses_bad_input():
    with pytest.raises(HblError):
        Decider("no-such-policy", MIB, [2, 10])
    with pytest.raises(HblError):
        Decider("lru", MIB, [2])
    e = Decider("lru", MIB, [2, 10])
    with pytest.raises(HblError):
        e.set_devices([1], [5])


LIVE_QD = """
import numpy as np, sys
from hbl import record
from hbl.devices import load_hss
from hbl.sim import Simulator
rng = np.random.default_rng(2)
r = record.empty(5000)
r["offset"] = (rng.zipf(1.2, 5000) % 3000) * 4096
r["length"], r["op"], r["latency_ns"] = 4096, rng.integers(0, 2, 5000), 50_000
r["time_ns"] = np.arange(5000) * 1000
out = []
for qd in (0, 4):
    opts = dict(queue_depth=qd) if qd else dict(queue_depth=0, speed=1.0)
    s = Simulator(load_hss("perf"), "lru", [300, None], live=True, timeline_every=0, **opts)
    s.feed(r)
    s.check()
    res = s.result()
    out.append((res["promotions"], res["evictions"], res["read_hit_ratio"]))
    del s
print(out[0] == out[1], out)
"""


def test_a_live_simulator_ignores_the_queue_depth_and_keeps_its_heap():
    """Live mode replays nothing: its requests were served by the real device, so a queue depth
    given to it changes nothing. It used to push every request onto the closed-loop heap (sized for
    the queue depth) and never pop it, writing past the heap's end; in a child, so a corrupted heap
    fails this test and not the suite."""
    p = subprocess.run([sys.executable, "-c", LIVE_QD], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.startswith("True"), p.stdout


def test_decider_agents_come_from_a_simulator_run(tmp_path):
    """An agent trained by hbl simulate loads into the live decider (same policy, same shapes)."""
    from hbl.sim import simulate
    path = tmp_path / "a.hbl"
    simulate("synth:zipf:requests=3000", hss="cost", policy="harmonia", save_agents=str(path))
    e = Decider("harmonia", MIB, [8, 100], agents=str(path))   # 8 placement features, as the shipped cost agents
    assert e.agents_from == str(path)
    with pytest.raises(HblError):
        Decider("sibyl", MIB, [8, 100]).load_agents(str(path))


def live_loop(policy, params, seed, batches=600, batch=64, extents=1519, fast=500, hot=800):
    """The live loop emulated on the host: the decider decides, its moves take effect at
    once, and a request's latency is that of the device its extent was on (0.1 ms or
    10 ms).  Zipf 1.2 over `hot` extents that all start on the slow device, 70% reads.
    Returns the fast-device hit ratio over the last third, and the moves."""
    rng = np.random.default_rng(seed)
    e = Decider(policy, MIB, [fast, extents - fast + 20], params=params, seed=seed)
    e.set_devices(np.arange(extents), [0] * fast + [1] * (extents - fast))
    order = rng.permutation(hot) + (extents - hot)
    tail, moves = [], 0
    for k in range(batches):
        ex = order[(rng.zipf(1.2, batch) - 1) % hot]
        on = np.array([e.device(x) for x in ex])
        r = requests(ex, (rng.random(batch) >= 0.7).astype(np.uint8), t0=k * 10**8)
        r["latency_ns"] = np.where(on == 0, 100_000, 10_000_000)
        e.feed(r)
        moves += len(e.take_moves())
        if k >= batches * 2 // 3:
            tail.append((on == 0).mean())
    return float(np.mean(tail)), moves


def test_learning_policies_bring_the_hot_extents_up_in_the_live_loop():
    """With the live decider's defaults (each placement decision rewarded at its
    extent's next access; a training step every 25 decisions) the agents bring the
    hot extents to the fast device on every seed, as LRU does, and harmonia with a
    third of LRU's moves.  With the simulator's defaults their choices stay
    arbitrary: on some seeds the hot extents stay on the slow device."""
    lru_hits, lru_moves = live_loop("lru", [], 1)
    assert lru_hits > 0.8
    for seed in (1, 2, 3, 4):
        hits, moves = live_loop("harmonia", [], seed)
        assert hits > lru_hits - 0.05 and moves < lru_moves / 2, (seed, hits, moves)
        assert live_loop("sibyl", [], seed)[0] > lru_hits - 0.05
    sim_defaults = ["reward=0", "train_every=1000", "sync_every=1000"]
    assert min(live_loop("harmonia", sim_defaults, seed)[0] for seed in (1, 2, 3, 4)) < 0.5


def test_decider_trains_on_its_own_thread_while_deciding(tmp_path):
    """With background training the request path only decides and remembers: every
    train step and sync happens on the trainer thread, on the same schedule, while
    decisions, moves, stats and agent saves go on; stopping joins the thread and
    leaves the agents inline-trainable, and the decider's table consistent."""
    import time
    e = Decider("harmonia", MIB, [16, 400], params=["warmup=200", "m_warmup=50"])
    e.set_devices(np.arange(400), np.ones(400))
    rng = np.random.default_rng(3)
    e.start_training()
    e.start_training()                      # idempotent
    steps, k = [], 0
    deadline = time.monotonic() + 60
    # paced like the controller (a batch every few ms), until the thread has synced 5 times
    while (k < 300 or e.stats()["agents"][0]["syncs"] < 5) and time.monotonic() < deadline:
        ex = rng.zipf(1.2, 64) % 400
        e.feed(requests(ex, rng.integers(0, 2, 64), t0=k * 10**6))
        e.take_moves()
        if k % 50 == 0:
            steps.append(e.stats()["agents"][0]["train_steps"])
            e.save_agents(str(tmp_path / "a.hbl"))   # a consistent snapshot while training
        time.sleep(0.002)
        k += 1
    e.stop_training()
    e.check()
    placement, migration = e.stats()["agents"]
    decisions = placement["decisions"]
    assert decisions > 5000
    # trained by the thread, at most once per 25 decisions (the live train_every)
    assert 1 <= placement["train_steps"] <= decisions // 25
    assert placement["background_steps"] == placement["train_steps"]     # none in the request path
    assert placement["syncs"] >= 5
    assert migration["background_steps"] == migration["train_steps"] >= 1
    assert steps == sorted(steps)
    Decider("harmonia", MIB, [16, 400]).load_agents(str(tmp_path / "a.hbl"))
    # inline again: the next decisions train in the request path, the thread is gone
    before = e.stats()["agents"][0]["train_steps"]
    for j in range(40):
        e.feed(requests(rng.zipf(1.2, 64) % 400, rng.integers(0, 2, 64), t0=(k + j) * 10**6))
    after = e.stats()["agents"][0]
    assert after["train_steps"] > before and after["background_steps"] == placement["background_steps"]


def test_a_training_budget_holds_the_training_thread_to_its_share_of_a_cpu():
    """With a budget the thread sleeps after each step for the step's CPU time times
    (1/budget - 1): at 1e-4 of a CPU one step of any length is followed by a sleep 10,000
    times as long, so the decisions that make a step due hundreds of times over train it
    once or twice."""
    e = Decider("harmonia", MIB, [16, 400], params=["warmup=200", "m_warmup=50"])
    e.set_devices(np.arange(400), np.ones(400))
    rng = np.random.default_rng(3)
    e.start_training(budget=1e-4)
    k = 0
    while e.stats()["agents"][0]["decisions"] < 25 * 200:      # 200 steps due
        e.feed(requests(rng.zipf(1.2, 64) % 400, rng.integers(0, 2, 64), t0=k * 10**6))
        e.take_moves()
        time.sleep(0.001)
        k += 1
    e.stop_training()
    placement = e.stats()["agents"][0]
    assert 1 <= placement["background_steps"] <= 2, placement
