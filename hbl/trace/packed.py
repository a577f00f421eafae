"""The packed trace format (.hblz): a trace's columns compressed, to ship long captures in git.

A native trace spends 32 bytes on a request; most of them are zero bits or repeat the request
before. Here each REQUEST field is a column: times as deltas, offsets in whichever of three
forms is smallest (absolute, delta from the previous offset, gap from the previous request's
end), every column split into byte planes (the high bytes of nearby values are alike, and
zstd finds that when they are adjacent) and compressed with zstd, in blocks of up to BLOCK
requests so a reader's memory stays bounded.

Layout (little endian):
    MAGIC                         8 bytes
    block 0 column 0, column 1 ...  zstd frames (each with zstd's own content checksum)
    block 1 ...
    footer                        UTF-8 JSON: version, request count, source, quanta, and per
                                  block its request count and per column encoding, unit, width,
                                  size and crc32 of the compressed bytes
    u32 footer length, u32 crc32 of the footer, END

The footer is written last, so an interrupted write has no END and reads as truncated.
Times and latencies may be stored in a quantum coarser than 1 ns (the footer says which; a
reader returns multiples of it; times are rounded down, latencies up so that none becomes 0,
which means unknown). The shipped captures keep times in 1 us and latencies in 10 us
(hbl.trace.workloads.PACK_QUANTA): the kernel's timestamps are ns, but the loop device's requests
are tens of us apart at their closest and its latencies hundreds of us, and the finer digits
cost a byte a request.
"""
import json
import os
import struct
import zlib

import numpy as np

from hbl import record
from hbl.errors import HblError, TraceError
from hbl.trace.formats import MAX_LENGTH, U64_MAX
from hbl.trace.native import WriterBase, bad_records, why_bad

MAGIC = b"HBLZ\r\n\x1a\n"     # a text-mode copy mangles the CR LF or the ^Z: bad magic, not bad data
END = b"HBLZEND\n"
TAIL = struct.Struct("<II")
VERSION = 1
BLOCK = 1 << 20
LEVEL = 19
UNITS = (4096, 512, 1)
WIDTHS = (1, 2, 4, 8)
FIELDS = ("time_ns", "offset", "latency_ns", "length", "pid", "device", "op")
U64 = np.uint64


def _zstd():
    try:
        import zstandard
    except ImportError:
        raise HblError("packed traces (.hblz) need the zstandard package: pip install zstandard "
                       "(scripts/bootstrap.sh installs it)") from None
    return zstandard


def is_packed(path):
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


# ---- column codecs: uint64 arrays <-> bytes, wrapping mod 2**64 so any value round-trips ----

def _zigzag(d):
    s = d.view(np.int64)
    return ((s << 1) ^ (s >> 63)).view(U64)


def _unzigzag(z):
    """The inverse of _zigzag, in place (z is a uint64 array of the caller's own)."""
    sign = z & U64(1)
    z >>= U64(1)
    np.negative(sign.view(np.int64), out=sign.view(np.int64))
    z ^= sign
    return z


def _deltas(v, base):
    """("delta", unsigned steps) for a non-decreasing column, else ("zdelta", zigzagged steps);
    the first step is from base."""
    d = v - U64(base)
    d[1:] = v[1:] - v[:-1]
    if len(v) < 2 or (v[1:] >= v[:-1]).all():
        return "delta", d
    return "zdelta", _zigzag(d)


def _undeltas(form, d, base):
    if form == "zdelta":
        d = _unzigzag(d.astype(U64))
    return np.cumsum(d, dtype=U64) + U64(base)


def _planes(v):
    """(bytes, width): v in the narrowest width holding its maximum, byte plane after byte plane."""
    top = int(v.max()) if len(v) else 0
    width = next(w for w in WIDTHS if top < 1 << (8 * w))
    return v.astype("<u%d" % width).view(np.uint8).reshape(-1, width).T.tobytes(), width


def _unplanes(raw, width, n):
    """The values of _planes' bytes, in their stored width (callers widen only what needs it)."""
    planes = np.frombuffer(raw, dtype=np.uint8).reshape(width, n)
    out = np.empty((n, width), dtype=np.uint8)
    for j in range(width):    # a plane at a time: a strided write is cheaper than a transpose
        out[:, j] = planes[j]
    return out.view("<u%d" % width).ravel()


def _unit(*columns):
    """The largest of UNITS dividing every value (offsets and lengths are sector or page multiples)."""
    for u in UNITS:
        if all(not (c % U64(u)).any() for c in columns):
            return u
    return 1


