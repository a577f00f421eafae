"""The live device's layers that need no device-mapper: the decider (the C
policies in live mode), metadata, layout and the safety checks (the last on
real loop devices, as root).  The controller itself runs in the VM
(vm/guest/tests/test_live.py, run by tests/test_vm.py)."""
import os
import subprocess
import time
import sys

import numpy as np
import pytest

from hbl import record
from hbl.errors import HblError
from hbl.live import layout
from hbl.live.decider import Decider
from hbl.live.meta import Meta, MetaError, new_uuid, parse_superblock, superblock
from hbl.live.status import CpuLedger

MIB = 1 << 20


def requests(extents, ops, t0=0):
    r = record.empty(len(extents))
    r["offset"] = np.asarray(extents) * MIB
    r["length"] = 4096
    r["op"] = ops
    r["latency_ns"] = 100_000
    r["time_ns"] = t0 + np.arange(len(extents)) * 1000
    return r


# ---- decider ----

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

# ---- metadata ----

def meta(n=50):
    members = [{"path": "/dev/a", "size": 32 * MIB, "slots": 31, "spares": 4, "data_start": MIB},
               {"path": "/dev/b", "size": 64 * MIB, "slots": 63, "spares": 4, "data_start": MIB}]
    dev, slot, written = layout.initial_mapping(members)
    return Meta("t", new_uuid(), MIB, members, dev, slot, written)


