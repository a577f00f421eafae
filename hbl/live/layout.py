"""Extents and slots: how a live device's logical space sits on its members.

Each member keeps its first extent for the superblock; the rest is cut into
slots of one extent.  The logical device has as many extents as all members
have slots, minus a few spare slots per device held back so that a move always
has somewhere to go.  The dm table is built from the mapping, one linear
target per run of extents that are contiguous on the same member.
"""
import errno
import fcntl
import os
import stat
import struct

import numpy as np

from dmsetup import Error, Linear, LinearRuns, Table
from hbl.errors import HblError

SECTOR = 512
BLKGETSIZE64 = 0x80081272


def device_size(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = fcntl.ioctl(fd, BLKGETSIZE64, b"\0" * 8)
        return struct.unpack("<Q", buf)[0]
    finally:
        os.close(fd)


def parse_size(text):
    """'1M' -> 1048576; plain numbers are bytes."""
    t = str(text).strip().upper().rstrip("B").rstrip("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    try:
        return int(float(t[:-1] if t[-1:] in "KMG" else t) * mult)
    except ValueError:
        raise HblError("%r is not a size (e.g. 1M, 256K, 4194304)" % text) from None


def default_spares(slots):
    """A few spare slots: 1% of the device, at least 4, at most 64."""
    return int(min(64, max(4, slots // 100)))


def plan_members(paths, extent_bytes, spares=None):
    if extent_bytes < 64 << 10 or extent_bytes & (extent_bytes - 1):
        raise HblError("the extent size must be a power of two of at least 64K, not %d" % extent_bytes)
    members = []
    for p in paths:
        size = device_size(p)
        slots = size // extent_bytes - 1          # the first extent holds the superblock
        sp = default_spares(slots) if spares is None else int(spares)
        if slots < sp + 2:
            raise HblError("%s: %d bytes hold %d extents of %d bytes; at least %d are needed (%d spare)" % (
                p, size, max(slots, 0), extent_bytes, sp + 2, sp))
        members.append({"path": p, "size": size, "slots": int(slots), "spares": sp, "data_start": extent_bytes})
    return members


def capacities(members):
    """Extents each member may hold (its slots less its spares)."""
    return [m["slots"] - m["spares"] for m in members]


def initial_mapping(members):
    """Logical extents laid out over the members in order, fastest first; nothing written yet."""
    caps = capacities(members)
    dev = np.concatenate([np.full(c, i, np.int8) for i, c in enumerate(caps)])
    slot = np.concatenate([np.arange(c, dtype=np.int32) for c in caps])
    return dev, slot, np.zeros(len(dev), np.uint8)


def kernel_names(members):
    """The members as a table names them: MAJOR:MINOR, which the kernel reads as it is, where
    a path costs a lookup per target (a table has a target per run of extents, thousands),
    or the path of one that is not a block device (the load then names it)."""
    out = []
    for m in members:
        try:
            st = os.stat(m["path"])
        except OSError:
            st = None
        out.append("%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
                   if st is not None and stat.S_ISBLK(st.st_mode) else m["path"])
    return out


def gone_members(members):
    """The members whose device can no longer be opened (removed under the live device: a table
    that names one fails to load), by index."""
    out = set()
    for d, m in enumerate(members):
        try:
            os.close(os.open(m["path"], os.O_RDONLY | os.O_NONBLOCK))
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENXIO, errno.ENODEV):
                out.add(d)
    return out


def table(meta, paths=None, gone=()):
    """The dm-linear table of a mapping: merged runs of contiguous extents, on `paths` (by
    default the members as kernel_names() gives them); the extents of a member in `gone`
    (removed: a table cannot name it) are an error target, as its I/O would be."""
    paths = paths or kernel_names(meta.members)
    ext = meta.extent_bytes // SECTOR
    dev, slot = meta.dev, meta.slot
    n = len(dev)
    # a run breaks where the device changes or the slot does not follow
    brk = np.ones(n, bool)
    brk[1:] = (dev[1:] != dev[:-1]) | (slot[1:] != slot[:-1] + 1)
    starts = np.flatnonzero(brk)
    ends = np.append(starts[1:], n)
    data_start = np.array([m["data_start"] // SECTOR for m in meta.members], np.int64)
    d = dev[starts].astype(np.int64)
    runs = LinearRuns((ends - starts) * ext, d, data_start[d] + slot[starts].astype(np.int64) * ext, paths)
    if not gone or not set(gone) & set(d.tolist()):
        return runs
    return Table([Error(n) if dd in gone else Linear(n, paths[dd], o)
                  for n, dd, o in zip(runs.n.tolist(), runs.dev.tolist(), runs.offset.tolist())])


def partial_table(meta, extents, paths=None, gone=()):
    """A table that maps only `extents` (as the mapping places them), one linear target each;
    the rest of the logical space is an error target (what the hold's view needs: no other
    extent is ever routed to it, and one that were would fail rather than reach a slot), and
    so is an extent on a member in `gone`."""
    paths = paths or kernel_names(meta.members)
    ext = meta.extent_bytes // SECTOR
    targets, at = [], 0
    for e in sorted(set(int(x) for x in extents)):
        if e > at:
            targets.append(Error((e - at) * ext))
        d = int(meta.dev[e])
        targets.append(Error(ext) if d in gone else Linear(ext, paths[d], slot_offset(meta, d, meta.slot[e]) // SECTOR))
        at = e + 1
    if at < meta.nextents:
        targets.append(Error((meta.nextents - at) * ext))
    return Table(targets)


def free_slots(meta):
    """Per member, the slots no extent uses (sorted)."""
    out = []
    for d, m in enumerate(meta.members):
        used = np.zeros(m["slots"], bool)
        used[meta.slot[meta.dev == d]] = True
        out.append(np.flatnonzero(~used).tolist())
    return out


def slot_offset(meta, d, s):
    """Byte offset of slot s on member d."""
    return meta.members[d]["data_start"] + int(s) * meta.extent_bytes


def describe(meta, free):
    """What `hbl status` shows of a mapping, running or not: the device, and per member
    its slots, spares, extents, fill and free slots (`free` as free_slots() gives it)."""
    used = np.bincount(meta.dev, minlength=len(meta.members))
    return {"name": meta.name, "uuid": meta.uuid, "policy": meta.policy, "extent_bytes": meta.extent_bytes,
            "extents": meta.nextents, "size_bytes": meta.size_bytes, "generation": meta.generation,
            "devices": [{"path": x["path"], "slots": x["slots"], "spares": x["spares"], "extents": int(used[i]),
                         "fill": used[i] / x["slots"], "free_slots": len(free[i])}
                        for i, x in enumerate(meta.members)]}
