"""Streaming readers of block traces, one per format, all producing hbl.record.REQUEST.

A reader is iterated for chunks (NumPy arrays of at most `chunk` records), so a
multi-GB trace is read in bounded memory.  Bad lines raise TraceError naming
the file and line; with lenient=True they are skipped and counted in
`reader.skipped` (the first few reasons are kept in `reader.problems`).
"""
import gzip
import io
import os
import re
import zlib

import numpy as np

from hbl import record
from hbl.errors import TraceError, show

CHUNK = 1 << 16
U64_MAX = (1 << 64) - 1
U32_MAX = (1 << 32) - 1
# The longest request a reader accepts.  Block devices split requests far below this
# (max_sectors_kb is at most a few MiB); a larger value is a corrupt field, and since the
# simulator and trace-info track every page a request touches, a 4 GiB one costs ~100 MB.
MAX_LENGTH = 64 << 20
FILETIME_UNIX_EPOCH = 116444736000000000  # 100 ns ticks from 1601-01-01 to 1970-01-01
SECTOR = 512


# Errors caused by a damaged compressed stream, whatever layer notices it first.
READ_ERRORS = (OSError, EOFError, zlib.error, UnicodeError)


def open_text(path):
    """A text stream over a plain or gzip-compressed file; closing it closes the file."""
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None
    try:
        head = raw.read(2)
        raw.seek(0)
    except OSError as exc:   # a directory or an unreadable device
        raw.close()
        raise TraceError(path, exc.strerror or str(exc)) from None
    if head != b"\x1f\x8b":
        return io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
    # GzipFile(fileobj=...) leaves the file open on close(): own the file through open().
    raw.close()
    return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline="")


def parse_uint(text, what, limit=U64_MAX):
    """An exact unsigned integer in plain ASCII digits (no float rounding: offsets beyond
    2**53 stay exact; no '+1', '1_000' or full-width digits, which int() would take)."""
    t = text.strip()
    if not (t.isdigit() and t.isascii()):
        raise ValueError("%s %s is not an unsigned integer" % (what, show(t)))
    digits = t if len(t) <= 20 else t.lstrip("0") or "0"   # never int() of a 1 MB field
    if len(digits) <= 20:
        value = int(digits)
        if value <= limit:
            return value
    raise ValueError("%s %s is out of range (0..%d)" % (what, show(t), limit))


NUMBER = re.compile(r"([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?)([0-9]+))?", re.ASCII)


def parse_seconds_ns(text, what="timestamp", scale=1_000_000_000):
    """Decimal seconds (or another unit, by scale = ns per unit) to integer ns, exactly.
    The exponent is bounded before any power is taken, so 1e999999999 is an error, not a hang."""
    t = text.strip()
    m = NUMBER.fullmatch(t)
    if not m or not (m.group(1) or m.group(2)):
        raise ValueError("%s %s is not a number" % (what, show(t)))
    whole, frac, sign, exp = m.group(1) or "0", m.group(2) or "", m.group(3), m.group(4) or "0"
    exp = exp.lstrip("0")
    exp = (int(exp or 0) if len(exp) <= 9 else 10 ** 9) * (-1 if sign == "-" else 1)   # no int() of 1 MB
    digits = (whole + frac).lstrip("0")
    point = len(frac) - exp
    if not digits or point - len(digits) > 30:   # zero, or below 1e-30 units: under 1 ns in any unit
        return 0
    if len(digits) - point > 30:   # at least 1e30 units: over 2**64 ns in any unit
        raise ValueError("%s %s is out of range" % (what, show(t)))
    if len(digits) > 60:
        raise ValueError("%s %s has too many digits" % (what, show(t)))
    value = int(digits) * scale
    value = value // (10 ** point) if point >= 0 else value * 10 ** (-point)
    if value > U64_MAX:
        raise ValueError("%s %s is out of range" % (what, show(t)))
    return value


