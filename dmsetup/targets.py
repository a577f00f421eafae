"""Device-mapper targets and tables.

A target knows only its own table arguments; a table is a list of targets laid
end to end.  Sizes are in 512-byte sectors, as device-mapper counts them.

    t = Table([Linear(2048, "/dev/nvme0n1", 0), Linear(2048, "/dev/vda", 4096)])
    t.text()   # "0 2048 linear /dev/nvme0n1 0\\n2048 2048 linear /dev/vda 4096\\n"
"""
import dataclasses
import os
import shlex
import stat

import numpy as np


class TableError(ValueError):
    """A table that device-mapper would refuse, with the line that is wrong."""


@dataclasses.dataclass
class Target:
    sectors: int

    type = ""

    def args(self):
        return ""

    def devices(self):
        return []


@dataclasses.dataclass
class Linear(Target):
    dev: str
    offset: int = 0
    type = "linear"

    def args(self):
        return "%s %d" % (self.dev, self.offset)

    def devices(self):
        return [self.dev]


@dataclasses.dataclass
class Delay(Target):
    """Every I/O waits `ms`; with write_ms set, writes wait that instead."""
    dev: str
    offset: int = 0
    ms: int = 0
    write_ms: int = None
    type = "delay"

    def args(self):
        a = "%s %d %d" % (self.dev, self.offset, self.ms)
        if self.write_ms is not None:
            a += " %s %d %d" % (self.dev, self.offset, self.write_ms)
        return a

    def devices(self):
        return [self.dev]


@dataclasses.dataclass
class Flakey(Target):
    """Up for `up_s` seconds, then down for `down_s` (I/O fails, or as features say)."""
    dev: str
    offset: int = 0
    up_s: int = 1
    down_s: int = 1
    features: tuple = ()
    type = "flakey"

    def args(self):
        a = "%s %d %d %d" % (self.dev, self.offset, self.up_s, self.down_s)
        if self.features:
            a += " %d %s" % (len(self.features), " ".join(self.features))
        return a

    def devices(self):
        return [self.dev]


@dataclasses.dataclass
class Error(Target):
    type = "error"


@dataclasses.dataclass
class Zero(Target):
    type = "zero"


@dataclasses.dataclass
class Cache(Target):
    """dm-cache: metadata and cache devices (fast), origin (slow), block size in sectors."""
    metadata_dev: str
    cache_dev: str
    origin_dev: str
    block_sectors: int = 512
    features: tuple = ("writeback",)
    policy: str = "smq"
    policy_args: tuple = ()
    type = "cache"

    def args(self):
        return "%s %s %s %d %d %s %s %d %s" % (
            self.metadata_dev, self.cache_dev, self.origin_dev, self.block_sectors, len(self.features),
            " ".join(self.features), self.policy, len(self.policy_args), " ".join(self.policy_args))

    def devices(self):
        return [self.metadata_dev, self.cache_dev, self.origin_dev]

    @staticmethod
    def parse_status(text):
        """The fields of a cache target's status line (Documentation/admin-guide/device-mapper/cache.rst)."""
        f = text.split()
        try:
            used_meta, total_meta = (int(x) for x in f[1].split("/"))
            used, total = (int(x) for x in f[3].split("/"))
            out = {"metadata_block_sectors": int(f[0]), "metadata_used": used_meta, "metadata_total": total_meta,
                   "block_sectors": int(f[2]), "used_blocks": used, "total_blocks": total,
                   "read_hits": int(f[4]), "read_misses": int(f[5]), "write_hits": int(f[6]),
                   "write_misses": int(f[7]), "demotions": int(f[8]), "promotions": int(f[9]),
                   "dirty": int(f[10])}
            i = 11
            nfeat = int(f[i]); out["features"] = f[i + 1:i + 1 + nfeat]; i += 1 + nfeat
            ncore = int(f[i]); out["core_args"] = f[i + 1:i + 1 + ncore]; i += 1 + ncore
            out["policy"] = f[i]
            npol = int(f[i + 1]); out["policy_args"] = f[i + 2:i + 2 + npol]; i += 2 + npol
            out["mode"] = f[i] if i < len(f) else ""
            return out
        except (IndexError, ValueError):
            raise TableError("not a cache status line: %r" % text) from None


@dataclasses.dataclass
class LogWrites(Target):
    dev: str
    log_dev: str
    type = "log-writes"

    def args(self):
        return "%s %s" % (self.dev, self.log_dev)

    def devices(self):
        return [self.dev, self.log_dev]


