"""Multi-tenant mixes: several captures replayed at once, as a hybrid storage host serves them.

    hbl simulate --trace workload:pgbench+rocksdb
    hbl convert workload:pgbench+rocksdb+sqlite mix.hblz

Each tenant keeps its own timing, counted from its first request, so all tenants start
together, and the mix interleaves them in time order (a tie goes to the tenant named first).
Each tenant gets an address range of its own: its offsets are shifted past the previous
tenant's highest address, rounded up to ALIGN, so no two tenants share a page and every
tenant starts on an extent boundary (any extent size up to ALIGN). The device field says
which tenant a request came from (0 for the first named). A mix ends when its last tenant
does: tenants of different lengths leave the longest running alone at the end.
"""
import numpy as np

from hbl import record
from hbl.errors import TraceError
from hbl.trace.formats import U64_MAX

ALIGN = 1 << 30
KINDS = ("workload:", "apps:")


def is_mix(name):
    return name.startswith(KINDS) and "+" in name


def tenants(spec):
    """workload:A+B -> [workload:A, workload:B]."""
    kind, _, rest = spec.partition(":")
    names = rest.split("+")
    if len(names) < 2 or not all(names):
        raise TraceError(spec, "a mix is %s:A+B[+...]: two or more names joined by '+'" % kind)
    return ["%s:%s" % (kind, n) for n in names]


class MixReader:
    """Chunks of the tenants' requests merged in time order; tenants are read twice (a first pass
    finds each one's start and highest address), in bounded memory."""

    name = "mix"
    description = "multi-tenant mix of captures (workload:A+B)"

    def __init__(self, spec, open_one, chunk=1 << 16):
        """open_one(name) opens one tenant's trace (hbl.trace.open_trace with the caller's options)."""
        self.path = self.spec = spec
        self.names, self.open_one, self.chunk = tenants(spec), open_one, chunk
        self.readers = []
        self.starts, self.bases = [], []
        base = 0
        for name in self.names:
            start, top = None, 0
            for c in open_one(name):
                if len(c):
                    t = int(c["time_ns"].min())
                    start = t if start is None else min(start, t)
                    top = max(top, int((c["offset"] + c["length"].astype(np.uint64)).max()))
            if start is None:
                raise TraceError(spec, "tenant %s has no request" % name)
            if base + top > U64_MAX:
                raise TraceError(spec, "the tenants' address ranges do not fit 64 bits together")
            self.starts.append(start)
            self.bases.append(base)
            base = -(-(base + top) // ALIGN) * ALIGN
        self.source = "mix of %s (tenant address ranges start at %s)" % (
            ", ".join(self.names), ", ".join("%d GiB" % (b >> 30) for b in self.bases))

    @property
    def skipped(self):
        return sum(getattr(r, "skipped", 0) for r in self.readers)

    @property
    def problems(self):
        return [p for r in self.readers for p in getattr(r, "problems", [])][:5]

    def _tenant(self, i, reader):
        for c in reader:
            c = np.array(c, dtype=record.REQUEST)    # a copy: a native tenant's chunks are a read-only map
            c["time_ns"] -= np.uint64(self.starts[i])
            c["offset"] += np.uint64(self.bases[i])
            c["device"] = i
            yield c

    def __iter__(self):
        self.readers = [self.open_one(n) for n in self.names]
        streams = [self._tenant(i, r) for i, r in enumerate(self.readers)]
        bufs = [record.empty(0) for _ in streams]
        live = set(range(len(streams)))
        while True:
            for i in list(live):
                while not len(bufs[i]):
                    try:
                        bufs[i] = next(streams[i])
                    except StopIteration:
                        live.discard(i)
                        break
            if not any(len(b) for b in bufs):
                return
            # nothing a live tenant gives later comes before the last request it has buffered
            lasts = {i: int(bufs[i]["time_ns"][-1]) for i in live}
            first = min(lasts, key=lasts.get) if lasts else None
            horizon = lasts[first] if lasts else None
            out = []
            for i, b in enumerate(bufs):
                n = len(b) if horizon is None or i == first else \
                    int(np.searchsorted(b["time_ns"], np.uint64(horizon), side="right"))
                out.append(b[:n])
                bufs[i] = b[n:]
            merged = record.concat(out)
            merged = merged[np.argsort(merged["time_ns"], kind="stable")]
            for j in range(0, len(merged), self.chunk):
                yield merged[j:j + self.chunk]
