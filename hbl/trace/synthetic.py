"""Seeded synthetic workloads: uniform, zipf, sequential streams, their mixes,
and phase changes (the hot set moves), plus presets shaped like MSR volumes.

Spec syntax, usable wherever a trace name is: `synth:PRESET[:key=value,...]`,
e.g. `synth:zipf:alpha=1.1,requests=2000000` or `synth:hm:seed=7`.

Keys:
  requests   number of requests                      pages   footprint, 4 KiB pages
  read       fraction of reads (0..1)                alpha   zipf skew (0 = uniform)
  seq        fraction of requests in sequential streams      streams  concurrent streams
  size       request size in pages (fixed; otherwise the preset's mix)
  phases     working-set shifts over the run (0 = none)      iops  mean arrival rate
  burst      writes come in runs of this many requests in a row, reads between the runs (the read
             share kept); 0 = each request a read or a write at random
  log        share of the writes that append a record to one log (0..1): a record of 512 bytes up
             to the request's size, written where the last one ended, so a page is written by the
             records that touch it (the last partial one again by the next) and never after
  seed       random seed
The MSR-shaped presets are our approximations of the volumes' published
character (read share, skew, sequentiality, request sizes), not fits to the
full traces: they exist to give online learners long, realistic-looking runs.
"""
import dataclasses
import math

import numpy as np

from hbl import record
from hbl.trace import split
from hbl.errors import HblError, show
from hbl.trace.formats import MAX_LENGTH

PAGE = 4096


@dataclasses.dataclass
class Workload:
    requests: int = 1_000_000
    pages: int = 262_144            # 1 GiB footprint
    read: float = 0.5
    alpha: float = 0.9
    seq: float = 0.0
    streams: int = 4
    sizes: tuple = ((1, 1.0),)      # (pages, weight)
    phases: int = 0
    iops: float = 50.0              # mean arrivals/s: a quarter of what one HDD serves at random
    burst: int = 0                  # requests per run of writes (0: reads and writes interleaved at random)
    log: float = 0.0                # share of the writes that append to one log (0: none)
    seed: int = 1


PRESETS = {
    "uniform": Workload(alpha=0.0),
    "zipf": Workload(alpha=0.9),
    "sequential": Workload(alpha=0.0, seq=1.0, sizes=((16, 1.0),), read=0.5),
    "mixed": Workload(alpha=0.9, seq=0.3, sizes=((1, 0.6), (2, 0.2), (16, 0.2))),
    "phases": Workload(alpha=1.0, phases=4),
    # burst = write bursts into a full fast device (ours, a training family): runs of 1,024 small random
    # writes over the whole footprint (ten times the fast device), faster than the slower device takes
    # the evictions they cause, so its background queue fills (results/diagnosis/migration.txt [H])
    "burst": Workload(read=0.3, alpha=0.6, sizes=((1, 0.7), (2, 0.3)), burst=1024),
    # log = an fsynced write-once log (ours, a training family): a queue's binlog, an append-only file,
    # a write-ahead log. 90% of the writes append a record of up to 1-2 pages, each synchronous (an
    # fsync per record: every write of the replay is), so the tail page is written again by the next
    # record and a full page never again; the other writes (the metadata the appends update) and the
    # reads are zipf-skewed over the footprint; reads are rare (5%: a log is read back on recovery or
    # by a late consumer)
    "log": Workload(read=0.05, alpha=0.9, sizes=((1, 0.8), (2, 0.2)), log=0.9),
    # MSR-shaped (ours): hm = hardware monitoring, write-heavy small random I/O
    "hm": Workload(read=0.35, alpha=0.9, seq=0.1, sizes=((1, 0.7), (2, 0.15), (8, 0.15)), pages=131_072),
    # prxy = web proxy: very skewed, write-dominated
    "prxy": Workload(read=0.05, alpha=1.2, seq=0.05, sizes=((1, 0.9), (4, 0.1)), pages=65_536),
    # src = source control: mixed, larger sequential reads
    "src": Workload(read=0.6, alpha=0.8, seq=0.4, sizes=((1, 0.4), (8, 0.3), (16, 0.3)), pages=262_144),
    # web = web server: read-heavy, moderate skew
    "web": Workload(read=0.8, alpha=0.8, seq=0.2, sizes=((1, 0.5), (4, 0.3), (16, 0.2)), pages=262_144),
    # usr = user home directories: read-heavy, large requests, working set drifts
    "usr": Workload(read=0.7, alpha=0.9, seq=0.3, sizes=((1, 0.3), (8, 0.3), (16, 0.4)), phases=3,
                    pages=262_144),
    # proj = project directories: long sequential runs, shifting hot set
    "proj": Workload(read=0.5, alpha=0.7, seq=0.5, sizes=((2, 0.3), (16, 0.7)), phases=2, pages=262_144),
}

