"""Requests in flight on a live device: queued on the dm device, not yet seen completed
on a member."""
import numpy as np

IN_FLIGHT_S = 1.0      # a request to a moving extent this old with no completion seen is taken as completed


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
        ckey = self._key(dev, off)
        if not np.isin(ckey, self.key).any():
            return
        order = np.lexsort((self.t, self.key))          # by address, then oldest first
        k = self.key[order]
        first = np.r_[0, np.flatnonzero(k[1:] != k[:-1]) + 1]
        rank = np.arange(len(k)) - np.repeat(first, np.diff(np.r_[first, len(k)]))
        uk, cnt = np.unique(ckey, return_counts=True)
        i = np.minimum(np.searchsorted(uk, k), len(uk) - 1)
        left = np.ones(len(k), bool)
        left[order[rank < np.where(uk[i] == k, cnt[i], 0)]] = False
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

