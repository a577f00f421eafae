"""What a live device must not forget: its members and where every extent lives.

Two places hold it:

- a member superblock in the first 4 KiB of each device (which hbl device it
  belongs to and at which position), so a device is never taken for another
  and a moved device name is caught;
- the metadata file in the state directory: the mapping (extent -> device,
  slot), which extents were ever written, and a generation number.  It is
  replaced atomically (write a temporary file, fsync, rename, fsync the
  directory) and carries a checksum: a damaged file is refused, never used.

The file: a 64-byte header (magic, version, header and payload sizes, payload
CRC32, header CRC32), then the payload: one line of JSON, then three arrays
(device int8, slot int32, written uint8; one entry per extent).
"""
import json
import mmap
import os
import struct
import uuid as uuidlib
import zlib

import numpy as np

from hbl.errors import HblError

MAGIC = b"HBLMETA\0"
VERSION = 1
HEADER = struct.Struct("<8sIIQQII24x")          # magic, version, header size, json size, arrays size, payload crc, header crc
assert HEADER.size == 64
SB_MAGIC = b"HBLMEMB1"
SB = struct.Struct("<8sI16sIIQQQ")             # magic, version, uuid, index, ndev, extent bytes, size, data start
SB_BYTES = 4096


class MetaError(HblError):
    """The metadata cannot be trusted: the message names the file and what is wrong with it."""


class Meta:
    """The persistent state of one live device."""

    def __init__(self, name, uuid, extent_bytes, members, dev, slot, written, generation=0, clean=False,
                 policy="harmonia", params=None, counters=None):
        self.name, self.uuid, self.extent_bytes = name, uuid, int(extent_bytes)
        self.members = members            # [{"path", "size", "slots", "spares", "data_start"}], fastest first
        self.dev = np.asarray(dev, np.int8)
        self.slot = np.asarray(slot, np.int32)
        self.written = np.asarray(written, np.uint8)
        self.generation, self.clean = int(generation), bool(clean)
        self.policy, self.params = policy, dict(params or {})
        self.counters = dict(counters or {})

    @property
    def nextents(self):
        return len(self.dev)

    @property
    def size_bytes(self):
        return self.nextents * self.extent_bytes

    def copy(self):
        return Meta(self.name, self.uuid, self.extent_bytes, [dict(m) for m in self.members], self.dev.copy(),
                    self.slot.copy(), self.written.copy(), self.generation, self.clean, self.policy,
                    self.params, self.counters)

    # ---- the file ----

    def encode(self):
        head = {"name": self.name, "uuid": self.uuid, "extent_bytes": self.extent_bytes, "members": self.members,
                "nextents": self.nextents, "generation": self.generation, "clean": self.clean,
                "policy": self.policy, "params": self.params, "counters": self.counters}
        js = json.dumps(head, sort_keys=True).encode() + b"\n"
        arrays = self.dev.tobytes() + self.slot.astype("<i4").tobytes() + self.written.tobytes()
        payload = js + arrays
        crc = zlib.crc32(payload)
        h = HEADER.pack(MAGIC, VERSION, HEADER.size, len(js), len(arrays), crc, 0)
        h = HEADER.pack(MAGIC, VERSION, HEADER.size, len(js), len(arrays), crc, zlib.crc32(h))
        return h + payload

    @classmethod
    def decode(cls, data, where):
        if len(data) < HEADER.size:
            raise MetaError("%s: truncated (%d bytes; the header alone is %d)" % (where, len(data), HEADER.size))
        magic, version, hsize, jsize, asize, crc, hcrc = HEADER.unpack_from(data)
        if magic != MAGIC:
            raise MetaError("%s: not hbl metadata (bad magic)" % where)
        if zlib.crc32(HEADER.pack(magic, version, hsize, jsize, asize, crc, 0)) != hcrc:
            raise MetaError("%s: the header checksum does not match: the file is damaged" % where)
        if version != VERSION:
            raise MetaError("%s: metadata version %d, this hbl reads version %d" % (where, version, VERSION))
        payload = data[hsize:]
        if len(payload) != jsize + asize:
            raise MetaError("%s: truncated (payload %d bytes, header says %d)" % (where, len(payload), jsize + asize))
        if zlib.crc32(payload) != crc:
            raise MetaError("%s: the checksum does not match: the file is damaged" % where)
        try:
            head = json.loads(payload[:jsize])
            n = int(head["nextents"])
        except (ValueError, KeyError, TypeError) as exc:
            raise MetaError("%s: unreadable header (%s)" % (where, exc)) from None
        if asize != n * 6:
            raise MetaError("%s: %d extents need %d bytes of mapping, found %d" % (where, n, n * 6, asize))
        a = payload[jsize:]
        dev = np.frombuffer(a, np.int8, n).copy()
        slot = np.frombuffer(a, "<i4", n, offset=n).astype(np.int32)
        written = np.frombuffer(a, np.uint8, n, offset=5 * n).copy()
        m = cls(head["name"], head["uuid"], head["extent_bytes"], head["members"], dev, slot, written,
                head["generation"], head["clean"], head.get("policy", "harmonia"), head.get("params"),
                head.get("counters"))
        m.validate(where)
        return m

    def validate(self, where="metadata"):
        """Every extent on a member, in a slot of it, no slot used twice."""
        nd = len(self.members)
        if not 2 <= nd <= 4:
            raise MetaError("%s: %d members (2 to 4 expected)" % (where, nd))
        if (self.dev < 0).any() or (self.dev >= nd).any():
            raise MetaError("%s: an extent maps to a device that does not exist" % where)
        slots = np.array([m["slots"] for m in self.members])
        if (self.slot < 0).any() or (self.slot >= slots[self.dev]).any():
            raise MetaError("%s: an extent maps past the end of its device" % where)
        key = self.dev.astype(np.int64) << 32 | self.slot.astype(np.int64)
        if len(np.unique(key)) != len(key):
            raise MetaError("%s: two extents map to the same slot" % where)

    def save(self, path, data=None):
        """Atomically replace `path`: write, fsync, rename, fsync the directory.
        `data`: this metadata already encoded (and validated), to save time in a stall."""
        if data is None:
            self.validate(path)
            data = self.encode()
        d = os.path.dirname(os.path.abspath(path))
        tmp = "%s.tmp.%d" % (path, os.getpid())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, path)
        dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    @classmethod
    def load(cls, path):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise MetaError("%s: no metadata (was the device created with hbl up NAME --dev ...?)" % path) from None
        except OSError as exc:
            raise MetaError("%s: %s" % (path, exc.strerror)) from None
        return cls.decode(data, path)


