"""The device-mapper ioctl interface (/dev/mapper/control), without libdevmapper.

One ioctl per operation, no process per reload; the `dmsetup` command is the
fallback (dmsetup/command.py) with the same methods.  Layouts follow
include/uapi/linux/dm-ioctl.h.
"""
import ctypes
import errno
import fcntl
import os
import struct

import numpy as np

DM_NAME_LEN, DM_UUID_LEN, DM_MAX_TYPE_NAME = 128, 129, 16
VERSION = (4, 0, 0)

# struct dm_ioctl: version[3], data_size, data_start, target_count, open_count,
# flags, event_nr, padding, dev, name[128], uuid[129], data[7]
IOCTL = struct.Struct("<3IIIIiIIIQ128s129s7s")
# struct dm_target_spec: sector_start, length, status, next, target_type[16]
SPEC = struct.Struct("<QQiI16s")
assert IOCTL.size == 312 and SPEC.size == 40

READONLY, SUSPEND, PERSISTENT_DEV, STATUS_TABLE = 1 << 0, 1 << 1, 1 << 3, 1 << 4
ACTIVE_PRESENT, INACTIVE_PRESENT, BUFFER_FULL = 1 << 5, 1 << 6, 1 << 8
NOFLUSH, QUERY_INACTIVE, DATA_OUT = 1 << 11, 1 << 12, 1 << 16

(VERSION_CMD, REMOVE_ALL, LIST_DEVICES, DEV_CREATE, DEV_REMOVE, DEV_RENAME, DEV_SUSPEND, DEV_STATUS,
 DEV_WAIT, TABLE_LOAD, TABLE_CLEAR, TABLE_DEPS, TABLE_STATUS, LIST_VERSIONS, TARGET_MSG) = range(15)


def _iowr(nr):
    return (3 << 30) | (IOCTL.size << 16) | (0xFD << 8) | nr


def _align8(n):
    return (n + 7) & ~7


def decode_dev(dev):
    """(major, minor) of the kernel's huge dev encoding used by dm ioctls."""
    major = (dev >> 8) & 0xFFF
    minor = (dev & 0xFF) | ((dev >> 12) & 0xFFF00)
    return major, minor


def pack(starts, sectors, types, params, longest=None):
    """dm_target_spec records, each followed by its parameters: one record size for all
    (the longest parameters, NUL-padded to a multiple of 8), so that the whole payload is
    one numpy array (the kernel finds each record by its `next`, relative to the record).
    `types`: one per target, or one for all.  `params`: bytes each, or an "S" array of them
    with `longest`, the longest one's length."""
    width = _align8((max(len(p) for p in params) if longest is None else longest) + 1)
    rec = np.zeros(len(params), dtype=[("start", "<u8"), ("length", "<u8"), ("status", "<i4"), ("next", "<u4"),
                                       ("type", "S%d" % DM_MAX_TYPE_NAME), ("params", "S%d" % width)])
    assert rec.itemsize == SPEC.size + width
    rec["start"], rec["length"], rec["next"] = starts, sectors, SPEC.size + width
    rec["type"] = types[:DM_MAX_TYPE_NAME - 1] if isinstance(types, bytes) else [t[:DM_MAX_TYPE_NAME - 1] for t in types]
    rec["params"] = np.array(params, "S%d" % width)
    return rec.tobytes()


class DmIoctlError(OSError):
    pass


class Prepared:
    """A table packed for TABLE_LOAD."""

    def __init__(self, payload, count):
        self.payload, self.count = payload, count


