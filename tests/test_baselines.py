"""The cache baselines (arc, lirs, s3fifo, wtinylfu, and lru as a check of this harness) against
libCacheSim's same algorithms (its Python bindings, `libcachesim`) on the same real traces: the
bundled MSR slices and application slices.  The hit ratios agree within 1 percentage point
(W-TinyLFU: 1.5, see below).

What is compared, the same quantity on both sides:
- The cache: the fast device of HSS perf, whose capacity in pages is what `hbl simulate` sets
  (10% of the trace's footprint); libCacheSim gets a cache of that many objects and every page as
  an object of size 1, so that it counts in pages as the papers do (with 4096-byte objects, its
  ARC would adapt p by bytes).
- The accesses: every read or write request split into its 4 KiB pages, in order, the sequence
  our policies feed their model; libCacheSim's cache.get() is called on each.
- A hit: a page found in the cache when it is accessed.  On libCacheSim's side, get() returns
  True; on ours, the page is on the fast device when its request is served (the simulator's
  fast_read_hits over read_page_accesses, read_hit_ratio).
Two modes:
- cache-only: each page access is a request of its own, a read, so every access of the trace
  (reads and writes alike) is looked up and counted; the write-only MSR slices count too.
- as run: the trace as it is, reads and writes; a write's page that misses is placed on the fast
  device (the policy admits it), as libCacheSim inserts it, so writes shape both caches alike and
  only reads are counted.  A request's pages are served before the evictions its misses cause,
  so a page that an earlier page of the same request pushed out still hits here (for lru on hm_0:
  12.53% against 12.47%); slices with fewer than 1000 read pages (one hit of rsrch_1's 42 reads is
  2.4 points), or whose reads all miss (the apps slices' first reads), are left to the cache-only
  mode.
The background backlog is made unbounded so that no promotion is refused for a full queue
(a refused promotion is a page the cache would have, missing from the fast device).

W-TinyLFU's frequency sketch is not libCacheSim's (ctypes_core/policies/wtinylfu.c says how they
differ), and the sketch is noisy on slices this short: the hash seed of ours alone moves a
slice's read hit ratio by up to 2 points (apps:build-linux, 1.2-3.2% over 5 seeds).  So it gets
1.5 points; measured, the largest gap is 1.0 (hm_0, as run).  libCacheSim's W-TinyLFU caches
nothing below 100 pages (its window is 1% rounded down: mds_0, proj_0, rsrch_2, wdev_1), so
those are not compared.
"""
import numpy as np
import pytest

from hbl import record
from hbl.devices import load_hss
from hbl.sim import Simulator, footprint_pages
from hbl.trace import load

LIBCACHESIM = {"lru": "LRU", "arc": "ARC", "lirs": "LIRS", "s3fifo": "S3FIFO", "wtinylfu": "WTinyLFU"}
TOLERANCE = {"wtinylfu": 0.015}   # points of hit ratio, as a fraction; 0.01 for the others
CACHE_ONLY = ["bundled:" + n for n in ("hm_0", "hm_1", "mds_0", "proj_0", "rsrch_1", "rsrch_2", "wdev_1")] + \
    ["apps:fio-zipf", "apps:sysbench-mariadb", "apps:pgbench"]
AS_RUN = ["bundled:hm_0", "apps:fio-zipf", "apps:sysbench-mariadb"]   # the slices with 1000+ read pages that hit


def _pages(data):
    """The requests' pages in order, and for each whether its request is a read."""
    first = (data["offset"] // 4096).astype(np.int64)
    n = ((data["offset"] + data["length"] - 1) // 4096 - first + 1).astype(np.int64)
    pages = np.repeat(first, n) + np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    return pages, np.repeat(data["op"] == record.READ, n)


_TRACES = {}


def _trace(name, cache_only):
    """(requests to simulate, pages, whether each is counted) of a trace in a mode."""
    if (name, cache_only) not in _TRACES:
        data, _ = load(name)
        data = data[((data["op"] == record.READ) | (data["op"] == record.WRITE)) & (data["length"] > 0)]
        pages, counted = _pages(data)
        if cache_only:
            data = record.empty(len(pages))
            data["offset"], data["length"], data["op"] = pages * 4096, 4096, record.READ
            counted = np.ones(len(pages), dtype=bool)
        _TRACES[(name, cache_only)] = data, pages, counted
    return _TRACES[(name, cache_only)]


def _ours(policy, data):
    """Our read hit ratio on HSS perf, and the fast device's capacity in pages."""
    config = load_hss("perf")
    caps = config.capacity_pages(footprint_pages([data]), 4096)
    sim = Simulator(config, policy, caps, background_backlog=(1 << 32) - 1)
    sim.feed(data)
    sim.check()
    r = sim.result()
    assert r["moves_refused"] == 0
    return r["read_hit_ratio"], caps[0]


def _theirs(lcs, policy, pages, counted, capacity):
    cache = getattr(lcs, LIBCACHESIM[policy])(cache_size=capacity)
    req = lcs.Request()
    req.obj_size = 1
    hits = 0
    for page, count in zip(pages.tolist(), counted.tolist()):
        req.obj_id = page
        if cache.get(req) and count:
            hits += 1
    return hits / counted.sum()


def _compare(policy, name, cache_only):
    lcs = pytest.importorskip("libcachesim", reason="libcachesim is not installed (pip install libcachesim; "
                                                    "scripts/bootstrap.sh installs it): nothing to compare with")
    data, pages, counted = _trace(name, cache_only)
    ours, capacity = _ours(policy, data)
    if policy == "wtinylfu" and int(capacity * 0.01) == 0:
        pytest.skip("libCacheSim's W-TinyLFU has no window (and caches nothing) in %d pages" % capacity)
    theirs = _theirs(lcs, policy, pages, counted, capacity)
    assert abs(ours - theirs) <= TOLERANCE.get(policy, 0.01), \
        "%s on %s: hbl %.4f, libCacheSim %.4f (cache of %d pages)" % (policy, name, ours, theirs, capacity)
    return ours, theirs


@pytest.mark.parametrize("name", CACHE_ONLY)
@pytest.mark.parametrize("policy", list(LIBCACHESIM))
def test_cache_only_hit_ratio_agrees_with_libcachesim(policy, name):
    _compare(policy, name, cache_only=True)


@pytest.mark.parametrize("name", AS_RUN)
@pytest.mark.parametrize("policy", list(LIBCACHESIM))
def test_read_hit_ratio_as_run_agrees_with_libcachesim(policy, name):
    _compare(policy, name, cache_only=False)


def test_the_baselines_differ():
    """The comparison can tell the algorithms apart: on the cache-only fio-zipf slice each one's hit
    ratio is more than a point from lru's (so agreement within a point is not agreement with LRU)."""
    data, _, _ = _trace("apps:fio-zipf", cache_only=True)
    lru, _ = _ours("lru", data)
    for p in ("arc", "lirs", "s3fifo", "wtinylfu"):
        assert abs(_ours(p, data)[0] - lru) > 0.01, p