def test_meta_round_trip_and_atomic_replace(tmp_path):
    m = meta()
    m.written[3] = 1
    m.generation = 7
    p = str(tmp_path / "meta")
    m.save(p)
    got = Meta.load(p)
    assert (got.dev == m.dev).all() and (got.slot == m.slot).all() and (got.written == m.written).all()
    assert got.generation == 7 and got.uuid == m.uuid and got.members == m.members
    assert os.listdir(tmp_path) == ["meta"]          # no temporary file left behind
    assert oct(os.stat(p).st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("damage", ["flip", "truncate", "magic", "header", "empty"])
def test_meta_damage_is_refused_with_the_file_named(tmp_path, damage):
    p = str(tmp_path / "meta")
    meta().save(p)
    data = bytearray(open(p, "rb").read())
    if damage == "flip":
        data[-10] ^= 1
    elif damage == "truncate":
        data = data[:-5]
    elif damage == "magic":
        data[0] ^= 0xff
    elif damage == "header":
        data[20] ^= 1
    else:
        data = b""
    open(p, "wb").write(data)
    with pytest.raises(MetaError) as exc:
        Meta.load(p)
    assert p in str(exc.value)


def test_meta_refuses_a_mapping_that_uses_a_slot_twice(tmp_path):
    m = meta()
    m.slot[1] = m.slot[0]
    with pytest.raises(MetaError, match="same slot"):
        m.save(str(tmp_path / "meta"))
    assert not os.path.exists(tmp_path / "meta")


def test_superblock_round_trip_and_damage():
    u = new_uuid()
    b = superblock(u, 1, 2, MIB, 64 * MIB, MIB)
    assert len(b) == 4096
    sb = parse_superblock(b)
    assert sb["uuid"] == u and sb["index"] == 1 and sb["extent_bytes"] == MIB
    bad = bytearray(b)
    bad[20] ^= 1
    assert parse_superblock(bytes(bad)) == {"damaged": True}
    assert parse_superblock(bytes(4096)) is None


# ---- layout ----

def test_layout_capacity_spares_and_merged_table():
    m = meta()
    caps = layout.capacities(m.members)
    assert caps == [27, 59] and m.nextents == 86
    t = layout.table(m)
    assert len(t) == 2 and t.sectors == 86 * 2048
    # move extent 5 to the HDD's first spare slot: the table splits around it
    free = layout.free_slots(m)
    assert free[0] == [27, 28, 29, 30] and free[1] == [59, 60, 61, 62]
    m.dev[5], m.slot[5] = 1, free[1][0]
    t = layout.table(m)
    segs = [(s, x.sectors, x.dev, x.offset) for s, x in t.segments()]
    assert segs[1] == (5 * 2048, 2048, "/dev/b", (1 + 59) * 2048)
    assert sum(x.sectors for _, x in t.segments()) == 86 * 2048
    assert layout.free_slots(m)[0][0] == 5


def test_tables_name_block_members_by_number(tmp_path):
    """A table names a member MAJOR:MINOR (no path lookup per target in the kernel); a path
    that is not a block device stays a path, for the load to name it."""
    import glob
    import stat as st_
    f = tmp_path / "img"
    f.write_bytes(b"")
    blk = [p for p in sorted(glob.glob("/dev/loop*") + glob.glob("/dev/[sv]d?") + glob.glob("/dev/nvme?n?"))
           if st_.S_ISBLK(os.stat(p).st_mode)][:1]
    names = layout.kernel_names([{"path": str(f)}, {"path": "/nonexistent"}] + [{"path": p} for p in blk])
    assert names[:2] == [str(f), "/nonexistent"]
    if blk:
        r = os.stat(blk[0]).st_rdev
        assert names[2] == "%d:%d" % (os.major(r), os.minor(r))
        m = meta()
        m.members[1]["path"] = blk[0]
        t = layout.table(m)
        assert t.text().splitlines()[-1].split()[3] == names[2]


def test_partial_table_maps_only_the_given_extents():
    """The hold's table: the extents given, each where the mapping puts it, and an error
    target everywhere else (no other extent is routed to the hold)."""
    m = meta()
    m.dev[5], m.slot[5] = 1, 59
    t = layout.partial_table(m, [5, 0, 85, 5])
    segs = [(s, x.sectors, x.type, getattr(x, "dev", None), getattr(x, "offset", None)) for s, x in t.segments()]
    assert segs == [(0, 2048, "linear", "/dev/a", 2048), (2048, 4 * 2048, "error", None, None),
                    (5 * 2048, 2048, "linear", "/dev/b", (1 + 59) * 2048), (6 * 2048, 79 * 2048, "error", None, None),
                    (85 * 2048, 2048, "linear", "/dev/b", (1 + 58) * 2048)]
    assert t.sectors == layout.table(m).sectors == 86 * 2048


def test_a_gone_members_extents_are_an_error_target_in_every_table(tmp_path):
    """A member removed under the device cannot be named by a table (the load fails): its
    extents map to an error target, as its I/O would fail, and the others stay where they are."""
    m = meta()
    m.dev[5], m.slot[5] = 1, 59
    t = layout.table(m, gone={1})
    segs = [(s, x.sectors, x.type, getattr(x, "dev", None)) for s, x in t.segments()]
    assert segs[0] == (0, 5 * 2048, "linear", "/dev/a") and segs[1] == (5 * 2048, 2048, "error", None)
    assert all(x.type == "error" for s, x in t.segments() if s >= 27 * 2048)        # the HDD's extents
    assert not any(getattr(x, "dev", None) == "/dev/b" for _, x in t.segments())
    assert t.sectors == layout.table(m).sectors
    assert next(layout.table(m, gone={0}).segments())[1].type == "error"
    hold = layout.partial_table(m, [0, 5], gone={1})
    assert [x.type for _, x in hold.segments()][:3] == ["linear", "error", "error"]
    f = tmp_path / "img"
    f.write_bytes(b"")
    assert layout.gone_members([{"path": str(f)}, {"path": str(tmp_path / "removed")}]) == {1}


def test_sizes_parse():
    assert layout.parse_size("1M") == MIB and layout.parse_size("256K") == 256 << 10
    assert layout.parse_size("4194304") == 4 * MIB
    with pytest.raises(HblError):
        layout.parse_size("lots")


# ---- safety, on real loop devices ----

def _loop_why():
    if os.geteuid() != 0:
        return "needs root (loop devices)"
    if subprocess.run(["losetup", "-f"], capture_output=True).returncode:
        return "no free loop device"
    return None


LOOP_WHY = _loop_why()


@pytest.fixture
def loops(tmp_path):
    if LOOP_WHY:
        pytest.skip(LOOP_WHY)
    devs = []
    for i, mb in enumerate((16, 32)):
        f = tmp_path / ("d%d.img" % i)
        with open(f, "wb") as fh:
            fh.truncate(mb * MIB)
        devs.append(subprocess.run(["losetup", "-f", "--show", str(f)], capture_output=True, text=True,
                                   check=True).stdout.strip())
    yield devs
    for d in devs:
        subprocess.run(["losetup", "-d", d])


def hbl(*args, state):
    return subprocess.run([sys.executable, "-m", "hbl.cli"] + list(args) + ["--state-dir", state],
                          capture_output=True, text=True)


def test_safety_signatures(loops):
    from hbl.live.safety import Refused, check_device, check_devices
    fast, slow = loops
    check_devices([fast, slow])                     # blank: fine
    subprocess.run(["mkfs.ext4", "-q", "-F", fast], check=True)
    with pytest.raises(Refused, match="ext2/3/4"):
        check_device(fast)
    check_device(fast, force=True)                  # --force overrides a signature
    with open(slow, "r+b") as f:                    # a GPT header, as a partitioning tool leaves it
        f.seek(510)
        f.write(b"\x55\xaa" + b"EFI PART")
    with pytest.raises(Refused, match="GPT partition table"):
        check_device(slow)
    with pytest.raises(Refused, match="same device"):
        check_devices([fast, fast], force=True)
    with pytest.raises(Refused, match="2 to 4"):
        check_devices([fast])


def test_safety_mounted_is_refused_even_with_force(loops, tmp_path):
    from hbl.live.safety import Refused, check_device
    fast, _ = loops
    subprocess.run(["mkfs.ext4", "-q", "-F", fast], check=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", fast, str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount ext4 here")
    try:
        with pytest.raises(Refused, match="mounted on %s" % mnt):
            check_device(fast, force=True)
    finally:
        subprocess.run(["umount", str(mnt)])


def test_up_refuses_before_writing_anything(loops, tmp_path):
    """On a host without device-mapper, hbl up says so and writes nothing: no superblock, no metadata."""
    fast, slow = loops
    state = str(tmp_path / "state")
    r = hbl("up", "t0", "--dev", fast, "--dev", slow, state=state)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    if os.path.exists("/dev/mapper/control"):
        pytest.skip("device-mapper is available here: the VM suite covers hbl up")
    assert "device-mapper is not available" in r.stderr
    with open(fast, "rb") as f:
        assert parse_superblock(f.read(4096)) is None
    assert not os.path.exists(os.path.join(state, "t0", "meta"))


# ---- the commands, offline (no device-mapper needed) ----

def test_status_and_top_of_a_device_that_is_down(tmp_path):
    import json
    state = str(tmp_path)
    m = meta()
    os.makedirs(os.path.join(state, "t"))
    m.counters = {"reads": 10, "writes": 5, "promotions": 3, "evictions": 2, "migrated_bytes": 5 * MIB}
    m.save(os.path.join(state, "t", "meta"))
    env = dict(os.environ, HBL_RUN_DIR=str(tmp_path / "run"))
    r = subprocess.run([sys.executable, "-m", "hbl.cli", "status", "t", "--json", "--state-dir", state],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["state"] == "down" and st["extents"] == 86 and st["promotions"] == 3
    assert [d["extents"] for d in st["devices"]] == [27, 59] and [d["free_slots"] for d in st["devices"]] == [4, 4]
    r = subprocess.run([sys.executable, "-m", "hbl.cli", "status", "t", "--state-dir", state],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "t: down" in r.stdout and "/dev/b" in r.stdout
    r = subprocess.run([sys.executable, "-m", "hbl.cli", "top", "t", "--once", "--state-dir", state],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "hbl top t" in r.stdout and "none yet" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["status", "nope"], "no live device nope"),
    (["top", "nope", "--once"], "no live device nope"),
    (["status", "bad/name"], "not a usable device name"),
    (["up", "x", "--copy-limit", "fast"], "'fast' is not a size"),
    (["up", "x", "--copy-limit", "100K"], "--copy-limit 100K: at least 1M a second"),
    (["up", "x", "--copy-rate", "512K"], "--copy-rate 512K: at least 1M a second"),
    (["up", "x", "--copy-rate", "8M", "--copy-limit", "8M"], "one or the other"),
    (["up", "x", "--copy-depth", "0"], "--copy-depth 0: from 1 to 16"),
])
def test_commands_name_what_is_wrong(tmp_path, args, message):
    r = subprocess.run([sys.executable, "-m", "hbl.cli"] + args + ["--state-dir", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_up_without_devices_needs_metadata_and_no_creation_flags(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("hbl up checks for root first")
    r = hbl("up", "nope", state=str(tmp_path))
    assert r.returncode == 2 and "no live device nope" in r.stderr and "--dev FAST --dev SLOW" in r.stderr
    os.makedirs(tmp_path / "t")
    meta().save(str(tmp_path / "t" / "meta"))
    r = hbl("up", "t", "--force", state=str(tmp_path))
    assert r.returncode == 2 and "go with --dev" in r.stderr


def test_controller_pid_is_none_without_a_running_controller(tmp_path, monkeypatch):
    from hbl.live.paths import Paths, controller_pid
    monkeypatch.setenv("HBL_RUN_DIR", str(tmp_path / "run"))
    p = Paths("x", str(tmp_path))
    assert controller_pid(p) is None
    os.makedirs(os.path.dirname(p.lock), exist_ok=True)
    open(p.lock, "w").write("12345")
    assert controller_pid(p) is None           # a stale pid file without the lock held means nothing


def test_state_directory_that_cannot_be_made_is_one_line(tmp_path, monkeypatch):
    from hbl.live.paths import Paths
    monkeypatch.setenv("HBL_RUN_DIR", str(tmp_path / "run"))
    ro = tmp_path / "ro"
    ro.write_text("a file, not a directory")
    with pytest.raises(HblError) as e:
        Paths("x", str(ro)).make()
    assert str(ro / "x") in str(e.value) and "--state-dir" in str(e.value) and "\n" not in str(e.value)
    ok = Paths("y", str(tmp_path / "state"))
    ok.make()
    assert os.path.isdir(ok.dir) and os.path.isdir(ok.run)


def test_the_controller_takes_its_options_and_the_metadata_for_the_rest(tmp_path, monkeypatch):
    """hbl up's flags reach the controller as one Options; what they leave out comes from the
    metadata (the policy) or the environment (the rate the adaptive copy limit starts at)."""
    from hbl.live.controller import Controller
    from hbl.live.options import Options
    from hbl.live.paths import Paths
    monkeypatch.setenv("HBL_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("HBL_COPY_RATE", str(8 * MIB))
    p = Paths("t", str(tmp_path))
    p.make()
    m = meta()
    m.policy = "lru"
    m.save(p.meta)
    c = Controller(p, Options(max_batch=3), log=lambda msg: None)
    assert c.policy == "lru" and c.options.max_batch == 3 and c.options.copy_rate == 8 * MIB
    assert c.options.interval == Options.interval
    c = Controller(p, Options(policy="smq", copy_rate=16 * MIB), log=lambda msg: None)
    assert c.policy == "smq" and c.options.copy_rate == 16 * MIB and c.options.max_batch == Options.max_batch


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
    c.unobserved, c.full_batch, c.options = [], None, Options(max_batch=8)
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
    c.unobserved, c.unobserved_n = [], 0
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


def test_page_accesses_count_every_extent_a_request_spans():
    from hbl.live.observe import page_accesses
    dev = np.array([0, 1, 0, 0, 1])
    first, last = np.array([0, 0, 1, 2]), np.array([0, 4, 1, 3])
    writes = np.array([False, False, True, True])
    assert page_accesses(dev, first, last, writes) == {"read_pages": 6, "fast_read_pages": 4,
                                                       "write_pages": 3, "fast_write_pages": 2}


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
    c.unobserved, c.full_batch, c.options = [], None, Options(max_batch=2)
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
    c.unobserved, c.unobserved_n = [], 0

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
    assert (c.count["reads"], c.count["writes"]) == (1, 2) and c.unobserved == []
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

def test_each_copier_io_ends_one_completion_alike_the_first_not_ended_yet():
    """match_once: an own I/O ends the first completion with its member, offset and length
    that no own I/O before it ended; one that finds none is left (for the next call)."""
    from hbl.live.observe import match_once
    done = np.array([[0, 4096, 4096], [1, 0, 4096], [0, 4096, 4096], [0, 4096, 8192], [0, 4096, 4096]], np.int64)
    own = np.array([[0, 4096, 4096], [1, 8192, 4096], [0, 4096, 4096], [1, 0, 4096], [1, 0, 4096]], np.int64)
    keep, matched = match_once(done, own)
    assert keep.tolist() == [False, False, False, True, True]
    assert matched.tolist() == [True, False, True, True, False]