@dataclasses.dataclass
class Switch(Target):
    """dm-switch: the space cut into regions of `region_sectors`, each sent, at the same
    offset, to one of `paths` ((device, offset) pairs).  Which path serves a region is
    changed by a message (mappings()), with no suspend: I/O already mapped finishes
    where it went, I/O mapped after goes to the new path.  A new table starts with the
    regions dealt round-robin over the paths."""
    region_sectors: int
    paths: tuple
    type = "switch"

    def args(self):
        return "%d %d 0 %s" % (len(self.paths), self.region_sectors, " ".join("%s %d" % p for p in self.paths))

    def devices(self):
        return [p[0] for p in self.paths]

    @staticmethod
    def mappings(regions, path):
        """The message sending `regions` (sorted or not) to path number `path`: runs of
        consecutive regions are written 'first:path R1,rest' (the kernel parses hex)."""
        rs = np.sort(np.fromiter(regions, np.int64) if not isinstance(regions, np.ndarray)
                     else regions.astype(np.int64))
        if not len(rs):
            return ""
        rs = rs[np.concatenate(([True], rs[1:] != rs[:-1]))]
        brk = np.flatnonzero(np.diff(rs) != 1) + 1           # where a run of consecutive regions ends
        first = rs[np.concatenate(([0], brk))].tolist()
        count = np.diff(np.concatenate(([0], brk, [len(rs)]))).tolist()
        out = []
        for r, k in zip(first, count):
            out.append("%x:%x" % (r, path))
            if k > 1:
                out.append("R1,%x" % (k - 1))
        return "set_region_mappings " + " ".join(out)


@dataclasses.dataclass
class Raw(Target):
    """Any other target, by type and argument string (what a table read back holds)."""
    target_type: str
    arg_text: str = ""

    @property
    def type(self):
        return self.target_type

    def args(self):
        return self.arg_text


_PARSERS = {
    "linear": lambda n, a: Linear(n, a[0], int(a[1])),
    "error": lambda n, a: Error(n),
    "zero": lambda n, a: Zero(n),
}


class Table:
    """Targets laid end to end from sector 0."""

    def __init__(self, targets):
        self.targets = list(targets)

    def __iter__(self):
        return iter(self.targets)

    def __len__(self):
        return len(self.targets)

    def __eq__(self, other):
        return isinstance(other, Table) and self.text() == other.text()

    @property
    def sectors(self):
        return sum(t.sectors for t in self.targets)

    def segments(self):
        """(start, target) pairs."""
        start = 0
        for t in self.targets:
            yield start, t
            start += t.sectors

    def validate(self, check_devices=False):
        if not self.targets:
            raise TableError("a table needs at least one target")
        for i, (start, t) in enumerate(self.segments()):
            if not isinstance(t.sectors, int) or t.sectors <= 0:
                raise TableError("line %d (%s at sector %d): length must be a positive number of sectors, not %r"
                                 % (i + 1, t.type, start, t.sectors))
            for attr in ("offset",):
                v = getattr(t, attr, 0)
                if not isinstance(v, int) or v < 0:
                    raise TableError("line %d (%s): offset must be >= 0" % (i + 1, t.type))
            if check_devices:
                for d in t.devices():
                    if not os.path.exists(d):
                        raise TableError("line %d (%s at sector %d): no such device %s" % (i + 1, t.type, start, d))
        return self

    def text(self):
        return "".join("%d %d %s %s\n" % (start, t.sectors, t.type, t.args()) for start, t in self.segments())

    def canonical_text(self):
        """The text with device paths as MAJOR:MINOR, the way the kernel reports a live table."""
        def devnum(tok):
            try:
                st = os.stat(tok)
            except OSError:
                return tok
            return "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)) if stat.S_ISBLK(st.st_mode) else tok
        return "".join(" ".join(devnum(tok) if tok.startswith("/") else tok for tok in line.split()) + "\n"
                       for line in self.text().splitlines())

    def same_as(self, other):
        """Whether two tables map the same sectors to the same places (paths or numbers)."""
        return self.canonical_text() == other.canonical_text()

    @classmethod
    def parse(cls, text):
        """A table from dm table text; segments must be contiguous from sector 0."""
        targets, expect = [], 0
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            f = shlex.split(line)
            if len(f) < 3:
                raise TableError("line %d: want 'start length type [args]': %r" % (lineno, line))
            try:
                start, length = int(f[0]), int(f[1])
            except ValueError:
                raise TableError("line %d: start and length must be integers: %r" % (lineno, line)) from None
            if start != expect:
                raise TableError("line %d: starts at %d, but the previous segment ends at %d" % (lineno, start, expect))
            parse = _PARSERS.get(f[2])
            try:
                targets.append(parse(length, f[3:]) if parse else Raw(length, f[2], " ".join(f[3:])))
            except (IndexError, ValueError):
                raise TableError("line %d: bad %s arguments: %r" % (lineno, f[2], line)) from None
            expect = start + length
        return cls(targets).validate()


