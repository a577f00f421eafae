"""What sorting out the requests in flight costs the controller's thread (inside the VM, or on
the host): Observer.track over a synthetic stream as the live bench makes it, nothing else.

    hbl vm run -- python3 /hbl/vm/guest/bench_track.py [CALLS [REQUESTS]]

Each of CALLS calls (default 300) is given REQUESTS requests (default 150: a settle pass's or
a finish's share at the bench's ~700 IOPS) on the dm device, 4 KiB at Zipf-like addresses over
800 extents, and their completions on the members where the mapping sends them, with a request
in 50 left with no completion (a merge) and a copier's own I/O in 20 calls.  Prints the thread
CPU (time.thread_time) a call, mean and median, and the requests kept in flight at the end, so
that two trees (before and after a change) are compared by running it from each.
"""
import sys
import time
import types

sys.path.insert(0, "/hbl")
import numpy as np  # noqa: E402

from hbl import record  # noqa: E402
from hbl.live.in_flight import InFlight  # noqa: E402
from hbl.live.observe import Observer  # noqa: E402

MiB = 1 << 20
DM, MEMBERS = 99, (7, 8)


def observer(nextents=1519, fast=500):
    dev = (np.arange(nextents) >= fast).astype(np.int8)
    slot = np.where(dev == 0, np.arange(nextents), np.arange(nextents) - fast).astype(np.int32)
    meta = types.SimpleNamespace(extent_bytes=MiB, nextents=nextents, dev=dev, slot=slot,
                                 members=[{"data_start": MiB}, {"data_start": MiB}])
    o = Observer()
    o.meta, o.dm_dev, o.member_dev = meta, DM, {d: i for i, d in enumerate(MEMBERS)}
    o.held, o.batch, o.unsorted, o.unsorted_n = None, None, [], 0
    o.own_io = np.zeros((0, 3), np.int64)
    o.copier = types.SimpleNamespace(own_io=lambda: o.pending_own.pop() if o.pending_own else
                                     np.zeros((0, 3), np.int64))
    o.pending_own = []
    o.in_flight = InFlight(meta, [False, False])
    return o


def stream(o, rng, n, t0):
    m = o.meta
    ext = np.minimum(rng.zipf(1.2, n) - 1, m.nextents - 1).astype(np.int64)
    off = ext * MiB + rng.integers(0, 256, n) * 4096
    t = t0 + np.arange(n, dtype=np.int64) * 1000
    q = record.empty(n)
    q["time_ns"], q["device"], q["offset"], q["length"], q["op"] = t, DM, off, 4096, record.READ
    done = rng.random(n) >= 0.02
    d = m.dev[ext[done]].astype(np.int64)
    phys = MiB + m.slot[ext[done]].astype(np.int64) * MiB + off[done] - ext[done] * MiB
    c = record.empty(int(done.sum()))
    c["time_ns"], c["device"], c["offset"], c["length"] = t[done], np.array(MEMBERS)[d], phys, 4096
    c["latency_ns"], c["op"] = 200_000, record.READ
    return q, c


def main(argv):
    calls = int(argv[1]) if len(argv) > 1 else 300
    n = int(argv[2]) if len(argv) > 2 else 150
    rng = np.random.default_rng(42)
    o = observer()
    spent, t0 = [], time.time_ns()
    for i in range(calls):
        q, c = stream(o, rng, n, t0 + i * n * 1000)
        if i % 20 == 0:            # a copy: its I/Os recorded on the members, and taken from the copier
            own = np.array([[0, MiB, MiB], [1, 2 * MiB, MiB]], np.int64)
            o.pending_own.append(own)
            extra = record.empty(2)
            extra["device"], extra["offset"], extra["length"] = MEMBERS, own[:, 1], MiB
            extra["latency_ns"], extra["time_ns"] = 1, t0 + i * n * 1000
            c = record.concat([c, extra])
        o.unsorted = [q, c]
        a = time.thread_time()
        o.track()
        spent.append(time.thread_time() - a)
    s = np.array(spent) * 1e3
    print("track: %d calls of %d requests: thread CPU %.3f ms a call (median %.3f); %d kept in flight at the end"
          % (calls, n, s.mean(), np.median(s), len(o.in_flight.t)))


if __name__ == "__main__":
    main(sys.argv)
