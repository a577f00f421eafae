"""The live controller's reading of its records as it was before ctypes_core/records.c (main
21dac63's hbl/live/observe.py, a numpy call per field): the reference tests/test_live_records.py
holds the C path to, record for record.  Not used by hbl."""
import numpy as np

from hbl import record

OWN_KEPT = 64          # the copier's I/Os kept waiting for their records, at most
TRACK_MAX = 1 << 16    # records read before they are sorted out for InFlight, at most
OBSERVE_MAX = 1 << 14  # records noted before they are observed, at most (else at the next tick)


def page_accesses(dev, first, last, writes):
    """The page accesses of requests over extents first..last (an extent is the live device's
    page), counted as the simulator counts them: a request touches each extent it spans, and
    a page read is a fast read hit if that extent is on device 0 (`dev`: each extent's device).
    Reads and writes apart: {read_pages, fast_read_pages, write_pages, fast_write_pages}."""
    out = {}
    for name, sel in (("read", ~writes), ("write", writes)):
        f, z = first[sel], last[sel]
        fast = int((dev[f] == 0).sum()) + int((dev[z[z > f]] == 0).sum())
        for a, b in zip(f[z - f > 1].tolist(), z[z - f > 1].tolist()):    # the middles of wide requests
            fast += int((dev[a + 1:b] == 0).sum())
        out[name + "_pages"] = int((z - f + 1).sum())
        out["fast_%s_pages" % name] = fast
    return out


def match_once(done, own):
    """Rows of `done` (completions) and `own` (the copier's I/Os), [member, offset, length]
    each: every own I/O ends the first completion alike not ended by one before it.  (which
    completions are left, which own I/Os found theirs), as a loop over `own` in order would;
    the few completions near an own I/O's address found first, in one pass (the packed key
    may let others through, never keep one out)."""
    key_done, key_own = ((x[:, 0] << 48) ^ x[:, 1] for x in (done, own))
    cand = np.flatnonzero(np.isin(key_done, key_own))
    alike = {}
    for i, row in zip(cand.tolist(), done[cand].tolist()):
        alike.setdefault(tuple(row), []).append(i)
    keep, matched = np.ones(len(done), bool), np.zeros(len(own), bool)
    for j, row in enumerate(own.tolist()):
        left = alike.get(tuple(row))
        if left:
            keep[left.pop(0)] = False
            matched[j] = True
    return keep, matched