class LinearRuns(Table):
    """Linear targets laid end to end, held as arrays: target i maps sectors[i] sectors to
    paths[dev[i]] from sector offset[i].  A live device's table has a target per run of
    extents, thousands of them: it is built, checked and packed for the kernel without
    a Python object per target (`targets` makes them when asked)."""

    def __init__(self, sectors, dev, offset, paths):
        self.n = np.asarray(sectors, np.int64)
        self.dev = np.asarray(dev, np.int64)
        self.offset = np.asarray(offset, np.int64)
        self.paths = list(paths)

    @property
    def targets(self):
        return [Linear(n, self.paths[d], o) for n, d, o in
                zip(self.n.tolist(), self.dev.tolist(), self.offset.tolist())]

    def __len__(self):
        return len(self.n)

    @property
    def sectors(self):
        return int(self.n.sum())

    def starts(self):
        """The first sector of each target."""
        return np.concatenate(([0], np.cumsum(self.n)[:-1])).astype(np.int64)

    def params(self):
        """Each target's argument string, as bytes."""
        pb = [p.encode() for p in self.paths]
        return [b"%s %d" % (pb[d], o) for d, o in zip(self.dev.tolist(), self.offset.tolist())]

    def params_array(self):
        """params() as one array of NUL-padded bytes ("S" dtype), and the longest one's length:
        made with numpy in a few dozen calls, however many runs the table has (a live device's
        mapping has hundreds to thousands; formatting each in Python was most of building its
        table on a slow CPU)."""
        pb = [p.encode() for p in self.paths]
        dev, off = self.dev, self.offset
        n = len(dev)
        plen = np.array([len(p) for p in pb], np.int64)[dev]
        ndig = 1 + np.searchsorted(10 ** np.arange(1, 19, dtype=np.int64), off, "right")   # decimal digits
        length = plen + 1 + ndig
        longest = int(length.max()) if n else 0
        buf = np.zeros((n, max(longest, 1)), np.uint8)
        for d, p in enumerate(pb):
            sel = dev == d
            if sel.any():
                buf[sel, :len(p)] = np.frombuffer(p, np.uint8)
        rows = np.arange(n)
        buf[rows, plen] = ord(" ")
        r, j = np.nonzero(np.arange(int(ndig.max()) if n else 0) < ndig[:, None])      # digit j of row r, from the left
        buf[r, plen[r] + 1 + j] = 48 + off[r] // 10 ** (ndig[r] - 1 - j) % 10
        return buf.view("S%d" % buf.shape[1]).ravel(), longest

    def validate(self, check_devices=False):
        if not len(self.n):
            raise TableError("a table needs at least one target")
        if not (len(self.dev) == len(self.offset) == len(self.n)):
            raise TableError("lengths, devices and offsets differ in number")
        bad = np.flatnonzero((self.n <= 0) | (self.offset < 0) | (self.dev < 0) | (self.dev >= len(self.paths)))
        if len(bad):
            i = int(bad[0])
            n, d, o = int(self.n[i]), int(self.dev[i]), int(self.offset[i])
            why = ("length must be a positive number of sectors, not %d" % n if n <= 0 else
                   "offset must be >= 0" if o < 0 else "device number %d of %d" % (d, len(self.paths)))
            raise TableError("line %d (linear at sector %d): %s" % (i + 1, int(self.starts()[i]), why))
        if check_devices:
            for d in np.unique(self.dev).tolist():
                if not os.path.exists(self.paths[d]):
                    i = int(np.flatnonzero(self.dev == d)[0])
                    raise TableError("line %d (linear at sector %d): no such device %s"
                                     % (i + 1, int(self.starts()[i]), self.paths[d]))
        return self

    def text(self):
        return "".join("%d %d linear %s\n" % (a, n, p.decode()) for a, n, p in
                       zip(self.starts().tolist(), self.n.tolist(), self.params()))
