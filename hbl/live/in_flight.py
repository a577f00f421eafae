"""Requests in flight on a live device: queued on the dm device, not yet seen completed
on a member."""
import numpy as np

from hbl.core import ffi, lib

IN_FLIGHT_S = 1.0      # a request to a moving extent this old with no completion seen is taken as completed


def match_rows(a, b, rank=None):
    """Each row of `b` ends one equal row of `a` (int64, one key a row or [n, w]), the
    earliest by `rank` (default: the order of `a`) not ended yet, `b`'s rows taking theirs in
    their order: (which rows of `a` are left, which rows of `b` ended one), bool arrays.  One
    call into the C core (hbl_match_rows), where numpy took some twenty."""
    a = np.ascontiguousarray(a, np.int64)
    b = np.ascontiguousarray(b, np.int64)
    w = a.shape[1] if a.ndim == 2 else 1
    if b.ndim != a.ndim or (b.ndim == 2 and b.shape[1] != w):
        raise ValueError("match_rows: rows of %s against rows of %s" % (a.shape, b.shape))
    if rank is not None:      # (kept in a name: a cast pointer does not keep a converted copy alive)
        rank = np.ascontiguousarray(rank, np.int64)
        if rank.shape != (len(a),):
            raise ValueError("match_rows: %d ranks for %d rows" % (rank.size, len(a)))
    left, hit = np.ones(len(a), np.uint8), np.zeros(len(b), np.uint8)
    if len(a) and len(b):
        r = ffi.NULL if rank is None else ffi.cast("int64_t *", ffi.from_buffer(rank))
        n = lib.hbl_match_rows(ffi.cast("int64_t *", ffi.from_buffer(a)), r, len(a),
                               ffi.cast("int64_t *", ffi.from_buffer(b)), len(b), w,
                               ffi.cast("uint8_t *", ffi.from_buffer(left)), ffi.cast("uint8_t *", ffi.from_buffer(hit)))
        if n < 0:
            raise MemoryError("hbl_match_rows: out of memory")
    return left.view(bool), hit.view(bool)


class InFlight:
    """The requests on the dm device whose completion has not been seen on a member: each
    request record (taken when it is queued, logical address) is kept under the member
    address the mapping in force sends its first byte to, until a member request
    starting there completes.  A merge or a lost record leaves one kept until it is
    IN_FLIGHT_S old; on members whose records carry no completion nothing is kept."""

    def __init__(self, meta, bio):
        self.ext = meta.extent_bytes
        self.start = np.array([x["data_start"] for x in meta.members], np.int64)
        self.bio = np.asarray(bio, bool)
        self.t = self.ext_of = self.key = np.zeros(0, np.int64)

    def _key(self, dev, off):
        return dev * (1 << 48) + off

    def issued(self, meta, t, off, first):
        """Requests queued at wall-clock times t, at logical offsets off, in extents first."""
        dev = meta.dev[first].astype(np.int64)
        keep = ~self.bio[dev]
        phys = self.start[dev] + meta.slot[first].astype(np.int64) * self.ext + off - first * self.ext
        self.t = np.concatenate([self.t, t[keep]])
        self.ext_of = np.concatenate([self.ext_of, first[keep]])
        self.key = np.concatenate([self.key, self._key(dev, phys)[keep]])
        if len(t):                  # bounded however long no batch counts them
            self._forget(int(t.max()) - int(IN_FLIGHT_S * 1e9))

    def _forget(self, before_ns):
        young = self.t >= before_ns
        self.t, self.ext_of, self.key = self.t[young], self.ext_of[young], self.key[young]

    def completed(self, dev, off):
        """Member requests completed (member index, first byte): each ends one request kept
        at its address, the oldest (a hot block may have a read and a write in flight at
        once: ending every request there would end one still in flight)."""
        if not len(self.key) or not len(dev):
            return
        left, _ = match_rows(self.key, self._key(dev, off), rank=self.t)
        if not left.all():
            self.t, self.ext_of, self.key = self.t[left], self.ext_of[left], self.key[left]

    def count(self, now_ns, moving, routed_ns):
        """How many requests in flight, of those queued in the IN_FLIGHT_S before now_ns, are
        to the extents `moving` (sorted), or to any extent and queued before routed_ns (the
        old view received them)."""
        self._forget(now_ns - int(IN_FLIGHT_S * 1e9))
        if not len(moving):
            return int((self.t < routed_ns).sum())
        i = np.minimum(np.searchsorted(moving, self.ext_of), len(moving) - 1)
        return int(((moving[i] == self.ext_of) | (self.t < routed_ns)).sum())