def parse_op(text):
    """read/write/discard/flush from the spellings traces use (R, Write, 0/1, trim, ...)."""
    t = text.strip().lower()
    if t in ("r", "read", "rs", "ra", "0"):
        return record.READ
    if t in ("w", "write", "ws", "wm", "1"):
        return record.WRITE
    if t in ("d", "discard", "trim", "t"):
        return record.DISCARD
    if t in ("f", "flush", "sync", "fsync", "datasync"):
        return record.FLUSH
    raise ValueError("operation %s is not read, write, discard or flush" % show(text))


class Reader:
    """Base of the line-oriented readers: subclasses parse one line into a record tuple."""

    name = ""
    description = ""

    def __init__(self, path, lenient=False, chunk=CHUNK, **options):
        self.path = str(path)
        self.lenient = lenient
        self.chunk = chunk
        self.skipped = 0
        self.problems = []
        self.source = os.path.basename(self.path)
        self.configure(**options)

    def configure(self, **options):
        if "columns" in options:      # the CLI fills in the other csv options beside a mapping
            raise TraceError(self.path, "format %s takes no column mapping: --columns (and --delimiter, "
                             "--time-unit, --offset-unit, --header) go with --format csv" % self.name)
        if options:
            raise TraceError(self.path, "format %s takes no options (got %s)"
                             % (self.name, ", ".join(sorted(options))))

    def parse(self, line, lineno):
        """A tuple (time_ns, offset, latency_ns, length, pid, device, op), or None to skip."""
        raise NotImplementedError

    def bad(self, lineno, message):
        if not self.lenient:
            raise TraceError(self.path, message, lineno)
        self.skipped += 1
        if len(self.problems) < 5:
            self.problems.append("line %d: %s" % (lineno, message))

    def __iter__(self):
        rows, lines, n = [], 0, 0
        with open_text(self.path) as f:
            try:
                for lineno, line in enumerate(bounded_lines(f), 1):
                    if line is None:
                        self.bad(lineno, "line is longer than %d characters" % MAX_LINE)
                        continue
                    line = line.strip()
                    if not line or line[0] == "#":
                        continue
                    lines += 1
                    try:
                        row = self.parse(line, lineno)
                        if row is None:
                            continue
                        check_row(row)
                    except ValueError as exc:
                        self.bad(lineno, str(exc))
                        continue
                    rows.append(row)
                    n += 1
                    if len(rows) == self.chunk:
                        yield np.array(rows, dtype=record.REQUEST)
                        rows = []
            except READ_ERRORS as exc:  # corrupt or truncated gzip, I/O error
                raise TraceError(self.path, "read failed: %s" % exc) from None
        if rows:
            yield np.array(rows, dtype=record.REQUEST)
        if not n:
            raise TraceError(self.path, self.nothing_read(lines))

    def nothing_read(self, lines):
        """Why a pass gave no request: an empty file, or one that is not this format."""
        if not lines:
            return "the trace is empty"
        if self.skipped == lines:
            return "all %d lines are malformed (is it a %s trace?)" % (lines, self.name)
        return "no request in %d lines (is it a %s trace?)" % (lines, self.name)


MAX_LINE = 1 << 16


def bounded_lines(f):
    """The lines of f, None for one longer than MAX_LINE (read in pieces, never whole)."""
    while True:
        line = f.readline(MAX_LINE)
        if not line:
            return
        if len(line) < MAX_LINE or line.endswith("\n"):
            yield line
            continue
        while line and not line.endswith("\n"):
            line = f.readline(MAX_LINE)
        yield None


