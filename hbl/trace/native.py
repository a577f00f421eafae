"""The native trace format: a 256-byte header, then raw REQUEST records.

It memory-maps back in, so reloading a converted multi-GB trace costs nothing.
Header (little endian): magic "HBLTRACE", u32 version, u32 record size,
u64 record count, u64 reserved, then the source description (UTF-8, NUL-padded).
The count is written last, so an interrupted write is detected as truncated.
"""
import os
import struct

import numpy as np

from hbl import record
from hbl.errors import TraceError
from hbl.trace.formats import MAX_LENGTH, U64_MAX

MAGIC = b"HBLTRACE"
VERSION = 1
HEADER = struct.Struct("<8sIIQQ")
HEADER_SIZE = 256
SOURCE_MAX = HEADER_SIZE - HEADER.size


def is_native(path):
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def read_header(path):
    """(count, source) of a native trace, checked against the file's size and layout."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEADER_SIZE)
        size = os.path.getsize(path)
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None
    if len(head) < HEADER_SIZE:
        raise TraceError(path, "native trace header is truncated (%d bytes)" % len(head))
    magic, version, rsize, count, _ = HEADER.unpack_from(head)
    if magic != MAGIC:
        raise TraceError(path, "not a native hbl trace (bad magic)")
    if version != VERSION:
        raise TraceError(path, "native trace version %d, this hbl reads version %d" % (version, VERSION))
    if rsize != record.REQUEST.itemsize:
        raise TraceError(path, "record size %d, this hbl's record is %d bytes"
                         % (rsize, record.REQUEST.itemsize))
    expected = HEADER_SIZE + count * rsize
    if size != expected:
        raise TraceError(path, "file is %d bytes but its header says %d records (%d bytes): "
                         "truncated or still being written" % (size, count, expected))
    source = head[HEADER.size:].rstrip(b"\0").decode("utf-8", "replace")
    return count, source


def load(path):
    """The whole trace as a read-only memory map (no copy)."""
    count, _ = read_header(path)
    if count == 0:
        return record.empty(0)
    return np.memmap(path, dtype=record.REQUEST, mode="r", offset=HEADER_SIZE, shape=(count,))


class NativeReader:
    """Chunks of a native trace, each record checked as a text reader checks a line: a native
    file is as much outside input as a CSV (a bad op byte or length is an error, not a crash)."""

    name = "native"
    description = "hbl native binary trace (memory-mapped)"

    def __init__(self, path, lenient=False, chunk=1 << 16):
        self.path, self.chunk, self.lenient, self.skipped, self.problems = str(path), chunk, lenient, 0, []
        self.count, self.source = read_header(self.path)
        if not self.count:
            raise TraceError(self.path, "the trace is empty (0 records)")

    def __iter__(self):
        data = load(self.path)
        for i in range(0, len(data), self.chunk):
            chunk = data[i:i + self.chunk]
            bad = bad_records(chunk)
            if bad.any():
                first = int(np.argmax(bad))
                why = why_bad(chunk[first])
                if not self.lenient:
                    raise TraceError(self.path, "record %d: %s" % (i + first, why))
                self.skipped += int(bad.sum())
                if len(self.problems) < 5:
                    self.problems.append("record %d: %s" % (i + first, why))
                chunk = chunk[~bad]
            yield chunk


def bad_records(chunk):
    """A mask of the records no reader may hand on: an unknown op, a length over MAX_LENGTH, or
    an extent past the 64-bit address space."""
    length = chunk["length"].astype(np.uint64)
    return ((chunk["op"] > record.FLUSH) | (length > MAX_LENGTH)
            | (chunk["offset"] > np.uint64(U64_MAX) - length))


def why_bad(rec):
    """What is wrong with a record bad_records() flags."""
    if rec["op"] > record.FLUSH:
        return "op %d is not read (0), write (1), discard (2) or flush (3)" % rec["op"]
    if rec["length"] > MAX_LENGTH:
        return "request length %d is over the %d MiB maximum" % (rec["length"], MAX_LENGTH >> 20)
    return "offset %d + length %d is past the 64-bit address space" % (rec["offset"], rec["length"])


class WriterBase:
    """What every writer shares: the with-block protocol."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is None:
            self.close()
        else:
            self.abort()

    def abort(self):
        """Close and remove a file that will not be finished."""
        self.f.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


class NativeWriter(WriterBase):
    """Streams chunks to a native trace; the header's count is patched on close."""

    def __init__(self, path, source="", compress=False):
        if compress:
            raise TraceError(path, "a native trace is memory-mapped and cannot be compressed "
                             "(name it without .gz, or convert to msrc or fio)")
        self.path = str(path)
        self.count = 0
        self.source = source.encode("utf-8")[:SOURCE_MAX]
        try:
            self.f = open(self.path, "wb")
        except OSError as exc:
            raise TraceError(self.path, exc.strerror or str(exc)) from None
        self._header()

    def _header(self):
        self.f.seek(0)
        self.f.write(HEADER.pack(MAGIC, VERSION, record.REQUEST.itemsize, self.count, 0))
        self.f.write(self.source.ljust(SOURCE_MAX, b"\0"))

    def write(self, chunk):
        self.f.write(np.ascontiguousarray(chunk, dtype=record.REQUEST).tobytes())
        self.count += len(chunk)

    def close(self):
        self.f.flush()
        self._header()
        self.f.close()