def new_uuid():
    return uuidlib.uuid4().hex


# ---- member superblocks ----

def superblock(uuid, index, ndev, extent_bytes, size, data_start):
    b = SB.pack(SB_MAGIC, 1, bytes.fromhex(uuid), index, ndev, extent_bytes, size, data_start)
    b += struct.pack("<I", zlib.crc32(b))
    return b + bytes(SB_BYTES - len(b))


def parse_superblock(data):
    """The fields of a member superblock, or None when `data` does not start with one."""
    if len(data) < SB.size + 4 or data[:8] != SB_MAGIC:
        return None
    (crc,) = struct.unpack_from("<I", data, SB.size)
    if zlib.crc32(data[:SB.size]) != crc:
        return {"damaged": True}
    magic, version, uid, index, ndev, ext, size, start = SB.unpack_from(data)
    return {"uuid": uid.hex(), "index": index, "ndev": ndev, "extent_bytes": ext, "size": size,
            "data_start": start}


def write_superblock(path, block):
    fd = os.open(path, os.O_WRONLY | os.O_DIRECT | os.O_SYNC)
    try:
        buf = mmap.mmap(-1, SB_BYTES)
        buf.write(block)
        os.pwritev(fd, [buf], 0)
        os.fsync(fd)
        buf.close()
    finally:
        os.close(fd)


def read_head(path, n=SB_BYTES):
    with open(path, "rb", buffering=0) as f:
        return f.read(n)