class OldObserver:
    """The Controller's reading of the records, the old way (the same state, and self.unobserved,
    self.unobserved_n for the records noted)."""

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
        isdm = b["device"] == self.dm_dev
        self._note_member_writes(b[~isdm])
        log = b[isdm]
        log = log[(log["op"] == record.WRITE) & (log["length"] > 0)]
        ext = self.meta.extent_bytes
        self.batch.note_logical_writes((log["offset"] // ext).astype(np.int64),
                                       ((log["offset"] + log["length"] - 1) // ext).astype(np.int64))

    def track(self):
        """The requests in flight (InFlight) as the records read since the last call say: a
        record on the dm device is queued there, one on a member completed.  Called when a
        batch needs them, before the mapping changes, and every TRACK_MAX records (a few
        calls a batch, not one a poll: the hold polls often, for few records).  Requests to
        the extents held are left out: they wait in the hold, and complete on their new slots."""
        if not self.unsorted:
            return
        b = record.concat(self.unsorted)
        self.unsorted, self.unsorted_n = [], 0
        m, ext = self.meta, self.meta.extent_bytes
        isdm = b["device"] == self.dm_dev
        log = b[isdm]
        log = log[(log["op"] <= record.WRITE) & (log["length"] > 0)]
        if len(log):
            off = log["offset"].astype(np.int64)
            first = off // ext
            t = log["time_ns"].astype(np.int64)
            ok = first < m.nextents
            if self.held is not None and self.batch is not None:
                moving = self.batch.moving
                i = np.minimum(np.searchsorted(moving, first), len(moving) - 1)
                ok &= ~((moving[i] == first) & (t >= self.batch.t["hold"] + self.clock_offset))
            self.in_flight.issued(m, t[ok], off[ok], first[ok])
        mem = b[~isdm]
        if len(mem):
            idx = self._member_index(mem)
            done = (idx >= 0) & (mem["latency_ns"] > 0)
            dev, off = idx[done].astype(np.int64), mem["offset"][done].astype(np.int64)
            # the copier's own I/Os end no request: a re-copy reads the very block a request in
            # flight may be writing again (one completion left out per own I/O, same address
            # and length; one whose record is not read yet waits for the next call, a while)
            own = np.concatenate([self.own_io, self.copier.own_io()])
            if len(own) and len(dev):
                length = mem["length"][done].astype(np.int64)
                keep, matched = match_once(np.stack([dev, off, length], 1), own)
                self.own_io = own[~matched][-OWN_KEPT:]
                dev, off = dev[keep], off[keep]
            self.in_flight.completed(dev, off)

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

    def _note_member_writes(self, mem, idx=None):
        if not len(mem) or (self.batch is None and not self.open_writes.bio.any()):
            return            # (no batch to note them for, no member whose writes are kept open)
        w, dev, off, length = self.member_writes(mem, idx)
        if not len(dev):
            return
        self.open_writes.add(dev, off, length, mem["pid"][w])
        if self.batch is not None:
            self.batch.note_member_writes(dev, off, length, (mem["time_ns"][w] + mem["latency_ns"][w]).astype(np.int64),
                                          self.open_writes.bio[dev])

    def note(self, b):
        """Records read with no extent held: what a batch needs at once (the member writes, the
        extents written) taken now, the rest (latencies, counters, the decider) kept for
        observe_pending(), which does it for many polls in one go (per poll, its fixed cost was
        most of the controller's thread)."""
        m = self.meta
        ext = m.extent_bytes
        isdm = b["device"] == self.dm_dev
        mem = b[~isdm]
        if len(mem):
            self._note_member_writes(mem)
        log = b[isdm]
        log = log[(log["op"] <= record.WRITE) & (log["length"] > 0)]
        first = (log["offset"] // ext).astype(np.int64)
        last = ((log["offset"] + log["length"] - 1) // ext).astype(np.int64)
        ok = last < m.nextents
        log, first, last = log[ok], first[ok], last[ok]
        writes = log["op"] == record.WRITE
        first_writes = writes & (m.written[first] == 0)
        m.written[first[writes]] = 1
        m.written[last[writes]] = 1
        wide = writes & (last - first > 1)    # requests over three or more extents: their middles too
        for f, l in zip(first[wide].tolist(), last[wide].tolist()):
            m.written[f + 1:l] = 1
        self.unobserved.append((mem, log, first, last, writes, first_writes))
        self.unobserved_n += len(b)
        if self.unobserved_n >= OBSERVE_MAX:
            self.observe_pending()

    def observe_pending(self):
        """The records noted since the last call observed: the members' latencies, the
        counters, the hottest extents, and the requests fed to the decider (with their member's
        latency now)."""
        if not self.unobserved:
            return
        parts, self.unobserved, self.unobserved_n = self.unobserved, [], 0
        mem, log = (record.concat([p[i] for p in parts]) for i in (0, 1))
        first, last, writes, first_writes = (np.concatenate([p[i] for p in parts]) for i in (2, 3, 4, 5))
        m = self.meta
        if len(mem):
            self._note_latencies(mem)
        if not len(log):
            return
        self._note_held(log, first, last)
        dev = m.dev[first]
        log = log.copy()
        log["latency_ns"] = self.lat[dev, log["op"].astype(np.int64)].astype(np.uint64)
        self.count["reads"] += int((~writes).sum())
        self.count["writes"] += int(writes.sum())
        hits = int((dev == 0).sum())
        self.count["fast_hits"] += hits
        pages = page_accesses(m.dev, first, last, writes)
        for k, v in pages.items():
            self.count[k] += v
        self.win[0] += len(log)
        self.win[1] += hits
        self.win[2] += pages["read_pages"]
        self.win[3] += pages["fast_read_pages"]
        np.add.at(self.heat, first, 1.0)
        np.add.at(self.rw, (first, writes.astype(np.int64)), 1)
        self.newest_ts = int(log["time_ns"].max())
        self.decide(log, last, first_writes)

    def _note_latencies(self, mem):
        """The members' latencies (EWMA per member and op, reads and writes) and their reads'
        sums, from the member records `mem`: each member and op's mean latency over them taken
        into its EWMA at 0.2 (its first mean as it is), in a few numpy calls whatever the
        number of members (per member and op, it was 30)."""
        nd = len(self.meta.members)
        idx = self._member_index(mem)
        lat = mem["latency_ns"]
        sel = (idx >= 0) & (mem["op"] <= record.WRITE) & (lat > 0)
        key = idx[sel] * 2 + mem["op"][sel]
        n = np.bincount(key, minlength=2 * nd).reshape(nd, 2)
        total = np.bincount(key, weights=lat[sel].astype(np.float64), minlength=2 * nd).reshape(nd, 2)
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