class Control:
    """An open /dev/mapper/control."""

    fd = -1

    def __init__(self, path="/dev/mapper/control"):
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError as exc:
            raise DmIoctlError(exc.errno, "%s: %s (is the dm-mod module loaded? are you root?)"
                               % (path, exc.strerror)) from None

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self):
        self.close()

    def call(self, cmd, name="", flags=0, payload=b"", out_size=16384, uuid="", target_count=0):
        """One ioctl; returns (header fields dict, data bytes) growing the buffer while the kernel asks."""
        size = max(out_size, IOCTL.size + len(payload))
        while True:
            buf = bytearray(size)
            IOCTL.pack_into(buf, 0, *VERSION, size, IOCTL.size, target_count, 0, flags, 0, 0, 0,
                            name.encode()[:DM_NAME_LEN - 1], uuid.encode()[:DM_UUID_LEN - 1], b"")
            if payload:
                buf[IOCTL.size:IOCTL.size + len(payload)] = payload
            cbuf = (ctypes.c_char * size).from_buffer(buf)
            try:
                fcntl.ioctl(self.fd, _iowr(cmd), cbuf, True)
            except OSError as exc:
                raise DmIoctlError(exc.errno, os.strerror(exc.errno)) from None
            f = IOCTL.unpack_from(buf, 0)
            hdr = {"data_size": f[3], "data_start": f[4], "target_count": f[5], "open_count": f[6],
                   "flags": f[7], "event_nr": f[8], "dev": f[10],
                   "name": f[11].rstrip(b"\0").decode(), "uuid": f[12].rstrip(b"\0").decode()}
            if hdr["flags"] & BUFFER_FULL:
                size *= 4
                if size > 64 << 20:
                    raise DmIoctlError(errno.ENOBUFS, "status larger than 64 MiB")
                continue
            return hdr, bytes(buf[hdr["data_start"]:hdr["data_size"]])

    # ---- operations ----

    def version(self):
        hdr, _ = self.call(VERSION_CMD)
        return hdr

    def create(self, name, uuid=""):
        hdr, _ = self.call(DEV_CREATE, name, uuid=uuid)
        return decode_dev(hdr["dev"])

    def prepare(self, table):
        """The TABLE_LOAD payload of `table`, built ahead (to keep a suspend short)."""
        if hasattr(table, "params"):          # a LinearRuns: its arrays as they are
            return Prepared(pack(table.starts(), table.n, b"linear", *table.params_array()), len(table))
        seg = list(table.segments())
        return Prepared(pack([a for a, _ in seg], [t.sectors for _, t in seg], [t.type.encode() for _, t in seg],
                             [t.args().encode() for _, t in seg]), len(seg))

    def load(self, name, table):
        """Load `table` (a dmsetup.Table, or what prepare() made of one) as the inactive table of `name`."""
        p = table if isinstance(table, Prepared) else self.prepare(table)
        self.call(TABLE_LOAD, name, payload=p.payload, target_count=p.count)

    def suspend(self, name, flush=True):
        self.call(DEV_SUSPEND, name, flags=SUSPEND | (0 if flush else NOFLUSH))

    def resume(self, name):
        """Resume; makes a loaded inactive table live."""
        self.call(DEV_SUSPEND, name, flags=0)

    def remove(self, name):
        self.call(DEV_REMOVE, name)

    def info(self, name):
        hdr, _ = self.call(DEV_STATUS, name)
        hdr["suspended"] = bool(hdr["flags"] & SUSPEND)
        hdr["live_table"] = bool(hdr["flags"] & ACTIVE_PRESENT)
        hdr["inactive_table"] = bool(hdr["flags"] & INACTIVE_PRESENT)
        hdr["major"], hdr["minor"] = decode_dev(hdr["dev"])
        return hdr

    def _targets(self, name, flags):
        hdr, data = self.call(TABLE_STATUS, name, flags=flags)
        out, off = [], 0
        for _ in range(hdr["target_count"]):
            start, length, status, nxt, ttype = SPEC.unpack_from(data, off)
            params = data[off + SPEC.size:].split(b"\0", 1)[0].decode()
            out.append((start, length, ttype.rstrip(b"\0").decode(), params))
            off = nxt
        return out

    def status(self, name):
        """[(start, length, type, status text)] of the live table."""
        return self._targets(name, 0)

    def table(self, name):
        """[(start, length, type, args)] of the live table."""
        return self._targets(name, STATUS_TABLE)

    def message(self, name, message, sector=0):
        payload = struct.pack("<Q", sector) + message.encode() + b"\0"
        _, data = self.call(TARGET_MSG, name, payload=payload)
        return data.split(b"\0", 1)[0].decode()

    def list(self):
        """Names of dm devices."""
        _, data = self.call(LIST_DEVICES)
        names, off = [], 0
        while off + 12 <= len(data):
            dev, nxt = struct.unpack_from("<QI", data, off)
            name = data[off + 12:].split(b"\0", 1)[0].decode()
            if name:
                names.append(name)
            if not nxt:
                break
            off += nxt
        return names
