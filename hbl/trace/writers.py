"""Trace writers: native (memory-mappable), packed (compressed, hbl.trace.packed), MSRC CSV and
fio iolog v3.

A writer is a context manager: leaving the block normally finishes the file
(trailer, header count); leaving it by an exception removes the partial file.
"""
import gzip

import numpy as np

from hbl import record
from hbl.errors import TraceError
from hbl.trace.formats import FILETIME_UNIX_EPOCH
from hbl.trace.native import NativeWriter, WriterBase
from hbl.trace.packed import PackedWriter


class _TextWriter(WriterBase):
    def __init__(self, path, source="", compress=False):
        self.path = str(path)
        self.count = 0
        try:
            self.f = (gzip.open(self.path, "wt", encoding="utf-8", newline="\n") if compress
                      else open(self.path, "w", encoding="utf-8", newline="\n"))
        except OSError as exc:
            raise TraceError(self.path, exc.strerror or str(exc)) from None
        self.start()

    def start(self):
        pass

    def close(self):
        self.finish()
        self.f.close()

    def finish(self):
        pass


class MsrcWriter(_TextWriter):
    """MSR Cambridge CSV; discards and flushes have no MSRC spelling and are dropped (counted)."""

    def __init__(self, path, source="", compress=False, hostname="hbl"):
        self.hostname = hostname
        self.dropped = 0
        super().__init__(path, source, compress)

    def write(self, chunk):
        keep = chunk[(chunk["op"] == record.READ) | (chunk["op"] == record.WRITE)]
        self.dropped += len(chunk) - len(keep)
        lines = []
        for t, off, lat, length, dev, op in zip(keep["time_ns"].tolist(), keep["offset"].tolist(),
                                                keep["latency_ns"].tolist(), keep["length"].tolist(),
                                                keep["device"].tolist(), keep["op"].tolist()):
            lines.append("%d,%s,%d,%s,%d,%d,%d\n" % (t // 100 + FILETIME_UNIX_EPOCH, self.hostname, dev,
                                                      "Read" if op == record.READ else "Write",
                                                      off, length, lat // 100))
        self.f.write("".join(lines))
        self.count += len(keep)


class FioWriter(_TextWriter):
    """fio iolog v3 (timestamps in ms from the first request), replayable with
    `fio --read_iolog=FILE --replay_redirect=/dev/DEVICE`."""

    ACTIONS = {record.READ: "read", record.WRITE: "write", record.DISCARD: "trim",
               record.FLUSH: "sync"}

    def __init__(self, path, source="", compress=False, filename="/dev/hbl-replay"):
        self.filename = filename
        self.t0 = None
        self.last_ms = 0
        super().__init__(path, source, compress)

    def start(self):
        self.f.write("fio version 3 iolog\n0 %s add\n0 %s open\n" % (self.filename, self.filename))

    def write(self, chunk):
        if not len(chunk):
            return
        if self.t0 is None:
            self.t0 = int(chunk["time_ns"][0])
        ms = np.maximum(chunk["time_ns"].astype(np.int64) - self.t0, 0) // 1_000_000
        lines = []
        for t, off, length, op in zip(ms.tolist(), chunk["offset"].tolist(), chunk["length"].tolist(),
                                      chunk["op"].tolist()):
            action = self.ACTIONS[op]
            if op == record.FLUSH:
                lines.append("%d %s %s\n" % (t, self.filename, action))
            else:
                lines.append("%d %s %s %d %d\n" % (t, self.filename, action, off, length))
        self.last_ms = ms[-1]
        self.f.write("".join(lines))
        self.count += len(chunk)

    def finish(self):
        self.f.write("%d %s close\n" % (self.last_ms, self.filename))


WRITERS = {"native": NativeWriter, "packed": PackedWriter, "msrc": MsrcWriter, "fio": FioWriter}

