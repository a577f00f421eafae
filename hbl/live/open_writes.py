"""Member writes of unknown completion: what the records of a bio-based member that is not a
dm device (md) cannot say."""
import numpy as np


class OpenWrites:
    """Writes to members whose records carry no completion time: a member that is bio-based
    but not a dm device (md; a dm device's bios are recorded at completion: hbl.capture.
    resolve_device) is only seen as bios queued, so a write recorded long before a copy may
    still be in flight while the copy reads, and land on the old slot after it.  All that is known is that it has completed
    once the view it went through was drained (suspended) or reloaded; every view through
    which a write recorded before the previous batch's prepare could have gone has been,
    since.  Kept per member slot as the span written (bounded by the slots, however long
    no batch runs), in two generations: since the last prepare, and the one before."""

    def __init__(self, meta, bio, own_pid):
        self.ext = meta.extent_bytes
        self.start = np.array([x["data_start"] for x in meta.members], np.int64)
        self.bio = np.asarray(bio, bool)          # per member: its records carry no completion time
        self.own = own_pid                        # the copier's writes complete before it returns
        self.cur, self.prev = {}, {}

    def add(self, dev, off, length, pid):
        if not self.bio.any() or not len(dev):
            return
        sel = self.bio[dev] & (pid != self.own)
        if not sel.any():
            return
        dev, off, end = dev[sel], off[sel], (off + length)[sel]
        for part in (off, end - 1):               # a write may span two slots: both get its span
            key = self._slot(dev, part)
            order = np.argsort(key, kind="stable")
            k, lo, hi = key[order], off[order], end[order]
            first = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
            lo, hi = np.minimum.reduceat(lo, first), np.maximum.reduceat(hi, first)
            for kk, a, z in zip(k[first].tolist(), lo.tolist(), hi.tolist()):
                self._widen(kk, a, z)

    def _slot(self, dev, off):
        """The key of the member slot holding byte `off` of member `dev` (arrays or numbers)."""
        return dev * (1 << 40) + (off - self.start[dev]) // self.ext

    def _widen(self, key, a, z):
        """The current generation's span of slot `key` grown to cover [a, z)."""
        was = self.cur.get(key)
        self.cur[key] = (min(a, was[0]), max(z, was[1])) if was else (a, z)

    def rotate(self):
        """At a batch's prepare: what was recorded before the previous one has completed."""
        self.prev, self.cur = self.cur, {}

    def undrained(self):
        """A batch given up before its drain: the live view was not drained, nothing is known
        to have completed since the previous rotate."""
        for k, (a, z) in self.prev.items():
            self._widen(k, a, z)
        self.prev = {}

    def rows(self, wdev, wlo):
        """[member, offset, length] of the open writes to the slots starting at (wdev, wlo)."""
        out = []
        for d, lo in zip(wdev.tolist(), wlo.tolist()):
            key = int(self._slot(d, lo))
            for gen in (self.cur, self.prev):
                if key in gen:
                    a, z = gen[key]
                    out.append((d, a, z - a))
        return np.array(out, np.int64).reshape(-1, 3)

