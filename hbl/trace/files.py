"""Trace files: the format of a file, a reader for it, a writer of a format. Below the names of
hbl.trace (bundled:, synth:, workload:, apps:, mixes), which resolve to files, so that what
resolves a name (hbl.trace.workloads) can read and write files without the names above it."""
import os
import re

from hbl import record
from hbl.errors import TraceError, show
from hbl.trace.formats import MAX_LINE, READ_ERRORS, TEXT_READERS, bounded_lines, open_text
from hbl.trace.native import NativeReader, is_native
from hbl.trace.packed import PackedReader, is_packed
from hbl.trace.writers import WRITERS

READERS = dict(TEXT_READERS, native=NativeReader, packed=PackedReader)
BINARY_READERS = ("native", "packed")


def _fields(line):
    return [f.strip() for f in line.split(",")]


def _is_uint(s):
    return s.isascii() and s.isdigit()


def _is_number(s):
    return bool(re.fullmatch(r"[0-9]+(\.[0-9]*)?", s))


def _guess_line(line):
    """Formats a single line fits (a set)."""
    if re.fullmatch(r"fio version \d+ iolog", line):
        return {"fio"}
    if re.match(r"\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+[A-Za-z]+", line, re.ASCII):
        return {"blkparse"}
    f = _fields(line)
    fits = set()
    if len(f) == 7 and _is_uint(f[0]) and f[3].lower() in ("read", "write") and _is_uint(f[4]):
        fits.add("msrc")
    if len(f) == 5:
        if _is_uint(f[0]) and f[1].upper() in ("R", "W") and _is_uint(f[2]) and _is_uint(f[3]) and _is_uint(f[4]):
            fits.add("alibaba")
        if _is_number(f[0]) and _is_uint(f[1]) and _is_uint(f[2]) and f[3] in ("0", "1") and _is_uint(f[4]):
            fits.add("tencent")
    if len(f) >= 5 and _is_uint(f[0]) and _is_uint(f[1]) and _is_uint(f[2]) and \
            f[3].lower() in ("r", "w") and _is_number(f[4]):
        fits.add("spc")
    return fits


def detect(path, lines=20):
    """The format of a trace file, or TraceError when it is unknown or ambiguous.

    The first lines decide; a malformed line among them is left to the parser,
    which reports it with its line number."""
    if is_native(path):
        return "native"
    if is_packed(path):
        return "packed"
    fits, seen, first = None, 0, None
    with open_text(path) as f:
        try:
            for line in bounded_lines(f):
                if line is None:
                    raise TraceError(path, "a line longer than %d characters: not a text trace" % MAX_LINE)
                if "\0" in line:
                    raise TraceError(path, "binary data: neither a text trace nor a native hbl trace")
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                first = first or line
                guess = _guess_line(line)
                if guess in ({"fio"}, {"blkparse"}):
                    return guess.pop()
                seen += 1
                if guess:
                    fits = guess if fits is None else (fits & guess or fits)
                if seen >= lines:
                    break
        except READ_ERRORS as exc:
            raise TraceError(path, "read failed: %s" % exc) from None
    if first is None:
        raise TraceError(path, "the trace is empty")
    if not fits:
        raise TraceError(path, "unknown trace format (first line %s): give --format (%s)"
                         % (show(first, 60), ", ".join(sorted(READERS))))
    if len(fits) == 1:
        return fits.pop()
    raise TraceError(path, "ambiguous trace format (could be %s): give --format" % " or ".join(sorted(fits)))


def open_file(path, fmt=None, lenient=False, chunk=1 << 16, **options):
    """A reader (iterable of REQUEST chunks) for a trace file, its format detected unless given."""
    if not os.path.exists(path):
        raise TraceError(path, "no such file")
    if os.path.isdir(path):
        raise TraceError(path, "is a directory, not a trace")
    fmt = fmt or detect(path)
    if fmt not in READERS:
        raise TraceError(path, "unknown format %r (have: %s)" % (fmt, ", ".join(sorted(READERS))))
    options = {k: v for k, v in options.items() if v is not None}
    if fmt in BINARY_READERS:
        if options:
            raise TraceError(path, "%s traces take no format options" % fmt)
        return READERS[fmt](path, lenient=lenient, chunk=chunk)
    return READERS[fmt](path, lenient=lenient, chunk=chunk, **options)


def load_file(path, **kw):
    """The whole trace file in memory, and its reader."""
    reader = open_file(path, **kw)
    return record.concat(list(reader)), reader


def writer(path, fmt, source="", **options):
    if fmt not in WRITERS:
        raise TraceError(path, "cannot write format %r (can write: %s)" % (fmt, ", ".join(sorted(WRITERS))))
    return WRITERS[fmt](path, source=source, **options)


def format_for_path(path):
    """The output format implied by a file name (.csv = msrc, .iolog/.fio = fio, .hblz = packed,
    else native), looking through a .gz suffix."""
    lower = str(path).lower()
    if lower.endswith(".hblz"):
        return "packed"
    if lower.endswith(".gz"):
        lower = lower[:-3]
    if lower.endswith(".csv"):
        return "msrc"
    if lower.endswith((".iolog", ".fio")):
        return "fio"
    return "native"
