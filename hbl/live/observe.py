"""What the controller reads from the capture: the records observed (the members'
latency, the written extents, the counters, the decider fed), or while extents are held
only searched for what the batch needs; and the requests in flight sorted out of them."""
import numpy as np

from hbl import record
from hbl.live.in_flight import match_rows
from hbl.live.records import HELD, NOTE, WRITES, Notes

OWN_KEPT = 64          # the copier's I/Os kept waiting for their records, at most
TRACK_MAX = 1 << 16    # records read before they are sorted out for InFlight, at most
OBSERVE_MAX = 1 << 14  # records noted before they are observed, at most (else at the next tick)


class Observer:
    """The Controller's reading of the records (a base class of it, over its state: meta, options, cap,
    decider, batch, held, in_flight, open_writes and the counters, which the controller sets up)."""

    def pump(self, timeout_ms=0):
        b = self.cap.poll(timeout_ms)
        if len(b):
            self.take(b)
        return len(b)

    def drain(self, wait_ms=0):
        """Everything the kernel has recorded so far (after a suspend: every completed I/O),
        the first poll waiting wait_ms.  The polls' records are taken in one go: a take's cost
        is mostly per call, and while I/O flows a drain polls many times for a few records."""
        parts, empty = [self.cap.poll(wait_ms)], 0
        while empty < 2:
            b = self.cap.poll(0)
            parts.append(b)
            empty = empty + 1 if len(b) == 0 else 0
        self.take_all(parts)

    def drain_until(self, wall_ns, max_polls=1000, wait_ms=0):
        """While I/O flows: read records until one completed after wall_ns (the ring is in
        completion order, so every earlier completion has then been read) or none is left
        (the first poll waiting wait_ms); taken in one go, as drain's."""
        parts, caught_up = [], False
        for i in range(max_polls):
            b = self.cap.poll(wait_ms if i == 0 else 0)
            if not len(b):
                caught_up = True
                break
            parts.append(b)
            if int((b["time_ns"] + b["latency_ns"]).max()) >= wall_ns:
                caught_up = True
                break
        self.take_all(parts)
        return caught_up

    def take_all(self, parts):
        """take() the records of several polls (in the order read) as one."""
        b = record.joined(parts)
        if b is not None:
            self.take(b)

    def notes(self):
        """The records noted, between the calls that use them (made at the first use: the device
        numbers are known once the capture is)."""
        n = getattr(self, "_notes", None)
        if n is None:
            n = self._notes = Notes(self.meta, self.dm_dev, self.member_dev)
        return n

    def take(self, b):
        """Records read: observed, or while extents are held only searched for what the batch
        needs (writes to its extents) and kept to be observed after the release."""
        self.unsorted.append(b)             # for InFlight, sorted out when a batch needs it
        self.unsorted_n += len(b)
        if self.unsorted_n > TRACK_MAX:
            self.track()
        if self.held is None:
            self.note(b)
            return
        self.held.append(b)
        notes = self.notes()
        want = self._want_member_writes()
        notes.note(b, HELD | (WRITES if want else 0), self.meta.written)
        if want:
            self._note_member_writes(notes)
        self.batch.note_logical_writes(*notes.logical_writes())

    def track(self):
        """The requests in flight (InFlight) as the records read since the last call say: a
        record on the dm device is queued there, one on a member completed.  Called when a
        batch needs them, before the mapping changes, and every TRACK_MAX records (a few
        calls a batch, not one a poll: the hold polls often, for few records).  Requests to
        the extents held are left out: they wait in the hold, and complete on their new slots."""
        if not self.unsorted:
            return
        (t, off, first), (dev, moff, length), others = self.notes().track_parts(self.unsorted)
        self.unsorted, self.unsorted_n = [], 0
        m = self.meta
        if len(t):
            ok = first < m.nextents
            if self.held is not None and self.batch is not None:
                moving = self.batch.moving
                i = np.minimum(np.searchsorted(moving, first), len(moving) - 1)
                ok &= ~((moving[i] == first) & (t >= self.batch.t["hold"] + self.clock_offset))
            self.in_flight.issued(m, t[ok], off[ok], first[ok])
        if others:
            # the copier's own I/Os end no request: a re-copy reads the very block a request in
            # flight may be writing again (one completion left out per own I/O, same address
            # and length; one whose record is not read yet waits for the next call, a while)
            own = np.concatenate([self.own_io, self.copier.own_io()])
            if len(own) and len(dev):
                # rows [member, offset, length]: every own I/O ends the first completion alike
                # not ended by one before it, as a loop over `own` in order would
                keep, matched = match_rows(np.stack([dev, moff, length], 1), own)
                self.own_io = own[~matched][-OWN_KEPT:]
                dev, moff = dev[keep], moff[keep]
            self.in_flight.completed(dev, moff)

    def _member_index(self, mem):
        idx = np.full(len(mem), -1)
        for dev_t, i in self.member_dev.items():
            idx[mem["device"] == dev_t] = i
        return idx

    def member_writes(self, mem, idx=None):
        """The writes among member records `mem`: (which rows, member index, byte offset,
        length), the last three int64 arrays of the writes alone."""
        idx = self._member_index(mem) if idx is None else idx
        w = (mem["op"] == record.WRITE) & (idx >= 0)
        return w, idx[w].astype(np.int64), mem["offset"][w].astype(np.int64), mem["length"][w].astype(np.int64)

    def _want_member_writes(self):
        """Whether member writes are noted: for a batch, or a member whose writes are kept open."""
        return self.batch is not None or self.open_writes.bio.any()

    def _note_member_writes(self, notes):
        """The member writes of the last note (WRITES) to the open writes and the batch."""
        dev, off, length, done, pid = notes.member_writes()
        if not len(dev):
            return
        self.open_writes.add(dev, off, length, pid)
        if self.batch is not None:
            self.batch.note_member_writes(dev, off, length, done, self.open_writes.bio[dev])

    def note(self, b):
        """Records read with no extent held: what a batch needs at once (the member writes, the
        extents written) taken now, the rest (latencies, counters, the decider) kept for
        observe_pending(), which does it for many polls in one go (per poll, its fixed cost was
        most of the controller's thread).  One C call over the records (Notes)."""
        notes = self.notes()
        want = self._want_member_writes()
        notes.note(b, NOTE | (WRITES if want else 0), self.meta.written)
        if want:
            self._note_member_writes(notes)
        if notes.s.records >= OBSERVE_MAX:
            self.observe_pending()

    def observe_pending(self):
        """The records noted since the last call observed: the members' latencies, the
        counters, the hottest extents, and the requests fed to the decider (with their member's
        latency now)."""
        notes = getattr(self, "_notes", None)         # (none before the first note)
        if notes is None or not notes.s.records:
            return
        m = self.meta
        if notes.s.members:
            nd = len(m.members)
            self._note_latencies(notes.lat_n.reshape(nd, 2), notes.lat_sum.reshape(nd, 2).astype(np.float64))
        log, first, last, writes, first_writes = notes.pending()
        if not len(log):
            notes.clear()
            return
        self._note_held(log, first, last)
        counts, newest = notes.observe(m.dev, self.lat, self.heat, self.rw)
        for k, v in counts.items():
            self.count[k] += v
        self.win[0] += len(log)
        self.win[1] += counts["fast_hits"]
        self.win[2] += counts["read_pages"]
        self.win[3] += counts["fast_read_pages"]
        self.newest_ts = newest
        self.decide(log, last, first_writes)
        notes.clear()

    def _note_latencies(self, n, total):
        """The members' latencies (EWMA per member and op, reads and writes) and their reads'
        sums, from the completions noted: `n` per member and op, `total` their latencies' sum
        (ns): each member and op's mean latency taken into its EWMA at 0.2 (its first mean as
        it is)."""
        seen = n > 0
        mean = total[seen] / n[seen]
        self.lat[seen] = np.where(self.lat_n[seen] == 0, mean, 0.8 * self.lat[seen] + 0.2 * mean)
        self.lat_n += n
        self.reads[:, 0] += total[:, 0]
        self.reads[:, 1] += n[:, 0]

    def _note_held(self, log, first, last):
        """Requests to a batch's moving extents issued while they were held waited, in the
        hold, from their issue until the release: how long each waited."""
        t = log["time_ns"].astype(np.int64)
        lo_t, hi_t = int(t.min()), int(t.max())
        for moving, t_hold, t_rel in self.recent_holds:
            if t_rel <= lo_t or t_hold > hi_t:      # no request of these in that hold (most holds)
                continue
            sel = (t >= t_hold) & (t < t_rel)
            if not sel.any():
                continue
            lo, hi = first[sel], last[sel]
            i = np.searchsorted(moving, lo)
            touch = (i < len(moving)) & (moving[np.minimum(i, len(moving) - 1)] <= hi)
            self.held_waits.extend(((t_rel - t[sel][touch]) / 1e6).tolist())

    def decide(self, log, last, first_writes):
        m = self.meta
        self.decider.feed(log)
        # the write frontier: unwritten extents after a first write go where
        # the policy just put new data, with a remap and no copy
        if self.options.frontier:
            for e in np.unique(last[first_writes]).tolist():
                want = self.decider.device(e)
                for k in range(1, self.options.frontier + 1):
                    x = e + k
                    if x >= m.nextents or m.written[x]:
                        break
                    if m.dev[x] != want and x not in self.queue:
                        self.decider.set_devices([x], [want])
                        self.queue.ask(x, want, 0, int(m.dev[x]))
