"""The live controller's own CPU on the host: its real loop (Controller.run: the records read
and observed, the decider, the batch protocol) over a synthetic request stream, with the
devices faked (no dm, no eBPF, no member I/O), so that the Python work per batch can be
measured, and two trees compared in one run, at the same load.

    scripts/ctl_bench.py --seconds 40 --rounds 2 TREE [TREE ...]

Each TREE (a checkout with its C core built) runs in a subprocess of its own, in turn,
`rounds` times.  What is faked, and how:
  - the capture: the live bench's fio job (4 KiB, 70% reads, Zipf 1.2 over 800 MiB at 600
    MiB, REQUESTS_S a second, open loop): a record on the dm device when a request is
    queued, one on the member the mapping in force sends it to when it completes
    (FAST_MS / SLOW_MS later); the copier's own I/Os recorded on the members too.  A poll
    waits its timeout (the ring wakes the consumer only once 256 KiB are waiting) and
    returns what completed by then, as the real one does.
  - the copier: no I/O; each copy sleeps as long as COPY_BPS takes over its bytes.
  - the dm views and the switch: loads and messages that do nothing, tables still built
    and packed (the ioctl backend's prepare).
The fake's own CPU (making the records) is measured and left out of the controller's.
Printed per tree and round: the controller thread's CPU as % of the wall time, and the
whole process's (the training thread included); the thread's CPU ms per batch, inside the
batches (Controller.execute), and outside them per 1000 records read (the loop's reading,
observing and deciding).  A faster controller carries more batches in the same time, so
its share of the wall time can stay put while each batch costs less: compare the
per-batch and per-record figures.  Beside them, the moves and the MiB the copier copied for
them (copies and re-copies), and MiB per move: a move of a written extent copies it whole
(1 MiB here), so a tree that copies far less per move than another at the same load has
lost track of what was written (moves made remaps without copy: data lost in a real device).
The device starts as `hbl create` makes one (clean, nothing written: a move copies only an
extent written since); --unsure starts it as after a crash (every extent counted as written,
every move copied, so the copies say nothing of the written flags; the runs recorded up to
2026-12-06 were so).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

MiB = 1 << 20
REQUESTS_S = 900          # the live bench's harmonia in the guest: 850-900 IOPS
FAST_MS, SLOW_MS = 0.2, 8.0
COPY_BPS = 60 * MiB
REGION = (600 * MiB, 800 * MiB)
SCALE = 20                # the guest (TCG) runs the controller's code about 20-30x slower than the host


class World:
    """The synthetic request stream and the records it makes, in capture time (wall ns): made
    ahead for the whole run (`seconds`), sorted by when each record is due (a dm record when
    its request is queued, a member's when it completes), so that a poll is a slice of it."""

    def __init__(self, c, dm_dev, member_devs, scale, seconds, seed=42):
        from hbl import record
        self.record, self.c, self.scale = record, c, scale
        self.dm_dev, self.member_devs = dm_dev, np.asarray(member_devs)
        rng = np.random.default_rng(seed)
        nblocks = REGION[1] // 4096
        p = 1.0 / np.arange(1, nblocks + 1) ** 1.2
        cdf = np.cumsum(p / p.sum())
        perm = rng.permutation(nblocks)
        n = int((seconds + 10) * REQUESTS_S * scale)
        t0 = time.time_ns()
        t = t0 + np.cumsum(rng.exponential(1e9 / (REQUESTS_S * scale), n)).astype(np.int64)
        off = REGION[0] + perm[np.minimum(np.searchsorted(cdf, rng.random(n)), nblocks - 1)].astype(np.int64) * 4096
        op = (rng.random(n) >= 0.7).astype(np.uint8)
        jitter = rng.uniform(0.5, 1.5, n)
        # the member and its latency are known only when the record is due (the mapping then):
        # kept per request, the slow member's latency and the fast's
        lat = np.stack([FAST_MS * 1e6 / scale * jitter, SLOW_MS * 1e6 / scale * jitter], 1).astype(np.int64)
        # events: request i queued (kind 0) at t[i]; completed (kind 1) at t[i] + its latency
        # (taken as the slow member's to order them; a fast one's completion comes out no later)
        due = np.concatenate([t, t + lat[:, 1]])
        order = np.argsort(due, kind="stable")
        self.due, self.req, self.kind = due[order], (order % n), (order >= n)
        self.t, self.off, self.op, self.lat = t, off, op, lat
        self.pos = 0
        self.own_due, self.own_recs = [], []
        self.cpu = 0.0             # the fake's own CPU seconds (left out of the controller's)
        self.records = 0
        self.stopped = False       # no more requests (the controller's shutdown drains the ring)

    def member_records(self, dev, off, length, t, lat_ns, op):
        r = self.record.empty(len(dev))
        r["device"] = self.member_devs[dev]
        r["offset"], r["length"], r["time_ns"], r["latency_ns"], r["op"] = off, length, t, lat_ns, op
        return r

    def own(self, dev, off, length, op):
        now = time.time_ns()
        lat = int(100_000 / self.scale)
        self.own_due.append(now + lat)
        self.own_recs.append(self.member_records(np.array([dev]), off, length, now, lat, op))

    def poll(self, timeout_ms):
        if timeout_ms:
            time.sleep(timeout_ms / 1e3 / self.scale)
        c0 = time.thread_time()
        now = time.time_ns()
        end = self.pos if self.stopped else int(np.searchsorted(self.due, now, "right"))
        i, kind = self.req[self.pos:end], self.kind[self.pos:end]
        self.pos = end
        out = self.record.empty(len(i))
        out["offset"], out["length"], out["time_ns"], out["op"] = self.off[i], 4096, self.t[i], self.op[i]
        out["device"] = self.dm_dev
        done = np.flatnonzero(kind)
        if len(done):          # completions: on the member the mapping in force sends them to
            m, j = self.c.meta, i[done]
            first = self.off[j] // m.extent_bytes
            dev = m.dev[first].astype(np.int64)
            start = np.array([x["data_start"] for x in m.members], np.int64)
            out["device"][done] = self.member_devs[dev]
            out["offset"][done] = start[dev] + m.slot[first].astype(np.int64) * m.extent_bytes + \
                self.off[j] % m.extent_bytes
            out["latency_ns"][done] = self.lat[j, np.minimum(dev, 1)]
        if self.own_due:
            ready = [k for k, d in enumerate(self.own_due) if d <= now]
            if ready:
                out = self.record.concat([out] + [self.own_recs[k] for k in ready])
                for k in reversed(ready):
                    del self.own_due[k], self.own_recs[k]
        self.records += len(out)
        self.cpu += time.thread_time() - c0
        return out


class FakeCapture:
    def __init__(self, world):
        self.world = world

    def poll(self, timeout_ms=50):
        return self.world.poll(timeout_ms)

    def stats(self):
        return {"lost": 0, "events": self.world.records}

    def close(self):
        pass


class FakeCopier:
    """The copier's interface, with no I/O: each copy sleeps as long as COPY_BPS takes."""

    def __init__(self, world, throttle):
        self.world, self.throttle = world, throttle
        self.own, self.bytes, self.seconds, self.dirty, self.depth = [], 0, 0.0, set(), 1

    def copy(self, src, src_off, dst, dst_off, length, limit=True, buf=None, account=True):
        time.sleep(length / COPY_BPS / self.world.scale)
        self.own += [(src, src_off, length), (dst, dst_off, length)]
        self.world.own(src, src_off, length, 0)
        self.world.own(dst, dst_off, length, 1)
        self.bytes += length
        self.dirty.add(dst)

    def copy_many(self, jobs, limit=True):
        for j in jobs:
            self.copy(*j, limit=limit)

    def flush(self, devs):
        self.dirty -= set(devs)

    def probe(self, d):
        pass

    def own_io(self):
        out, self.own = self.own, []
        return np.array(out, np.int64).reshape(-1, 3)

    def bandwidth(self):
        return 0.0

    def close(self):
        pass


class FakeView:
    def __init__(self, name):
        self.name, self.path = name, "/dev/mapper/" + name

    def load(self, table):
        pass

    def resume(self):
        pass

    def suspend(self, flush=True):
        pass


class FakeStack:
    def __init__(self):
        self.paths = [FakeView("hb.0"), FakeView("hb.1"), FakeView("hb.hold")]
        self.live, self.gone, self.messages = 0, set(), 0
        self.top = FakeView("hb")

    @property
    def next(self):
        return 1 - self.live

    def send(self, msg):
        self.messages += 1

    def assemble(self, meta):
        self.live = 0

    def remove(self):
        pass


SCALED = {"hbl.live.settle": ["SETTLE_S"], "hbl.live.batch": ["SETTLE_S"], "hbl.live.in_flight": ["IN_FLIGHT_S"],
          "hbl.live.moves": ["STALE_S"], "hbl.live.controller": ["STATUS_EVERY_S", "ASKED_EVERY_S"],
          "hbl.live.copier": ["IDLE_EVERY_S"], "hbl.live.faults": ["PROBE_S"]}


def scale_time(scale):
    """The controller's time constants divided by `scale` (those a tree has)."""
    import importlib
    for mod, names in SCALED.items():
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        for n in names:
            if hasattr(m, n):
                setattr(m, n, getattr(m, n) / scale)


def one(seconds, policy, state, scale, profile=False, unsure=False):
    """One run in this process (the tree on sys.path): a JSON line of figures."""
    from dmsetup.ioctl import Control
    from hbl.live import layout
    from hbl.live.controller import Controller
    from hbl.live.copier import Throttle
    from hbl.live.in_flight import InFlight
    from hbl.live.meta import Meta, new_uuid
    from hbl.live.open_writes import OpenWrites
    from hbl.live.options import Options
    from hbl.live.paths import Paths
    from hbl.live.status import cpu_s
    os.environ["HBL_RUN_DIR"] = os.path.join(state, "run")
    paths = Paths("hb", state)
    paths.make()
    members = [{"path": "/dev/fake-nvme", "size": 512 * MiB, "slots": 511, "spares": 5, "data_start": MiB},
               {"path": "/dev/fake-hdd", "size": 1024 * MiB, "slots": 1023, "spares": 10, "data_start": MiB}]
    dev, slot, written = layout.initial_mapping(members)
    Meta("hb", new_uuid(), MiB, members, dev, slot, written, clean=not unsure, policy=policy).save(paths.meta)
    scale_time(scale)
    c = Controller(paths, Options(policy=policy, interval=Options.interval / scale))
    c.dm_dev, member_devs = 1000, [1001, 1002]
    c.member_dev = {d: i for i, d in enumerate(member_devs)}
    world = World(c, c.dm_dev, member_devs, scale, seconds)
    c.cap = FakeCapture(world)
    c.open_writes = OpenWrites(c.meta, [False, False], os.getpid())
    c.in_flight = InFlight(c.meta, [False, False])
    c.member_rdev = {}
    c.copier = FakeCopier(world, Throttle(c.options.copy_rate, ceiling=c.options.copy_limit))
    c.dm = Control.__new__(Control)           # prepare() only: the tables packed as for the kernel
    c.stack = FakeStack()
    c.dev = c.stack.top
    c.clock_offset = time.time_ns() - time.monotonic_ns()
    c.log = lambda msg: None
    box = {"in_batches": 0.0}
    execute = c.execute

    def timed(plan):          # the CPU of the batches alone (the fake's left out)
        t0, f0 = time.thread_time(), world.cpu
        execute(plan)
        box["in_batches"] += time.thread_time() - t0 - (world.cpu - f0)
    c.execute = timed

    def stop():
        time.sleep(seconds)
        box["thread"] = time.clock_gettime(box["clock"]) - box["t0"]
        box["process"] = cpu_s() - box["p0"]
        box["wall"] = time.monotonic() - box["w0"]
        box["batches"], box["records"], box["fake"], box["batch_cpu"] = c.batches, world.records, world.cpu, \
            box["in_batches"]
        world.stopped = c.stop = True
    box["clock"] = time.pthread_getcpuclockid(threading.get_ident())
    box["t0"], box["p0"], box["w0"] = time.clock_gettime(box["clock"]), cpu_s(), time.monotonic()
    threading.Thread(target=stop, daemon=True).start()
    if profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.runcall(c.run)
        pstats.Stats(prof, stream=sys.stderr).sort_stats(os.environ.get("HBL_PROFILE_SORT", "cumulative")).print_stats(60)
    else:
        c.run()
    own = box["thread"] - box["fake"]
    return {"controller_thread_pct": 100 * own / box["wall"], "process_pct": 100 * (box["process"] - box["fake"]) /
            box["wall"], "batches": box["batches"], "records": box["records"],
            "ms_per_batch": 1e3 * box["batch_cpu"] / max(box["batches"], 1),
            "ms_per_1k_records": 1e6 * (own - box["batch_cpu"]) / max(box["records"], 1),
            "moves": c.count["promotions"] + c.count["evictions"], "stale": c.count["stale_moves"],
            "copied_mib": c.copier.bytes / MiB,
            "asked": c.count["asked_moves"], "fake_pct": 100 * box["fake"] / box["wall"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="*", help="checkouts to compare (default: this one)")
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--policy", default="harmonia")
    ap.add_argument("--scale", type=float, default=SCALE, help="time runs this much faster than in the guest "
                    "(requests, latencies, copies, the controller's intervals): the host's CPU is that much faster")
    ap.add_argument("--unsure", action="store_true", help="the device as after a crash: every extent counted as "
                    "written, every move copied (as the runs recorded up to 2026-12-06)")
    ap.add_argument("--profile", action="store_true", help="one run of this tree, in this process, under cProfile")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one or a.profile:
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as state:
            print(json.dumps(one(a.seconds, a.policy, state, a.scale, a.profile, a.unsure)))
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = a.trees or [here]
    print("# %s, %s, time scale %g, %s, load %s" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), a.policy, a.scale,
        "unsure (every extent written)" if a.unsure else "clean (nothing written at first)",
        " ".join("%.2f" % x for x in os.getloadavg())))
    print("%-28s %5s %9s %9s %8s %8s %11s %6s %6s %7s %8s" % ("tree (commit)", "round", "thread %", "process %",
                                                              "batches", "ms/batch", "ms/1k recs", "moves", "stale",
                                                              "MiB cp", "MiB/move"))
    print("#   (ms/batch: CPU inside each batch; ms/1k recs: CPU outside the batches per 1000 records read;"
          " MiB cp: copied and re-copied; a written extent's move copies its 1 MiB)")
    for r in range(a.rounds):
        for tree in trees:
            rev = subprocess.run(["git", "-C", tree, "describe", "--always", "--dirty"], capture_output=True,
                                 text=True).stdout.strip()
            env = dict(os.environ, PYTHONPATH=tree)
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", "--seconds", str(a.seconds),
                                  "--policy", a.policy, "--scale", str(a.scale)] + ["--unsure"] * a.unsure,
                                 cwd=tree, env=env, capture_output=True, text=True)
            if out.returncode:
                sys.exit("%s: %s" % (tree, out.stderr.strip()[-2000:]))
            f = json.loads(out.stdout.strip().splitlines()[-1])
            print("%-28s %5d %9.1f %9.1f %8d %8.2f %11.2f %6d %6d %7.0f %8.2f" % (
                "%s (%s)" % (os.path.basename(tree.rstrip("/")), rev), r + 1, f["controller_thread_pct"],
                f["process_pct"], f["batches"], f["ms_per_batch"], f["ms_per_1k_records"], f["moves"], f["stale"],
                f["copied_mib"], f["copied_mib"] / max(f["moves"], 1)), flush=True)
    print("# load at the end %s" % " ".join("%.2f" % x for x in os.getloadavg()))


if __name__ == "__main__":
    main()