def _offset_forms(off, length):
    """The offset column's candidate encodings (in the block's unit), by name: each an array, or
    for "rank" (a skewed workload's hot offsets get small numbers) the distinct offsets from the
    most requested down and each request's place in that table."""
    prev, prev_end = np.zeros_like(off), np.zeros_like(off)
    prev[1:] = off[:-1]
    prev_end[1:] = off[:-1] + length[:-1]
    distinct, which, counts = np.unique(off, return_inverse=True, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return {"raw": off, "zdelta": _zigzag(off - prev), "gap": _zigzag(off - prev_end),
            "rank": (distinct[order], rank[which.ravel()].astype(U64))}


def _decode_offsets(form, v, length, table=None):
    if form == "raw":
        return v.astype(U64)
    if form == "rank":
        if len(v) and int(v.max()) >= len(table):
            raise ValueError("an offset rank past the table's %d entries" % len(table))
        return table[v].astype(U64)
    if form == "zdelta":
        return _undeltas(form, v, 0)
    if form != "gap":
        raise ValueError("unknown form")
    ends = np.zeros(len(length), dtype=U64)
    np.cumsum(length[:-1], dtype=U64, out=ends[1:])
    return _undeltas("zdelta", v, 0) + ends


# ---- writer --------------------------------------------------------------------------

class PackedWriter(WriterBase):
    """Buffers requests into blocks of BLOCK, compresses each as it fills; the footer on close."""

    def __init__(self, path, source="", compress=False, time_quantum_ns=1, latency_quantum_ns=1, level=LEVEL):
        if compress:
            raise TraceError(path, "a packed trace is compressed already (name it .hblz, without .gz)")
        for q, what in ((time_quantum_ns, "time"), (latency_quantum_ns, "latency")):
            if int(q) < 1:
                raise TraceError(path, "%s quantum must be at least 1 ns, not %r" % (what, q))
        self.path, self.source, self.count = str(path), source, 0
        self.tq, self.lq = int(time_quantum_ns), int(latency_quantum_ns)
        self.cctx = _zstd().ZstdCompressor(level=level, write_checksum=True)
        self.trial = _zstd().ZstdCompressor(level=3)
        self.pending, self.blocks = [], []
        try:
            self.f = open(self.path, "wb")
            self.f.write(MAGIC)
        except OSError as exc:
            raise TraceError(self.path, exc.strerror or str(exc)) from None

    def write(self, chunk):
        if not len(chunk):
            return
        self.pending.append(np.asarray(chunk, dtype=record.REQUEST))
        self.count += len(chunk)
        while sum(len(c) for c in self.pending) >= BLOCK:
            data = record.concat(self.pending)
            self._block(data[:BLOCK])
            self.pending = [data[BLOCK:]]

    def _column(self, name, v, form="raw", **extra):
        """(bytes, footer entry) of one column; the rank form's table is a frame before the ranks'."""
        meta = dict(name=name, form=form, **extra)
        head = b""
        if form == "rank":
            table, v = v
            raw, width = _planes(table)
            head = self.cctx.compress(raw)
            meta["table"] = {"count": len(table), "width": width, "size": len(head)}
        raw, meta["width"] = _planes(v)
        blob = head + self.cctx.compress(raw)
        meta.update(size=len(blob), crc32=zlib.crc32(blob))
        return blob, meta

    def _trial_size(self, v):
        """A quick level's size of an encoding, to choose one before the slow level compresses it."""
        if isinstance(v, tuple):
            return sum(self._trial_size(part) for part in v)
        return len(self.trial.compress(_planes(v)[0]))

    def _block(self, data):
        off, length = data["offset"].astype(U64), data["length"].astype(U64)
        unit = _unit(off, length)
        off, length = off // U64(unit), length // U64(unit)
        t = data["time_ns"].astype(U64) // U64(self.tq)
        base = int(t[0])
        form, steps = _deltas(t, base)
        cols = [self._column("time_ns", steps, form, base=base)]
        forms = _offset_forms(off, length)
        form = min(forms, key=lambda f: self._trial_size(forms[f]))
        cols.append(self._column("offset", forms[form], form))
        # rounded up, so a measured latency never becomes 0, which means unknown
        latency = data["latency_ns"].astype(U64)
        latency = latency // U64(self.lq) + (latency % U64(self.lq) != 0)
        cols += [self._column("latency_ns", latency),
                 self._column("length", length)]
        cols += [self._column(name, data[name].astype(U64)) for name in ("pid", "device", "op")]
        for blob, _ in cols:
            self.f.write(blob)
        self.blocks.append({"requests": len(data), "unit": unit, "columns": [meta for _, meta in cols]})

    def close(self):
        if self.pending and len(self.pending[0]):
            self._block(record.concat(self.pending))
        self.pending = []
        footer = json.dumps({"format": "hbl packed trace", "version": VERSION, "requests": self.count,
                             "source": self.source, "time_quantum_ns": self.tq, "latency_quantum_ns": self.lq,
                             "blocks": self.blocks}, separators=(",", ":")).encode()
        self.f.write(footer + TAIL.pack(len(footer), zlib.crc32(footer)) + END)
        self.f.close()


# ---- reader --------------------------------------------------------------------------

def _whole(value, lo=0, hi=U64_MAX):
    if type(value) is not int or not lo <= value <= hi:
        raise ValueError("%r is not a whole number in %d..%d" % (value, lo, hi))


def _check_footer(meta):
    """ValueError (or KeyError, TypeError) unless every field a reader uses has its type and range:
    a footer whose checksum holds may still have been written by something else than hbl."""
    _whole(meta["requests"])
    _whole(meta["time_quantum_ns"], 1)
    _whole(meta["latency_quantum_ns"], 1)
    for b in meta["blocks"]:
        _whole(b["requests"], 1, 1 << 40)
        if b["unit"] not in UNITS:
            raise ValueError("unit %r" % (b["unit"],))
        for c in b["columns"]:
            _whole(c["size"])
            _whole(c["crc32"])
            _whole(c.get("base", 0))
            if c["width"] not in WIDTHS or not isinstance(c["form"], str):
                raise ValueError("column %r: width %r, form %r" % (c["name"], c["width"], c["form"]))
            if "table" in c:
                t = c["table"]
                _whole(t["count"], 0, b["requests"])
                _whole(t["size"], 0, c["size"])
                if t["width"] not in WIDTHS:
                    raise ValueError("column %r: table width %r" % (c["name"], t["width"]))


def read_footer(path):
    """The footer of a packed trace, checked against its checksum and the file's size."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(len(MAGIC))
            tail_at = max(size - TAIL.size - len(END), 0)
            f.seek(tail_at)
            tail = f.read()
            if head != MAGIC:
                raise TraceError(path, "not a packed hbl trace (bad magic)")
            if len(tail) != TAIL.size + len(END) or tail[TAIL.size:] != END:
                raise TraceError(path, "packed trace is truncated (no end marker): an interrupted copy or write")
            length, crc = TAIL.unpack_from(tail)
            if length > tail_at - len(MAGIC):
                raise TraceError(path, "packed trace is corrupt (footer length %d past the file's start)" % length)
            f.seek(tail_at - length)
            footer = f.read(length)
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None
    if zlib.crc32(footer) != crc:
        raise TraceError(path, "packed trace is corrupt (footer checksum mismatch)")
    try:
        meta = json.loads(footer)
        if meta["version"] != VERSION:
            raise TraceError(path, "packed trace version %r, this hbl reads version %d" % (meta["version"], VERSION))
        _check_footer(meta)
        blocks = meta["blocks"]
        data_size = sum(c["size"] for b in blocks for c in b["columns"])
        total = sum(b["requests"] for b in blocks)
        names = [[c["name"] for c in b["columns"]] for b in blocks]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TraceError(path, "packed trace footer is malformed (%s)" % exc) from None
    if len(MAGIC) + data_size + length + TAIL.size + len(END) != size:
        raise TraceError(path, "packed trace is corrupt (its blocks take %d bytes, the file has room for %d)"
                         % (data_size, size - len(MAGIC) - length - TAIL.size - len(END)))
    if total != meta["requests"]:
        raise TraceError(path, "packed trace is corrupt (blocks hold %d requests, the footer says %d)"
                         % (total, meta["requests"]))
    if any(n != list(FIELDS) for n in names):
        raise TraceError(path, "packed trace footer is malformed (columns are not %s)" % ", ".join(FIELDS))
    return meta


class PackedReader:
    """Chunks of a packed trace, block by block; every column's checksum is checked before it is
    decompressed, and every record as NativeReader checks one."""

    name = "packed"
    description = "hbl packed trace (.hblz: zstd-compressed columns, checksummed)"

    def __init__(self, path, lenient=False, chunk=1 << 16):
        self.path, self.chunk, self.lenient, self.skipped, self.problems = str(path), chunk, lenient, 0, []
        self.meta = read_footer(self.path)
        self.count, self.source = self.meta["requests"], self.meta.get("source", "")
        if not self.count:
            raise TraceError(self.path, "the trace is empty (0 records)")

    def __iter__(self):
        dctx = _zstd().ZstdDecompressor()
        done = 0
        try:
            f = open(self.path, "rb")
        except OSError as exc:
            raise TraceError(self.path, exc.strerror or str(exc)) from None
        with f:
            f.seek(len(MAGIC))
            for k, block in enumerate(self.meta["blocks"]):
                cols, n, bad = self._block(k, block, f, dctx)
                for i in range(0, n, self.chunk):   # the per-record check only where one is bad
                    chunk = self._chunk(cols, i, min(i + self.chunk, n))
                    yield self._checked(chunk, done + i) if bad else chunk
                done += n

    def _frame(self, where, blob, n, width, dctx):
        try:
            raw = dctx.decompress(blob, max_output_size=n * width)
        except _zstd().ZstdError as exc:
            raise TraceError(self.path, "packed trace is corrupt (%s: %s)" % (where, exc)) from None
        if width not in WIDTHS or len(raw) != n * width:
            raise TraceError(self.path, "packed trace is corrupt (%s: %d bytes for %d values)" % (where, len(raw), n))
        return _unplanes(raw, width, n)

    def _column(self, k, col, n, f, dctx):
        """(values, the rank form's table or None) of one column of block k."""
        where = "block %d column %s" % (k, col["name"])
        blob = f.read(col["size"])
        if len(blob) != col["size"] or zlib.crc32(blob) != col["crc32"]:
            raise TraceError(self.path, "packed trace is corrupt (%s: checksum mismatch)" % where)
        table = None
        if "table" in col:
            t = col["table"]
            table = self._frame(where + " table", blob[:t["size"]], t["count"], t["width"], dctx)
            blob = blob[t["size"]:]
        return self._frame(where, blob, n, col["width"], dctx), table

    def _block(self, k, block, f, dctx):
        """Block k's columns decoded (in their stored widths where no arithmetic needs more), and
        whether a record among them is bad."""
        n, unit = block["requests"], U64(block["unit"])
        v = {c["name"]: (c,) + self._column(k, c, n, f, dctx) for c in block["columns"]}
        cols = {name: v[name][1] for name in ("latency_ns", "pid", "device", "op")}
        try:
            col, steps, _ = v["time_ns"]
            if col["form"] not in ("delta", "zdelta"):
                raise ValueError("unknown form %r" % col["form"])
            cols["time_ns"] = _undeltas(col["form"], steps, int(col.get("base", 0)))
            col, values, table = v["offset"]
            cols["offset"] = _decode_offsets(col["form"], values, v["length"][1], table)
        except (ValueError, TypeError) as exc:
            raise TraceError(self.path, "packed trace is corrupt (block %d: %s)" % (k, exc)) from None
        if unit != 1:
            cols["offset"] *= unit
        cols["length"] = v["length"][1].astype(U64) * unit
        bad = (int(cols["op"].max()) > record.FLUSH or int(cols["length"].max()) > MAX_LENGTH
               or bool((cols["offset"] > U64(U64_MAX) - cols["length"]).any()))
        return cols, n, bad

    def _chunk(self, cols, i, j):
        """Requests i..j of a block's columns as REQUEST records (a chunk at a time: its records
        stay in the cache while each field is written)."""
        out = record.empty(j - i)
        for name, q in (("time_ns", self.meta["time_quantum_ns"]), ("latency_ns", self.meta["latency_quantum_ns"])):
            c = cols[name][i:j]
            out[name] = c * U64(q) if q != 1 else c
        for name in ("offset", "length", "pid", "device", "op"):
            out[name] = cols[name][i:j]
        return out

    def _checked(self, chunk, first):
        bad = bad_records(chunk)
        if not bad.any():
            return chunk
        i = int(np.argmax(bad))
        if not self.lenient:
            raise TraceError(self.path, "record %d: %s" % (first + i, why_bad(chunk[i])))
        self.skipped += int(bad.sum())
        if len(self.problems) < 5:
            self.problems.append("record %d: %s" % (first + i, why_bad(chunk[i])))
        return chunk[~bad]