def check_row(row):
    """ValueError unless every field of a parsed request fits its REQUEST field and the length
    is sane; scaling to ns or bytes can overflow fields that parsed in range."""
    time_ns, offset, latency_ns, length, pid, device, _ = row
    if time_ns <= U64_MAX and latency_ns <= U64_MAX and length <= MAX_LENGTH and offset + length <= U64_MAX \
            and pid <= U32_MAX and device <= U32_MAX:   # one test on the per-line path
        return
    for value, what in ((time_ns, "time (ns)"), (offset, "offset (bytes)"), (latency_ns, "latency (ns)")):
        if value > U64_MAX:
            raise ValueError("%s %d does not fit 64 bits" % (what, value))
    if length > MAX_LENGTH:
        raise ValueError("request length %d is over the %d MiB maximum" % (length, MAX_LENGTH >> 20))
    if offset + length > U64_MAX:
        raise ValueError("offset %d + length %d is past the 64-bit address space" % (offset, length))
    for value, what in ((pid, "pid"), (device, "device")):
        if value > U32_MAX:
            raise ValueError("%s %d does not fit 32 bits" % (what, value))


def sector_offset(sector, what):
    """A byte offset from a 512-byte sector number, or ValueError when it does not fit 64 bits."""
    if sector * SECTOR > U64_MAX:
        raise ValueError("%s %d is out of range" % (what, sector))
    return sector * SECTOR


class MsrcReader(Reader):
    name = "msrc"
    description = "MSR Cambridge CSV: Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"

    def parse(self, line, lineno):
        f = line.split(",")
        if len(f) != 7:
            raise ValueError("expected 7 comma-separated fields, found %d" % len(f))
        ticks = parse_uint(f[0], "timestamp")
        if ticks < FILETIME_UNIX_EPOCH:
            raise ValueError("timestamp %d is before 1970 (not a Windows FILETIME)" % ticks)
        op = f[3].strip().lower()
        if op not in ("read", "write"):
            raise ValueError("type %s is neither Read nor Write" % show(f[3]))
        return ((ticks - FILETIME_UNIX_EPOCH) * 100, parse_uint(f[4], "offset"),
                parse_uint(f[6], "response time") * 100,
                parse_uint(f[5], "size"), 0,
                parse_uint(f[2], "disk number", U32_MAX),
                record.READ if op == "read" else record.WRITE)


BLKPARSE_LINE = re.compile(
    r"(\d+),(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:\.\d+)?)\s+(\d+)\s+([A-Za-z]+)\s+([A-Z]+)\s*(.*)", re.ASCII)
BLKPARSE_IO = re.compile(r"(\d+)\s*\+\s*(\d+)", re.ASCII)
# blkparse ends with per-CPU and total summaries ("CPU0 (8,0):", "Total (sda):"); nothing after is an event.
BLKPARSE_TRAILER = re.compile(r"(CPU\d+|Total) \(.*\):$", re.ASCII)


class BlkparseReader(Reader):
    name = "blkparse"
    description = "blkparse default text output; keeps D (issue) or C (complete) actions"

    def configure(self, action="D"):
        if action not in ("D", "C", "Q"):
            raise TraceError(self.path, "blkparse action must be D, C or Q, not %s" % show(str(action)))
        self.action = action

    def __iter__(self):
        self.in_trailer = False
        return super().__iter__()

    def parse(self, line, lineno):
        if self.in_trailer:
            return None
        m = BLKPARSE_LINE.match(line)
        if not m:
            if BLKPARSE_TRAILER.match(line):
                self.in_trailer = True
                return None
            raise ValueError("not a blkparse event line")
        maj, mnr, _cpu, _seq, ts, pid, action, rwbs, rest = m.groups()
        if action != self.action:
            return None
        device = (parse_uint(maj, "major", 4095) << 20) | parse_uint(mnr, "minor", (1 << 20) - 1)
        pid = parse_uint(pid, "pid", U32_MAX)
        io = BLKPARSE_IO.match(rest)
        if not io:
            if "F" in rwbs:  # a flush carries no sector range
                return (parse_seconds_ns(ts), 0, 0, 0, pid, device, record.FLUSH)
            raise ValueError("no 'sector + count' after %s %s" % (action, rwbs))
        sector, count = parse_uint(io.group(1), "sector"), parse_uint(io.group(2), "block count")
        if "D" in rwbs:
            op = record.DISCARD
        elif "W" in rwbs:
            op = record.WRITE
        elif "R" in rwbs:
            op = record.READ
        elif "F" in rwbs:
            op = record.FLUSH
        else:
            return None
        return (parse_seconds_ns(ts), sector_offset(sector, "sector"), 0, count * SECTOR, pid, device, op)


