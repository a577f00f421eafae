"""What a batch's dm operations cost the controller's thread, the old way against the stack's (inside the VM):

    hbl vm run -- python3 /hbl/vm/guest/bench_batch_dm.py [BATCHES [MOVES]]

A live device's stack (hbl.live.stack, named hbl-dmbench) over the NVMe and the HDD with a
fragmented mapping (extents of the two members traded at random until the table has ~1,500
targets, as the live bench's has), then BATCHES batches (default 60) of MOVES moves (default 8)
each way, measured as the thread's CPU (user + kernel, time.thread_time) and the wall time of
the batch's dm table operations (routing messages left out: both ways send the same):
  old    the next view loaded whole and resumed; the hold loaded with the moving extents (error
         targets around them) and resumed, suspended; the live view suspended (drain); the hold
         resumed (release); the drained view loaded whole and resumed (reload)
  stack  the next view loaded with stack.next_table() (over the base; a new base, whole, now and
         then) and resumed; the hold over it suspended; the live view suspended; the hold resumed;
         the drained view loaded with the same table and resumed
Prints the mean and median a batch (the mean carries the new bases).  Writes no block device:
the devices are assembled and removed, never opened for I/O.
"""
import os
import sys
import time

sys.path.insert(0, "/hbl")
import numpy as np  # noqa: E402
from dmsetup import Error, Linear, Table  # noqa: E402
from dmsetup.ioctl import Control  # noqa: E402
from hbl.live import layout  # noqa: E402
from hbl.live.meta import Meta, new_uuid  # noqa: E402
from hbl.live.stack import Stack  # noqa: E402

MEMBERS = ["/dev/nvme0n1", "/dev/vda"]
MIB = 1 << 20


def fragmented(rng):
    members = layout.plan_members(MEMBERS, MIB)
    dev, slot, written = layout.initial_mapping(members)
    m = Meta("hbl-dmbench", new_uuid(), MIB, members, dev, slot, written)
    while len(layout.table(m)) < 1500:
        trade(m, rng, 64)
    return m


def trade(m, rng, n):
    """n moves: n/2 extents of each member trade slots; the moving extents."""
    a = rng.choice(np.flatnonzero(m.dev == 0), n // 2, replace=False)
    b = rng.choice(np.flatnonzero(m.dev == 1), n // 2, replace=False)
    sa, sb = m.slot[a].copy(), m.slot[b].copy()
    m.dev[a], m.slot[a], m.dev[b], m.slot[b] = 1, sb, 0, sa
    return np.sort(np.concatenate([a, b]))


def hold_table(m, extents, numbers):
    """The old hold's table: the extents where the mapping puts them, error targets around them."""
    ext, targets, at = m.extent_bytes // 512, [], 0
    for e in extents.tolist():
        if e > at:
            targets.append(Error((e - at) * ext))
        d = int(m.dev[e])
        targets.append(Linear(ext, numbers[d], layout.slot_offset(m, d, m.slot[e]) // 512))
        at = e + 1
    if at < m.nextents:
        targets.append(Error((m.nextents - at) * ext))
    return Table(targets)


def old_batch(s, m, moving, last, numbers, dm):
    whole = dm.prepare(layout.table(m, numbers).validate())
    nxt, live, hold = s.paths[s.next], s.paths[s.live], s.paths[2]
    nxt.load(whole)
    nxt.resume()
    hold.load(dm.prepare(hold_table(m, np.union1d(moving, last), numbers).validate()))
    hold.resume()
    hold.suspend()
    live.suspend()
    hold.resume()
    s.live = s.next
    live.load(whole)
    live.resume()


def stack_batch(s, m, moving, last, numbers, dm):
    table = s.next_table(m)
    s.load_view(s.next, table)
    hold = s.paths[s.hold_of(s.next)]
    hold.suspend()
    s.paths[s.live].suspend()
    hold.resume()
    s.live = s.next
    s.load_view(s.next, table)


def main(argv):
    batches = int(argv[0]) if argv else 60
    moves = int(argv[1]) if len(argv) > 1 else 8
    rng = np.random.default_rng(1)
    m = fragmented(rng)
    numbers = layout.kernel_names(m.members)
    dm = Control()
    s = Stack(m, dm).assemble(m)
    try:
        print("mapping: %d extents, %d targets whole; %d batches of %d moves each way" % (
            m.nextents, len(layout.table(m)), batches, moves))
        for label, step in (("old", old_batch), ("stack", stack_batch), ("old", old_batch), ("stack", stack_batch)):
            s.assemble(m)
            last, out = np.zeros(0, np.int64), []
            for _ in range(batches):
                moving = trade(m, rng, moves)
                c0, w0 = time.thread_time(), time.perf_counter()
                step(s, m, moving, last, numbers, dm)
                out.append((time.thread_time() - c0, time.perf_counter() - w0))
                last = moving
            a = np.array(out) * 1e3
            print("%-6s a batch: thread CPU mean %6.2f ms median %6.2f ms; wall mean %6.2f ms median %6.2f ms" % (
                label, a[:, 0].mean(), np.median(a[:, 0]), a[:, 1].mean(), np.median(a[:, 1])))
    finally:
        s.remove()


if __name__ == "__main__":
    main(sys.argv[1:])