#: The default suite for `hbl compare` (together with the bundled MSR slices): the split's synthetic
#: evaluation families.
DEFAULT_SUITE = tuple(w for w in split.EVALUATION if w.startswith("synth:"))



def _whole(text):
    if not (text.isascii() and text.isdigit()) or len(text) > 20:
        raise ValueError(text)
    return int(text)


def _finite(text):
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(text)
    return v


_KEYS = {"requests": _whole, "pages": _whole, "read": _finite, "alpha": _finite, "seq": _finite,
         "streams": _whole, "size": _whole, "phases": _whole, "iops": _finite, "burst": _whole,
         "log": _finite, "seed": _whole}
# The generator holds a permutation and a CDF of the pages (16 bytes each): 2^26 pages
# (a 256 GiB footprint) is 1 GiB of memory.
MAX_PAGES = 1 << 26


def parse_spec(spec):
    """Workload and canonical name of `synth:PRESET[:k=v,...]`."""
    body = spec.split(":", 1)[1] if spec.startswith("synth:") else spec
    preset, _, args = body.partition(":")
    if preset not in PRESETS:
        raise HblError("synthetic workload %r: unknown preset %r (have: %s)"
                       % (spec, preset, ", ".join(PRESETS)))
    w = dataclasses.replace(PRESETS[preset])
    for item in filter(None, args.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in _KEYS:
            raise HblError("synthetic workload %r: bad parameter %r (keys: %s)"
                           % (spec, item, ", ".join(_KEYS)))
        try:
            v = _KEYS[key](value)
        except ValueError:
            raise HblError("synthetic workload %s: %s=%s is not a %s" % (
                show(spec), key, show(value), "whole number" if _KEYS[key] is _whole else "finite number")) from None
        if key == "size":
            w.sizes = ((v, 1.0),)
        else:
            setattr(w, key, v)
    if w.requests < 0 or not 1 <= w.pages <= MAX_PAGES or not 0 <= w.read <= 1 or not 0 <= w.seq <= 1 or \
            not 0 <= w.alpha <= 100 or not 1 <= w.streams <= 1 << 16 or w.iops <= 0 or w.burst > 1 << 30 or \
            not 0 <= w.phases <= 1 << 20 or w.seed >= 1 << 64 or not 0 <= w.log <= 1 or \
            any(p < 1 or p > w.pages or p * PAGE > MAX_LENGTH for p, _ in w.sizes):
        raise HblError("synthetic workload %s: parameters out of range (pages 1..%d, size at most %d "
                       "pages, read, seq and log 0..1, streams 1..65536)" % (show(spec), MAX_PAGES, MAX_LENGTH // PAGE))
    return w, "synth:" + body


class SyntheticTrace:
    """Iterable of REQUEST chunks for a synthetic workload; same seed, same trace."""

    name = "synthetic"

    def __init__(self, spec, chunk=1 << 16):
        self.w, self.source = parse_spec(spec)
        self.path = self.source
        self.chunk = chunk
        self.skipped, self.problems = 0, []

    def __iter__(self):
        w = self.w
        rng = np.random.default_rng(w.seed)
        n_pages = w.pages
        perm = rng.permutation(n_pages).astype(np.uint64)   # hot ranks scattered over the space
        if w.alpha > 0:
            cdf = np.cumsum(1.0 / np.arange(1, n_pages + 1, dtype=np.float64) ** w.alpha)
            cdf /= cdf[-1]
        else:
            cdf = None
        sizes = np.array([p for p, _ in w.sizes], dtype=np.uint64)
        weights = np.array([x for _, x in w.sizes], dtype=np.float64)
        weights /= weights.sum()
        stream_pos = rng.integers(0, n_pages, size=w.streams).astype(np.uint64)
        phase_len = w.requests // (w.phases + 1) if w.phases else 0
        shift = n_pages // (w.phases + 1) if w.phases else 0
        t_ns = 0.0
        done = 0
        log_byte = 0                                        # where the log's next record goes
        while done < w.requests:
            n = min(self.chunk, w.requests - done)
            out = record.empty(n)
            size = sizes[rng.choice(len(sizes), size=n, p=weights)] if len(sizes) > 1 else \
                np.full(n, sizes[0], dtype=np.uint64)
            # random part: zipf (or uniform) ranks mapped through the permutation
            if cdf is not None:
                rank = np.searchsorted(cdf, rng.random(n)).astype(np.uint64)
            else:
                rank = rng.integers(0, n_pages, size=n).astype(np.uint64)
            if w.phases:
                idx = np.arange(done, done + n, dtype=np.uint64)
                phase = np.minimum(idx // max(phase_len, 1), w.phases)
                rank = (rank + phase * shift) % n_pages
            page = perm[rank]
            # sequential part: requests that continue one of the streams
            if w.seq > 0:
                is_seq = rng.random(n) < w.seq
                sid = rng.integers(0, w.streams, size=n)
                for s in range(w.streams):
                    sel = np.flatnonzero(is_seq & (sid == s))
                    if not len(sel):
                        continue
                    ends = np.cumsum(size[sel]) + stream_pos[s]
                    page[sel] = (ends - size[sel]) % n_pages
                    stream_pos[s] = ends[-1] % n_pages
            page = np.minimum(page, n_pages - size)   # requests stay inside the footprint
            gaps = rng.exponential(1e9 / w.iops, size=n)
            times = t_ns + np.cumsum(gaps)
            t_ns = float(times[-1])
            out["time_ns"] = times.astype(np.uint64)
            out["offset"] = page * PAGE
            out["length"] = (size * PAGE).astype(np.uint32)
            is_read = rng.random(n) < w.read
            if w.burst and w.read < 1:   # a run of w.burst writes, then as many reads as keep the read share
                period = max(w.burst, round(w.burst / (1 - w.read)))
                is_read = np.arange(done, done + n) % period >= w.burst
            if w.log:
                log_byte = _append(out, rng, ~is_read & (rng.random(n) < w.log), size, log_byte, n_pages)
            out["op"] = np.where(is_read, record.READ, record.WRITE)
            done += n
            yield out


def _append(out, rng, app, size, log_byte, n_pages):
    """The requests marked in `app` become a log's appends from byte log_byte on: a record of 512
    bytes up to its request's size each, written where the last one ended, rounded out to the pages
    it touches (the log wraps at the footprint's end).  Returns where the next record goes."""
    idx = np.flatnonzero(app)
    if not len(idx):
        return log_byte
    rec = rng.integers(512, size[idx].astype(np.int64) * PAGE + 1)
    start = log_byte + np.concatenate(([0], np.cumsum(rec)[:-1]))
    first = start // PAGE
    pages = (start + rec - 1) // PAGE - first + 1
    first %= n_pages
    first = np.minimum(first, n_pages - pages)
    out["offset"][idx] = (first * PAGE).astype(np.uint64)
    out["length"][idx] = (pages * PAGE).astype(np.uint32)
    return int(start[-1] + rec[-1])