class SpcReader(Reader):
    name = "spc"
    description = "SPC/UMass ASCII (Financial, WebSearch): ASU,LBA,Size,Opcode,Timestamp"

    def parse(self, line, lineno):
        f = line.split(",")
        if len(f) < 5:
            raise ValueError("expected ASU,LBA,Size,Opcode,Timestamp, found %d fields" % len(f))
        offset = sector_offset(parse_uint(f[1], "LBA"), "LBA")
        op = parse_op(f[3])
        return (parse_seconds_ns(f[4]), offset, 0, parse_uint(f[2], "size"),
                0, parse_uint(f[0], "ASU", U32_MAX), op)


class AlibabaReader(Reader):
    name = "alibaba"
    description = "Alibaba block traces: device_id,opcode,offset,length,timestamp (us)"

    def parse(self, line, lineno):
        f = line.split(",")
        if len(f) != 5:
            raise ValueError("expected device_id,opcode,offset,length,timestamp, found %d fields" % len(f))
        return (parse_uint(f[4], "timestamp") * 1000, parse_uint(f[2], "offset"), 0,
                parse_uint(f[3], "length"), 0,
                parse_uint(f[0], "device id", U32_MAX), parse_op(f[1]))


class TencentReader(Reader):
    name = "tencent"
    description = "Tencent CBS: timestamp (s),offset (sectors),size (sectors),iotype (0 read/1 write),volume"

    def parse(self, line, lineno):
        f = line.split(",")
        if len(f) != 5:
            raise ValueError("expected timestamp,offset,size,iotype,volume, found %d fields" % len(f))
        iotype = f[3].strip()
        if iotype not in ("0", "1"):
            raise ValueError("iotype %s is neither 0 (read) nor 1 (write)" % show(iotype))
        offset = sector_offset(parse_uint(f[1], "offset"), "offset (sectors)")
        return (parse_seconds_ns(f[0]), offset, 0,
                parse_uint(f[2], "size") * SECTOR, 0,
                parse_uint(f[4], "volume", U32_MAX), record.READ if iotype == "0" else record.WRITE)


class FioReader(Reader):
    name = "fio"
    description = "fio iolog, version 2 or 3"

    FIO_OPS = {"read": record.READ, "write": record.WRITE, "trim": record.DISCARD,
               "sync": record.FLUSH, "datasync": record.FLUSH}

    def __iter__(self):
        self.version = None
        self.wait_ns = 0
        return super().__iter__()

    def parse(self, line, lineno):
        if self.version is None:
            m = re.fullmatch(r"fio version (\d+) iolog", line)
            if not m or m.group(1) not in ("2", "3"):
                raise TraceError(self.path, "not a fio iolog v2/v3 (first line %s)" % show(line, 60), lineno)
            self.version = int(m.group(1))
            return None
        f = line.split()
        if self.version == 3:
            if len(f) < 3:
                raise ValueError("expected 'timestamp filename action [offset length]'")
            time_ns = parse_uint(f[0], "timestamp") * 1_000_000
            f = f[1:]
        else:
            if len(f) == 3 and f[1] == "wait":
                self.wait_ns += parse_uint(f[2], "wait") * 1000
                return None
            time_ns = self.wait_ns
        if len(f) < 2:
            raise ValueError("expected 'filename action [offset length]'")
        action = f[1]
        if action in ("add", "open", "close"):
            return None
        if action not in self.FIO_OPS:
            raise ValueError("unknown fio action %s" % show(action))
        op = self.FIO_OPS[action]
        if op == record.FLUSH:
            return (time_ns, 0, 0, 0, 0, 0, op)
        if len(f) != 4:
            raise ValueError("%s needs an offset and a length" % action)
        return (time_ns, parse_uint(f[2], "offset"), 0, parse_uint(f[3], "length"),
                0, 0, op)


