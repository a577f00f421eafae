"""A batch's settle, before its hold: I/O flowing, wait until no request to a moving extent is
in flight and nothing is left to copy, so that the hold neither drains an HDD request nor
re-copies from the HDD; and the last look at the records just before the hold."""
import time

import numpy as np

from hbl import record

# the longest the hold waits to begin for the moving extents' I/O in flight (I/O flowing): a
# settle that runs out of time holds with a request in flight (the drain waits for it) or a
# write read in its last pass (re-copied in the hold), an HDD request behind the workload's
# queue either way
SETTLE_S = 0.3


class Settle:
    """The settle steps of a Batch (a base class of it, over its state: c, m, plan, moving,
    t, looked, settle_inflight, and its copy_pass and copy_failed)."""

    def settle(self):
        """Before the hold, I/O flowing: wait (SETTLE_S at most) until no request to a moving
        extent is in flight and a pass over what was written meanwhile finds nothing, so
        that the hold neither drains an HDD request nor re-copies from the HDD.  Its copies
        are not held to the copy rate: at 4 MiB/s an extent written since it was planned
        (1 MiB, copied whole) would take 250 ms, and the limit is checked between passes;
        they are what the hold would copy otherwise, unlimited too.  False if a copy failed
        (the batch is then given back)."""
        c = self.c
        t0 = time.monotonic_ns()
        self.t["settle"] = t0
        deadline = t0 + int(SETTLE_S * 1e9)
        self.settle_timed_out = False
        wait_ms = 0
        try:
            while True:
                t_pass = time.monotonic_ns()
                t = t_pass + c.clock_offset
                done = self.copy_pass(limit=False, wait_ms=wait_ms)
                wait_ms = n = 0
                if done:        # another pass follows anyway: the requests in flight are sorted out then
                    c.copier.flush([mv["dst"] for mv in self.plan if mv["copy"]])
                else:
                    c.track()
                    n = c.in_flight.count(t, self.moving, self.t["prepared"] + c.clock_offset)
                    self.settle_inflight = max(self.settle_inflight, n)
                if time.monotonic_ns() >= deadline:
                    self.t["look"] = t_pass      # (the records were last all read in this pass)
                    self.settle_timed_out = True
                    break
                if not done and not n:
                    # the last look, just before the hold: a request to a moving extent read
                    # since this pass began is in flight, or soon written: one more round
                    if not self.last_look():
                        break
                elif not done:
                    wait_ms = 2            # a completion, or 2 ms: the next pass's first poll waits
        except OSError as exc:
            self.copy_failed(exc)
            return False
        return True

    def last_look(self):
        """Read the records there are; whether one is a request (on the dm device) to a moving
        extent, or a member write to a moving extent's old slot.  If one is, they are taken now
        (settle goes round again); if none is, they are kept, not observed, until the hold has begun (observing them, the decider's work, took
        10-20 ms under TCG, and a request to a moving extent issued meanwhile reached the old
        view: the drain waited for it)."""
        c = self.c
        self.t["look"] = time.monotonic_ns()
        b = c.cap.poll(0)
        if not len(b):
            return False
        if self.to_moving(b).any() or self.member_writes_to_old_slots(b):
            c.take(b)
            return True
        self.looked = b
        return False

    def member_writes_to_old_slots(self, b):
        """Whether the records `b` hold a member write to a moving extent's old slot (its request
        on the dm device may have been read in an earlier pass: kept for the hold, the write
        would be copied again there, read back from the HDD behind its queue)."""
        _, dev, off, length = self.c.member_writes(b[b["device"] != self.c.dm_dev])
        return bool(len(dev) and self.to_old_slots(dev, off, length).any())

    def take_looked(self):
        if self.looked is not None:
            b, self.looked = self.looked, None
            self.c.take(b)

    def window_requests(self):
        """Requests to the moving extents queued between settle's last look (or the start of its
        last pass, when it ran out of time) and the hold's routing: the old view received them,
        so the drain waits for them (from the records read since settle last sorted them out;
        a diagnostic)."""
        c, t = self.c, self.t
        if not c.unsorted:
            return 0
        lo, hi = t.get("look", t["hold"]) + c.clock_offset, t["held"] + c.clock_offset
        b = record.concat(c.unsorted)
        c.unsorted = [b]                  # (one chunk, not one per poll, for the track() that follows)
        tt = b["time_ns"].astype(np.int64)
        return int((self.to_moving(b) & (tt >= lo) & (tt < hi)).sum())

    def to_moving(self, b):
        """Which of the records `b` are requests on the dm device to a moving extent."""
        return (b["device"] == self.c.dm_dev) & np.isin(b["offset"].astype(np.int64) // self.m.extent_bytes,
                                                         self.moving)