TIME_UNITS = {"ns": 1, "us": 1000, "ms": 1_000_000, "s": 1_000_000_000}
OFFSET_UNITS = {"bytes": 1, "sectors": SECTOR, "kib": 1024, "pages": 4096}


class CsvReader(Reader):
    """Any delimited text with a column mapping, e.g. columns="time=0,offset=4,length=5,op=3"."""

    name = "csv"
    description = "generic delimited text with --columns time=I,offset=I,length=I,op=I[,device=I,pid=I,latency=I]"

    def configure(self, columns=None, delimiter=",", time_unit="ns", offset_unit="bytes",
                  length_unit="bytes", latency_unit="ns", header=False):
        if not columns:
            raise TraceError(self.path, "format csv needs a column mapping, e.g. "
                             "--columns time=0,offset=1,length=2,op=3")
        self.cols = {}
        for item in columns.split(","):
            key, _, idx = item.partition("=")
            key = key.strip()
            if key not in ("time", "offset", "length", "op", "device", "pid", "latency") or not (idx.strip().isascii() and idx.strip().isdigit()):
                raise TraceError(self.path, "bad column mapping %s (want NAME=INDEX with NAME in "
                                 "time, offset, length, op, device, pid, latency)" % show(item))
            self.cols[key] = int(idx)
        missing = {"offset", "length", "op"} - set(self.cols)
        if missing:
            raise TraceError(self.path, "column mapping lacks %s" % ", ".join(sorted(missing)))
        for unit, table, what in ((time_unit, TIME_UNITS, "time"), (latency_unit, TIME_UNITS, "latency"),
                                  (offset_unit, OFFSET_UNITS, "offset"), (length_unit, OFFSET_UNITS, "length")):
            if unit not in table:
                raise TraceError(self.path, "%s unit %r is not one of %s" % (what, unit, ", ".join(table)))
        self.delimiter = delimiter
        self.time_scale, self.lat_scale = TIME_UNITS[time_unit], TIME_UNITS[latency_unit]
        self.off_scale, self.len_scale = OFFSET_UNITS[offset_unit], OFFSET_UNITS[length_unit]
        self.header = header
        self.need = max(self.cols.values()) + 1

    def __iter__(self):
        self.seen_header = not self.header
        return super().__iter__()

    def parse(self, line, lineno):
        if not self.seen_header:
            self.seen_header = True
            return None
        f = line.split(self.delimiter) if self.delimiter != " " else line.split()
        if len(f) < self.need:
            raise ValueError("expected at least %d fields, found %d" % (self.need, len(f)))
        c = self.cols
        time_ns = parse_seconds_ns(f[c["time"]], "time", self.time_scale) if "time" in c else 0
        offset = parse_uint(f[c["offset"]], "offset") * self.off_scale
        length = parse_uint(f[c["length"]], "length") * self.len_scale
        lat = parse_seconds_ns(f[c["latency"]], "latency", self.lat_scale) if "latency" in c else 0
        if offset > U64_MAX or lat > U64_MAX:
            raise ValueError("offset or latency out of range")
        return (time_ns, offset, lat, length,
                parse_uint(f[c["pid"]], "pid", U32_MAX) if "pid" in c else 0,
                parse_uint(f[c["device"]], "device", U32_MAX) if "device" in c else 0,
                parse_op(f[c["op"]]))


TEXT_READERS = {r.name: r for r in (MsrcReader, BlkparseReader, SpcReader, AlibabaReader,
                                    TencentReader, FioReader, CsvReader)}
