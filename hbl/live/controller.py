"""The controller of a live device: capture -> engine -> copy jobs and dm remaps.

One loop, one thread.  It drains the eBPF ring buffer (logical requests on the
dm device, device requests with latency on the members), feeds the requests to
the engine (the simulator's policy code, in C) with the member's current
latency as the request's, and carries out the moves the engine asks for in
batches (Batch, below, one method per step), without ever suspending the
device: /dev/mapper/NAME is a dm-switch over views of the mapping (stack.py),
and only the moving extents' I/O waits, in the hold, while their last writes
are re-copied and the new mapping is persisted.  Extents never written carry
no data: moving them is a remap without a copy, checked again in the hold.
After a crash, nothing is known to be unwritten any more.
"""
import collections
import fcntl
import json
import os
import resource
import signal
import sys
import time

import numpy as np

from dmsetup import Switch, backend
from dmsetup.device import DmError
from hbl import record
from hbl.errors import HblError
from hbl.live import layout
from hbl.live.copier import Copier, MemberError, Throttle
from hbl.live.host import assemble, check_members, preflight
from hbl.live.in_flight import InFlight
from hbl.live.meta import Meta
from hbl.live.open_writes import OpenWrites
from hbl.live.paths import write_json_atomic
from hbl.live.stack import HOLD

CRASH_POINTS = ("after_copy", "after_hold", "after_drain", "after_recopy", "after_meta", "after_release",
                "after_switch", "after_reload")
PROBE_S = 2.0          # seconds between health reads of the members
COPY_PASSES = 4        # a whole copy, then re-copies of what was written meanwhile, before the hold
STALE_S = 2.0          # a move not started this long after its decision is given back to the engine
COPY_DEPTH = 2         # a batch's copies in flight at once, by default (each waits behind the HDD's queue)
# the longest the hold waits to begin for the moving extents' I/O in flight (I/O flowing): a
# settle that runs out of time holds with a request in flight (the drain waits for it) or a
# write read in its last pass (re-copied in the hold), an HDD request behind the workload's
# queue either way
SETTLE_S = 0.3
OWN_KEPT = 64          # the copier's I/Os kept waiting for their records, at most
TRACK_MAX = 1 << 16    # records read before they are sorted out for InFlight, at most
NICE = -10             # the controller's thread: ahead of the application's threads for the few ms a step takes


# ---- one batch of moves ----

class Batch:
    """One batch of moves, one method per step of the protocol.  I/O to extents
    not in the batch never waits: it is only sent from one live view to the other,
    identical for it, by a message.  I/O to the moving extents waits in the hold
    from hold() to release().

        prepare   the next view loaded with the new mapping, the hold with the moving extents'
                  part of it (and the last batch's), while neither receives I/O, the hold then
                  suspended (so that releasing it later is a
                  resume without a table swap); every extent not moving routed to the
                  next view, which maps it alike (first, so that its I/O in flight on
                  the live view has long completed when that view is drained)
        copy      old slots -> new slots, I/O flowing, then what was written meanwhile,
                  until a pass finds nothing (COPY_PASSES at most)
                                                                  crash point after_copy
        settle    I/O still flowing, until no request to a moving extent is in flight
                  (each request seen on the dm device without a completion seen on its
                  member) and a last pass finds nothing written (SETTLE_S at most): the
                  drain would otherwise wait for an HDD request queued behind the
                  application's, and the re-copy read one, with the extents held
        hold      the moving extents routed to the hold           crash point after_hold
        drain     the old view, now receiving nothing, suspended: every write issued
                  through it is complete                          crash point after_drain
        recopy    what was written to the old slots since the last pass (member write
                  records, in the order read: a record is read after its write completed;
                  sorted out as they are read during the whole
                  batch), and on members whose records carry no completion time every
                  write recorded since the previous batch's prepare (OpenWrites), fsync
                                                                  crash point after_recopy
        persist   the new mapping (atomic replace)                crash point after_meta
        release   the hold resumed: the held I/O goes to the new slots
                                                                  crash point after_release
        switch    the moving extents routed to the next view, which is now the live one
                                                                  crash point after_switch
        reload    the old view, drained, loaded with the new mapping and resumed: a bio the
                  switch had sent to it just before it was suspended waited there, and now
                  goes to the slots in force (resumed with the next batch's table instead,
                  it would land on a slot that batch is about to copy over)
                                                                  crash point after_reload
        finish    only then the old slots are free

    Before persist() the old mapping is in force, after it the new one, whose slots
    already hold the data; `hbl up` loads every view from the metadata either way.

    While the moving extents are held, the records read are only searched for writes to
    them (Controller.take); everything else in them (the engine, the counters) waits for
    the release, so that reading them costs the hold little.
    """

    def __init__(self, c, plan):
        self.c, self.plan = c, plan
        self.m = c.meta
        self.moving = np.array(sorted(mv["extent"] for mv in plan), np.int64)
        self.lost0 = c.cap.stats()["lost"]
        self.committed = False
        self.t = {}
        # the old slots whose writes may have to be copied again (member, first byte), and the
        # member writes to them in the order their records were read: [member, offset, length,
        # completed ns, 1 if the completion is not known (the time is then when it was queued)].
        # A record is read after its write completed: a pass that copies the rows read before
        # it began (self.mark) has every later write's data, and leaves the rows read since to
        # the next pass or the hold
        self.wdev = np.array([mv["src"] for mv in plan], np.int64)     # all: one not copied may be written
        self.wlo = np.array([self.off(mv["src"], mv["src_slot"]) for mv in plan], np.int64)
        self.mwrites = []
        self.mark = 0
        self.settle_inflight = 0
        self.looked = None               # records read by settle's last look, taken once the hold began
        self.written_in_hold = np.zeros(len(self.moving), bool)   # logical writes read in the hold

    def note_member_writes(self, dev, off, length, done_ns, unknown):
        """Keep the member writes that touch an old slot of this batch (few): the hold then
        only has to look at those read since the last check."""
        if not len(self.wdev) or not len(dev):
            return
        hit = self.to_old_slots(dev, off, length)
        if hit.any():
            self.mwrites.append(np.stack([dev[hit], off[hit], length[hit], done_ns[hit],
                                          unknown[hit].astype(np.int64)], 1))

    def to_old_slots(self, dev, off, length):
        """Which of the member writes (member, byte offset, length) touch a moving extent's old slot."""
        ext = self.m.extent_bytes
        return ((dev[:, None] == self.wdev) & (off[:, None] < self.wlo + ext) &
                ((off + length)[:, None] > self.wlo)).any(1)

    def note_logical_writes(self, first, last):
        """In the hold: which moving extents the writes just read touched (their engine and
        counter updates wait for the release)."""
        if len(first):
            self.written_in_hold |= ((first[:, None] <= self.moving) & (last[:, None] >= self.moving)).any(0)

    def writes(self):
        return np.concatenate(self.mwrites) if self.mwrites else np.zeros((0, 5), np.int64)

    def rows(self):
        """How many member write rows have been read."""
        return sum(len(w) for w in self.mwrites)

    def off(self, d, s):
        return layout.slot_offset(self.m, d, s)

    def whole(self, mv):
        """The copy job of move mv's whole extent: (src, src offset, dst, dst offset, length)."""
        return (mv["src"], self.off(mv["src"], mv["src_slot"]), mv["dst"], self.off(mv["dst"], mv["dst_slot"]),
                self.m.extent_bytes)

    def copy_whole(self, mv, limit=True):
        self.c.copier.copy(*self.whole(mv), limit=limit)

    def copy(self):
        c = self.c
        self.t_start = time.monotonic_ns()
        self.mark = self.rows()        # pass 2 copies the writes read from here on
        try:
            c.copier.copy_many([self.whole(mv) for mv in self.plan if mv["copy"]])
            c.pump(0)
            c.copier.throttle.feedback(c.foreground_latency())
            # more passes while I/O still flows, each over what was written during the one
            # before, until one finds nothing (or COPY_PASSES), so that as little as possible
            # is left to copy while the moving extents are held: one HDD read there costs
            # the hold tens of ms
            self.t["pass2"] = time.monotonic_ns()
            for _ in range(COPY_PASSES - 1):
                if not self.copy_pass():
                    break
            c.copier.flush([mv["dst"] for mv in self.plan if mv["copy"]])
            self.t["copied"] = time.monotonic_ns()
            c.crash("after_copy")
        except OSError as exc:
            self.copy_failed(exc)
            return False
        return True

    def copy_pass(self, limit=True):
        """The old slots' writes read since the last pass (self.mark) copied again, after reading
        every record there is, I/O flowing; bytes copied.  limit: at the copy rate."""
        c, ext = self.c, self.m.extent_bytes
        c.drain()
        done = 0
        for mv in self.plan:
            if not mv["copy"] and c.meta.written[mv["extent"]]:
                mv["copy"] = True      # written since it was planned: its data must move too
                self.copy_whole(mv, limit=limit)
                done += ext
        end = self.rows()
        done += c.recopy([mv for mv in self.plan if mv["copy"]], self.writes()[self.mark:end], limit=limit)
        self.mark = end
        return done

    def copy_failed(self, exc):
        c = self.c
        c.open_writes.undrained()
        try:
            c.stack.send(self.msg_back)        # as before prepare(): every region on the live view
        except DmError as dm_exc:
            self.rollback(dm_exc)
        else:
            self.give_back("copy failed: %s" % exc)
        c.fault(exc)

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
        try:
            while True:
                t_pass = time.monotonic_ns()
                t = t_pass + c.clock_offset
                done = self.copy_pass(limit=False)
                if done:
                    c.copier.flush([mv["dst"] for mv in self.plan if mv["copy"]])
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
                    c.pump(2)              # a completion, or 2 ms
        except OSError as exc:
            self.copy_failed(exc)
            return False
        return True

    def last_look(self):
        """Read the records there are; whether one is a request (on the dm device) to a moving
        extent, or a member write to a moving extent's old slot.  If one is, they are taken now
        (settle goes round again); if none is, they are kept, not observed, until the hold has begun (observing them, the engine's work, took
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
        lo, hi = t.get("look", t["hold"]) + c.clock_offset, t["held"] + c.clock_offset
        n = 0
        for b in c.unsorted:
            tt = b["time_ns"].astype(np.int64)
            n += int((self.to_moving(b) & (tt >= lo) & (tt < hi)).sum())
        return n

    def to_moving(self, b):
        """Which of the records `b` are requests on the dm device to a moving extent."""
        return (b["device"] == self.c.dm_dev) & np.isin(b["offset"].astype(np.int64) // self.m.extent_bytes,
                                                         self.moving)

    def prepare(self):
        """The new mapping, its metadata and its table; the next view loaded with it, the hold
        suspended (neither receives I/O yet, so neither waits on anything)."""
        c, s = self.c, self.c.stack
        c.batch = self
        self.t["start"] = time.monotonic_ns()
        now = time.time_ns()
        c.plan_ns.extend(now - mv["seen_ns"] for mv in self.plan if mv["seen_ns"])
        # writes of unknown completion to the old slots, recorded before this batch: any may
        # still be in flight (those recorded from now on are noted as they are read)
        c.open_writes.rotate()
        ow = c.open_writes.rows(self.wdev, self.wlo)
        if len(ow):
            self.mwrites.append(np.concatenate([ow, np.zeros((len(ow), 1), np.int64),
                                                np.ones((len(ow), 1), np.int64)], 1))
        new = self.m.copy()
        for mv in self.plan:
            new.dev[mv["extent"]] = mv["dst"]
            new.slot[mv["extent"]] = mv["dst_slot"]
        new.generation += 1
        new.counters = dict(c.count)
        new.validate(c.paths.meta)
        self.new, self.new_bytes = new, new.encode()
        names = layout.kernel_names(new.members)
        self.new_table = c.dm.prepare(layout.table(new, names).validate())
        # the hold maps the moving extents, and the last batch's (a request routed to the hold
        # just before that batch's switch may reach it late); nothing else is routed to it
        hold_table = c.dm.prepare(layout.partial_table(new, np.concatenate([self.moving, c.last_moving]),
                                                       names).validate())
        self.old = self.m.copy()
        others = np.ones(self.m.nextents, bool)
        others[self.moving] = False
        self.msg_hold = Switch.mappings(self.moving, HOLD)
        self.msg_switch = Switch.mappings(self.moving, s.next)
        msg_others = Switch.mappings(np.flatnonzero(others), s.next)
        self.msg_back = Switch.mappings(np.flatnonzero(others), s.live)
        self.t["built"] = time.monotonic_ns()
        try:
            for v, table in ((s.paths[s.next], self.new_table), (s.paths[HOLD], hold_table)):
                v.load(table)             # neither receives I/O: no one waits on the swap
                v.resume()
                self.t.setdefault("next_loaded", time.monotonic_ns())
            s.paths[HOLD].suspend(flush=True)
            # the extents not moving leave the live view now (the next one maps them alike),
            # so that draining the live view later waits only for the moving extents' I/O
            t0 = time.monotonic_ns()
            s.send(msg_others)
            self.t["route"] = time.monotonic_ns() - t0
            self.t["prepared"] = time.monotonic_ns()
        except DmError as exc:
            self.rollback(exc)
            return False
        return True

    def hold(self):
        c = self.c
        if not self.settle():
            return False
        self.t["hold"] = time.monotonic_ns()
        c.held = []
        try:
            c.stack.send(self.msg_hold)
        except DmError as exc:
            self.take_looked()
            self.rollback(exc)
            return False
        self.t["held"] = time.monotonic_ns()
        self.take_looked()               # (the records of settle's last look, observed after the release)
        c.crash("after_hold")
        return True

    def commit(self):
        try:
            self.drain()
            self.recopy()
            self.persist()
            self.release()
            self.switch()
        except Exception as exc:
            self.rollback(exc)
            return
        self.reload()
        self.finish()

    def drain(self):
        """The old live view, which nothing is routed to any more, suspended: every write
        issued through it (to the moving extents among others) has completed."""
        s = self.c.stack
        s.paths[s.live].suspend(flush=True)
        self.t["drained"] = time.monotonic_ns()
        self.c.crash("after_drain")

    def recopy(self):
        c, m, ext = self.c, self.m, self.m.extent_bytes
        # I/O to other extents flows on: read the records up to the drain (the ring is in
        # completion order); if that cannot be made sure of, copy the moving extents whole
        caught_up = c.drain_until(self.t["drained"] + c.clock_offset + 1_000_000)
        self.t["records"] = time.monotonic_ns()
        writes = self.writes()
        unsure = c.cap.stats()["lost"] != self.lost0 or not caught_up
        c.check_lost()
        done = 0
        late = dict(zip(self.moving.tolist(), self.written_in_hold.tolist()))
        for mv in self.plan:
            if not mv["copy"] and (m.written[mv["extent"]] or late[mv["extent"]] or unsure):
                mv["copy"] = True          # written since it was planned: its data must move too
                mv["late"] = True
            if mv.get("late") or unsure:
                self.copy_whole(mv, limit=False)
                done += ext
        # the writes read since the last pass, and every write whose completion is not known
        # (it may have landed after any copy so far)
        late_rows = np.zeros(len(writes), bool)
        late_rows[self.mark:] = True
        rows = writes[late_rows | (writes[:, 4] == 1)]
        # when the writes copied again completed, in ms from the hold (negative: before it, after
        # settle's last pass), with the member: where the slow holds' re-copies come from
        self.late_writes = [(int(d), round((int(t) - self.t["hold"] - c.clock_offset) / 1e6, 1))
                            for d, t in rows[:8, [0, 3]]]
        done += c.recopy([mv for mv in self.plan if mv["copy"] and not (mv.get("late") or unsure)], rows)
        if done:
            c.copier.flush([mv["dst"] for mv in self.plan if mv["copy"]])
        self.recopied = done
        self.t["recopied"] = time.monotonic_ns()
        c.crash("after_recopy")

    def persist(self):
        # (the file's written flags may lag: they count only after a clean shutdown)
        self.new.save(self.c.paths.meta, self.new_bytes)
        self.committed = True
        self.t["persisted"] = time.monotonic_ns()
        self.c.crash("after_meta")

    def release(self):
        self.c.stack.paths[HOLD].resume()          # with the new mapping, made live in prepare()
        self.t["released"] = time.monotonic_ns()
        self.c.crash("after_release")

    def switch(self):
        s = self.c.stack
        t0 = time.monotonic_ns()
        s.send(self.msg_switch)
        self.t["route2"] = time.monotonic_ns() - t0
        self.done_wall = time.time_ns()    # the remap is done: the moving extents' I/O goes to their new slots
        s.live = s.next
        self.c.crash("after_switch")

    def reload(self):
        """Every view but the hold maps the mapping in force again (the new one, persisted):
        the drained view's suspend may have caught a bio in transit from the switch."""
        c, s = self.c, self.c.stack
        t0 = time.monotonic_ns()
        old = s.paths[s.next]
        try:
            old.load(self.new_table)
            old.resume()
        except DmError as exc:            # the new mapping is persisted and served: make every view say so
            c.log("reloading %s failed (%s): every view reloaded" % (old.name, exc))
            s.assemble(self.new)
        self.t["reload"] = time.monotonic_ns() - t0
        c.crash("after_reload")

    def rollback(self, exc):
        """The old mapping persisted and in every view, every region on one view, nothing held."""
        c = self.c
        c.log("batch rolled back: %s" % exc)
        try:
            if self.committed:
                self.old.save(c.paths.meta)
        finally:
            c.stack.assemble(self.old)
            self.give_back(None)
            c.count["rollbacks"] += 1
            c._release_held()
            c.fault(exc)

    def give_back(self, why):
        self.c.batch = None
        self.c.last_moving = self.moving      # (some may have been routed to the hold)
        self.c._give_back(self.plan, why)

    def finish(self):
        c, m, ext = self.c, self.m, self.m.extent_bytes
        t = self.t
        window = self.window_requests()
        c.track()                         # with the old mapping, the held extents' requests left out
        hold_ms = (t["released"] - t["hold"]) / 1e6
        c.holds.append(hold_ms)
        c.stalls.extend([t["route"] / 1e6, t["route2"] / 1e6])
        c.last_stall = {"prepare": (t["prepared"] - t["start"]) / 1e6,
                        "prepare_build": (t["built"] - t["start"]) / 1e6,
                        "prepare_next": (t["next_loaded"] - t["built"]) / 1e6,
                        "prepare_hold": (t["prepared"] - t["next_loaded"] - t["route"]) / 1e6,
                        "copy": (t["pass2"] - self.t_start) / 1e6,
                        "copy_again": (t["copied"] - t["pass2"]) / 1e6,
                        "settle": (t["hold"] - t["settle"]) / 1e6, "settle_in_flight": self.settle_inflight,
                        "settle_timed_out": self.settle_timed_out,
                        "hold_ms": hold_ms, "drain": (t["drained"] - t["hold"]) / 1e6,
                        "records": (t["records"] - t["drained"]) / 1e6,
                        "recopy": (t["recopied"] - t["records"]) / 1e6,
                        "metadata": (t["persisted"] - t["recopied"]) / 1e6,
                        "release": (t["released"] - t["persisted"]) / 1e6, "route_ms": (t["route"] + t["route2"]) / 1e6,
                        "reload": t["reload"] / 1e6,
                        "moves": len(self.plan), "recopied_bytes": self.recopied,
                        "copied_whole_in_hold": sum(1 for mv in self.plan if mv.get("late")),
                        "late_writes": self.late_writes,
                        "window_requests": window, "window_ms": (t["held"] - t.get("look", t["hold"])) / 1e6,
                        "moving_from": np.bincount([mv["src"] for mv in self.plan], minlength=len(m.members)).tolist()}
        c.steps.append(c.last_stall)
        c.recent_holds.append((self.moving, t["hold"] + c.clock_offset, t["released"] + c.clock_offset))
        if hold_ms > 200:
            c.log("long hold %.0f ms: %s" % (hold_ms, json.dumps(c.last_stall)))
        c.batch = None
        c.last_moving = self.moving
        c._release_held()
        new = self.new
        new.written |= m.written          # writes observed since the new mapping was prepared
        c.meta = new
        c.batches += 1
        c.count["batches"] += 1
        c.count["recopied_bytes"] += self.recopied
        for mv in self.plan:              # the old slots are free only now
            c.free[mv["src"]].append(mv["src_slot"])
            if mv["copy"]:
                c.count["migrated_bytes"] += ext
            else:
                c.count["remaps_without_copy"] += 1
            c.count["promotions" if mv["dst"] < mv["src"] else "evictions"] += 1
            if mv["seen_ns"]:
                c.decision_ns.append(self.done_wall - mv["seen_ns"])
            c.decisions.append({"time": time.time(), "extent": mv["extent"], "from": mv["src"], "to": mv["dst"],
                                "copy": mv["copy"]})


def pct(a, q):
    """The q-quantile of the sorted list `a` (None if empty)."""
    return a[min(len(a) - 1, int(q * len(a)))] if a else None


def settle_summary(steps):
    """How many batches' settle ran out of time (SETTLE_S), and the hold p99 of those beside
    the others' (None where there is none)."""
    split = lambda to: sorted(b["hold_ms"] for b in steps if bool(b["settle_timed_out"]) == to)
    return {"settle_timeouts": sum(bool(b["settle_timed_out"]) for b in steps),
            "hold_ms_by_settle": {"timed_out_p99": pct(split(True), 0.99), "settled_p99": pct(split(False), 0.99)}}


# ---- the controller ----

class Controller:
    def __init__(self, paths, policy=None, params=None, agent=None, interval=0.25, max_batch=8, frontier=4,
                 copy_rate=None, copy_limit=None, copy_fixed=None, copy_depth=COPY_DEPTH, seed=1, log=None):
        from hbl.live.engine import Engine
        self.paths = paths
        self.log = log or (lambda msg: print(time.strftime("%H:%M:%S ") + msg, file=sys.stderr, flush=True))
        self.meta = Meta.load(paths.meta)
        m = self.meta
        self.policy = policy or m.policy
        self.params = params if params is not None else m.params
        self.unsure = not m.clean           # after a crash no extent is known to be unwritten
        if self.unsure:
            m.written[:] = 1
        m.clean = False
        m.policy, m.params = self.policy, self.params
        self.interval, self.max_batch, self.frontier = interval, max_batch, frontier
        self.copy_rate = copy_rate or int(os.environ.get("HBL_COPY_RATE", 64 << 20))
        self.copy_limit = copy_limit          # bytes/s the copies never exceed (None: the adaptive limit only)
        self.copy_fixed = copy_fixed          # bytes/s the copies always get (the adaptive limit off)
        self.copy_depth = copy_depth          # a batch's copies in flight at once
        self.crash_at = os.environ.get("HBL_CRASH_AT", "")
        self.crash_after = int(os.environ.get("HBL_CRASH_AFTER", "0"))
        if self.crash_at and self.crash_at not in CRASH_POINTS:
            raise HblError("HBL_CRASH_AT=%s: one of %s" % (self.crash_at, ", ".join(CRASH_POINTS)))
        try:        # for tests: extents moved to the next member in every batch, whatever the policy says
            self.flip = [int(x) for x in os.environ.get("HBL_TEST_FLIP", "").split(",") if x.strip()]
        except ValueError:
            raise HblError("HBL_TEST_FLIP=%s: extent numbers separated by commas"
                           % os.environ["HBL_TEST_FLIP"]) from None
        if any(not 0 <= e < m.nextents for e in self.flip):
            raise HblError("HBL_TEST_FLIP: extents are 0..%d" % (m.nextents - 1))
        self.engine = Engine(self.policy, m.extent_bytes, layout.capacities(m.members), params=self.params,
                             seed=seed)
        self.engine.set_devices(np.arange(m.nextents), m.dev)
        self.agent_source = None
        for src in (agent, paths.agents if os.path.exists(paths.agents) else None):
            if src and self.engine.agents():
                self.engine.load_agents(src)
                self.agent_source = src
                break
        self.free = layout.free_slots(m)
        self.failed = {i: x["failed"] for i, x in enumerate(m.members) if x.get("failed")}   # member -> why
        self.uevents = None
        self.last_probe = 0.0
        self.pending = {}
        self.stop = False
        self.batches = 0
        c = m.counters
        self.count = {k: int(c.get(k, 0)) for k in ("reads", "writes", "fast_hits", "promotions", "evictions",
                                                       "migrated_bytes", "remaps_without_copy", "recopied_bytes",
                                                       "batches", "rollbacks", "stale_moves")}
        # per routing message (two a batch: the extents not moving to the next view, then the
        # moving ones): ms it took, the most an I/O arriving meanwhile could wait (no suspend)
        self.stalls = collections.deque(maxlen=4000)
        self.holds = collections.deque(maxlen=2000)         # per batch: ms the moving extents' I/O waited
        self.steps = collections.deque(maxlen=2000)         # per batch: ms of each step (Batch.finish)
        self.held_waits = collections.deque(maxlen=20000)   # per request that arrived in a hold: ms it waited
        self.recent_holds = collections.deque(maxlen=16)    # (moving extents, hold, release), capture clock
        self.decision_ns = collections.deque(maxlen=2000)
        self.plan_ns = collections.deque(maxlen=2000)    # request seen -> its move's batch begun (ns)
        self.decisions = collections.deque(maxlen=40)
        self.timeline = collections.deque(maxlen=720)
        self.heat = np.zeros(m.nextents, np.float32)
        self.rw = np.zeros((m.nextents, 2), np.uint32)
        self.lat = np.zeros((len(m.members), 2))          # EWMA latency per member and op, ns
        self.lat_n = np.zeros((len(m.members), 2))
        self.reads = np.zeros((len(m.members), 2))        # member reads completed: [latency sum ns, count]
        self.idle_from = None                              # self.reads when an interval without copies began
        self.win = [0, 0]                                  # requests, fast hits in the current timeline window
        self.batch = None                                  # the Batch under way
        self.last_moving = np.zeros(0, np.int64)          # the extents the last batch moved
        self.newest_ts = 0
        self.t0 = time.time()
        self.cpu0, self.cpu0_main = self._cpu(), self._cpu_main()
        self.last_stall = None
        self.held = None                                   # records read while extents are held, observed after
        self.unsorted, self.unsorted_n = [], 0             # records read, not yet given to self.in_flight
        self.own_io = np.zeros((0, 3), np.int64)           # the copier's I/Os whose records are not read yet

    @staticmethod
    def _cpu(who=resource.RUSAGE_SELF):
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    def _cpu_main(self):
        """CPU seconds of the controller's own thread (this one; the agents train on another)."""
        return self._cpu(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))

    def foreground_latency(self):
        """The slowest member's read latency now (EWMA, ns), 0 before any was seen."""
        return float(self.lat[:, 0].max()) if self.lat_n.any() else 0.0

    def read_latency_since(self, reads):
        """The slowest member's mean read latency over the reads completed since `reads` (a
        copy of self.reads), 0 if none."""
        s, n = (self.reads - reads).T
        return float((s[n > 0] / n[n > 0]).max()) if (n > 0).any() else 0.0

    def tick(self, now):
        """One migration interval: the member checks, then a batch of what the policy plans,
        or none.  An interval that copies nothing gives the copy throttle its idle level; one
        is left without a batch when that level is IDLE_EVERY_S old."""
        thr = self.copier.throttle
        if self.idle_from is not None:           # the interval that just ended copied nothing
            thr.idle_latency(self.read_latency_since(self.idle_from), now)
            self.idle_from = None
        self.check_members()
        if thr.wants_idle(now):
            self.idle_from = self.reads.copy()
            return
        plan = self.plan()
        if plan:
            self.execute(plan)
        else:
            self.idle_from = self.reads.copy()

    def crash(self, point):
        if self.crash_at == point and self.batches >= self.crash_after:
            self.log("crash point %s reached (HBL_CRASH_AT): SIGKILL" % point)
            os.kill(os.getpid(), signal.SIGKILL)

    # ---- set-up ----

    def start(self):
        from hbl.capture import MODE_BIO, Capture
        m = self.meta
        self.paths.make()
        self.lockfd = os.open(self.paths.lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.lockfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HblError("a controller for %s is already running (pid %s)" % (
                m.name, os.pread(self.lockfd, 32, 0).decode().strip())) from None
        os.ftruncate(self.lockfd, 0)
        os.pwrite(self.lockfd, str(os.getpid()).encode(), 0)
        preflight()
        check_members(m)
        m.save(self.paths.meta)                    # clean = False from here on
        self.dm = backend()
        self.stack = assemble(m, self.dm)
        self.dev = self.stack.top
        # small batches: a poll allocates one, and the hold polls a few times for a few records
        self.cap = Capture([self.dev.path] + [x["path"] for x in m.members], fast=True, batch=2048)
        (self.dm_dev, _, _), *members = self.cap.devices     # (dev_t, mode, name), as the capture resolved them
        self.member_dev = {dev: i for i, (dev, _, _) in enumerate(members)}
        # bio-based members (dm, md) are seen as bios queued, with no completion time
        self.open_writes = OpenWrites(m, [mode == MODE_BIO for _, mode, _ in members], os.getpid())
        self.in_flight = InFlight(m, [mode == MODE_BIO for _, mode, _ in members])
        self.member_rdev = {os.stat(x["path"]).st_rdev: i for i, x in enumerate(m.members)}    # as uevents say
        f = self.copy_fixed
        self.copier = Copier([x["path"] for x in m.members],
                             Throttle(f, floor=f, ceiling=f) if f else Throttle(self.copy_rate, ceiling=self.copy_limit),
                             depth=self.copy_depth)
        self.watch_members()
        self.clock_offset = time.time_ns() - time.monotonic_ns()     # as the capture consumer converts times
        self.log("%s up: %d extents of %d KiB over %s; policy %s%s%s" % (
            m.name, m.nextents, m.extent_bytes >> 10, ", ".join(x["path"] for x in m.members), self.policy,
            ", agents from " + self.agent_source if self.agent_source else "",
            "; not shut down cleanly last time: every extent counts as written" if self.unsure else ""))

    # ---- observing ----

    def pump(self, timeout_ms=0):
        b = self.cap.poll(timeout_ms)
        if len(b):
            self.take(b)
        return len(b)

    def drain(self):
        """Everything the kernel has recorded so far (after a suspend: every completed I/O)."""
        empty = 0
        while empty < 2:
            empty = empty + 1 if self.pump(0) == 0 else 0

    def drain_until(self, wall_ns, max_polls=1000):
        """While I/O flows: read records until one completed after wall_ns (the ring is in
        completion order, so every earlier completion has then been read) or none is left."""
        for _ in range(max_polls):
            b = self.cap.poll(0)
            if not len(b):
                return True
            self.take(b)
            if int((b["time_ns"] + b["latency_ns"]).max()) >= wall_ns:
                return True
        return False

    def take(self, b):
        """Records read: observed, or while extents are held only searched for what the batch
        needs (writes to its extents) and kept to be observed after the release."""
        self.unsorted.append(b)             # for InFlight, sorted out when a batch needs it
        self.unsorted_n += len(b)
        if self.unsorted_n > TRACK_MAX:
            self.track()
        if self.held is None:
            self.observe(b)
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
                keep = np.ones(len(dev), bool)
                left = []
                for d, o, n in own.tolist():
                    i = np.flatnonzero(keep & (dev == d) & (off == o) & (length == n))
                    if len(i):
                        keep[i[0]] = False
                    else:
                        left.append((d, o, n))
                self.own_io = np.array(left[-OWN_KEPT:], np.int64).reshape(-1, 3)
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
        if not len(mem):
            return
        w, dev, off, length = self.member_writes(mem, idx)
        if not len(dev):
            return
        self.open_writes.add(dev, off, length, mem["pid"][w])
        if self.batch is not None:
            self.batch.note_member_writes(dev, off, length, (mem["time_ns"][w] + mem["latency_ns"][w]).astype(np.int64),
                                          self.open_writes.bio[dev])

    def observe(self, b):
        m = self.meta
        ext = m.extent_bytes
        isdm = b["device"] == self.dm_dev
        mem = b[~isdm]
        if len(mem):
            idx = self._member_index(mem)
            for d in range(len(m.members)):
                for op in (0, 1):
                    sel = (idx == d) & (mem["op"] == op) & (mem["latency_ns"] > 0)
                    if sel.any():
                        v = float(mem["latency_ns"][sel].mean())
                        n = self.lat_n[d, op]
                        self.lat[d, op] = v if n == 0 else 0.8 * self.lat[d, op] + 0.2 * v
                        self.lat_n[d, op] += sel.sum()
                        if op == 0:
                            self.reads[d] += (mem["latency_ns"][sel].sum(), sel.sum())
            self._note_member_writes(mem, idx)
        log = b[isdm]
        log = log[(log["op"] <= record.WRITE) & (log["length"] > 0)]
        if not len(log):
            return
        first = (log["offset"] // ext).astype(np.int64)
        last = ((log["offset"] + log["length"] - 1) // ext).astype(np.int64)
        ok = last < m.nextents
        log, first, last = log[ok], first[ok], last[ok]
        self._note_held(log, first, last)
        writes = log["op"] == record.WRITE
        was_unwritten = m.written[first] == 0
        m.written[first[writes]] = 1
        m.written[last[writes]] = 1
        wide = writes & (last - first > 1)    # requests over three or more extents: their middles too
        for f, l in zip(first[wide].tolist(), last[wide].tolist()):
            m.written[f + 1:l] = 1
        dev = m.dev[first]
        log = log.copy()
        log["latency_ns"] = self.lat[dev, log["op"].astype(np.int64)].astype(np.uint64)
        self.count["reads"] += int((~writes).sum())
        self.count["writes"] += int(writes.sum())
        hits = int((dev == 0).sum())
        self.count["fast_hits"] += hits
        self.win[0] += len(log)
        self.win[1] += hits
        np.add.at(self.heat, first, 1.0)
        np.add.at(self.rw, (first, writes.astype(np.int64)), 1)
        self.newest_ts = int(log["time_ns"].max())
        self.decide(log, last, writes & was_unwritten)

    def _note_held(self, log, first, last):
        """Requests to a batch's moving extents issued while they were held waited, in the
        hold, from their issue until the release: how long each waited."""
        t = log["time_ns"].astype(np.int64)
        for moving, t_hold, t_rel in self.recent_holds:
            sel = (t >= t_hold) & (t < t_rel)
            if not sel.any():
                continue
            lo, hi = first[sel], last[sel]
            i = np.searchsorted(moving, lo)
            touch = (i < len(moving)) & (moving[np.minimum(i, len(moving) - 1)] <= hi)
            self.held_waits.extend(((t_rel - t[sel][touch]) / 1e6).tolist())

    def decide(self, log, last, first_writes):
        m = self.meta
        self.engine.feed(log)
        # the write frontier: unwritten extents after a first write go where
        # the policy just put new data, with a remap and no copy
        if self.frontier:
            for e in np.unique(last[first_writes]).tolist():
                want = self.engine.device(e)
                for k in range(1, self.frontier + 1):
                    x = e + k
                    if x >= m.nextents or m.written[x]:
                        break
                    if m.dev[x] != want and x not in self.pending:
                        self.engine.set_devices([x], [want])
                        self.pending[x] = (want, 0)

    # ---- migrating ----

    def check_lost(self):
        """Records the kernel could not deliver may have been writes: nothing is unwritten any more."""
        if not self.unsure and self.cap.stats()["lost"]:
            self.unsure = True
            self.meta.written[:] = 1
            self.log("eBPF records were lost: every extent now counts as written (no more remaps without copy)")

    # ---- member faults ----

    def fault(self, exc):
        if isinstance(exc, MemberError):
            self.member_failed(exc.member, exc.strerror or str(exc))

    def member_failed(self, d, why):
        """Member d errs or is gone: no migration touches it from now on, the fact is
        persisted with the mapping, and the extents of the healthy members are served on."""
        if d in self.failed:
            return
        m = self.meta
        self.failed[d] = why
        m.members[d]["failed"] = why
        try:
            m.save(self.paths.meta)
        except OSError as exc:
            self.log("could not persist that member %d failed: %s" % (d, exc))
        self.log("member %d (%s) failed: %s; %s degraded: migrations touching it stopped, its %d extents return "
                 "errors, the others are served" % (d, m.members[d]["path"], why, m.name, int((m.dev == d).sum())))

    def watch_members(self):
        """Kernel uevents for the members (pyudev): a member removed is a failed member."""
        try:
            import pyudev
            mon = pyudev.Monitor.from_netlink(pyudev.Context(), source="kernel")
            mon.filter_by("block")
            mon.start()
        except Exception as exc:           # no libudev, no netlink: errors are still caught on I/O
            self.log("member uevents not watched (%s); I/O errors still mark a member failed" % exc)
            return
        self.uevents = mon

    def check_members(self):
        """Uevents, and a 4 KiB read of each healthy member every PROBE_S: a member that errs
        while nothing is being copied from or to it is caught too (the capture carries no
        I/O errors)."""
        while self.uevents is not None:
            ev = self.uevents.poll(timeout=0)
            if ev is None:
                break
            d = self.member_rdev.get(ev.device_number)
            if d is not None and ev.action == "remove":
                self.member_failed(d, "removed (kernel uevent)")
        now = time.monotonic()
        if now - self.last_probe < PROBE_S:
            return
        self.last_probe = now
        for d in range(len(self.meta.members)):
            if d not in self.failed:
                try:
                    self.copier.probe(d)
                except MemberError as exc:
                    self.member_failed(d, exc.strerror or str(exc))

    def plan(self):
        self.check_lost()
        moves = self.engine.take_moves()
        for e, want in moves.items():
            self.pending[e] = (want, self.newest_ts)
        m = self.meta
        for e in self.flip:                # (HBL_TEST_FLIP) planned first: no decision time
            want = (int(m.dev[e]) + 1) % len(m.members)
            self.engine.set_devices([e], [want])
            self.pending[e] = (want, 0)
        plan = []
        # newest decisions first (remaps of the write frontier, which cost no copy, before
        # all): when the policy asks for more than the copies can carry, what it asked for
        # seconds ago is the least likely to still be right
        for e in sorted(self.pending, key=lambda x: (self.pending[x][1] != 0, -self.pending[x][1])):
            want, t_seen = self.pending[e]
            src = int(m.dev[e])
            if want == src or want < 0:
                del self.pending[e]
                continue
            if t_seen and self.newest_ts - t_seen > STALE_S * 1e9:
                # decided on what the workload did seconds ago: the engine, told the extent
                # stayed, decides again from what it sees now
                self.engine.set_devices([e], [src])
                del self.pending[e]
                self.count["stale_moves"] += 1
                continue
            if src in self.failed or want in self.failed:     # stays where it is; the engine is told so
                self.engine.set_devices([e], [src])
                del self.pending[e]
                continue
            if len(plan) >= self.max_batch:
                continue
            if not self.free[want]:
                if want > src:
                    # No room below: an eviction that cannot happen now is
                    # undone in the engine (it will decide again).  A
                    # promotion waits: the fast device has spares.
                    self.engine.set_devices([e], [src])
                    del self.pending[e]
                continue
            plan.append({"extent": e, "src": src, "src_slot": int(m.slot[e]), "dst": want,
                         "dst_slot": self.free[want].pop(0), "copy": bool(m.written[e]) or self.unsure,
                         "seen_ns": t_seen})
            del self.pending[e]
        return plan

    def execute(self, plan):
        b = Batch(self, plan)
        if b.prepare() and b.copy() and b.hold():
            b.commit()

    def _release_held(self):
        held, self.held = self.held or [], None
        for b in held:
            self.observe(b)

    def recopy(self, plan, writes, limit=False):
        """Copy again, for each move, the span of its old slot that member `writes` ([member,
        offset, length, ...]) touched (one I/O per extent); bytes copied."""
        m, ext = self.meta, self.meta.extent_bytes
        done = 0
        for mv in plan:
            lo = layout.slot_offset(m, mv["src"], mv["src_slot"])
            hit = writes[(writes[:, 0] == mv["src"]) &
                         (writes[:, 1] < lo + ext) & (writes[:, 1] + writes[:, 2] > lo)]
            if not len(hit):
                continue
            a = max(int(hit[:, 1].min()), lo) // 4096 * 4096
            z = min(-(-int((hit[:, 1] + hit[:, 2]).max()) // 4096) * 4096, lo + ext)
            self.copier.copy(mv["src"], a, mv["dst"], layout.slot_offset(m, mv["dst"], mv["dst_slot"]) + (a - lo),
                             z - a, limit=limit)
            done += z - a
        return done

    def _give_back(self, plan, why):
        """Moves not done: slots back to the free lists, the engine told where the extents still are."""
        if why:
            self.log("moves not done: %s" % why)
        for mv in plan:
            self.free[mv["dst"]].insert(0, mv["dst_slot"])
        ex = [mv["extent"] for mv in plan]
        self.engine.set_devices(ex, self.meta.dev[ex])

    # ---- the loop ----

    def status(self):
        m = self.meta
        written = np.bincount(m.dev[m.written == 1], minlength=len(m.members))
        st = sorted(self.stalls)
        ho = sorted(self.holds)
        hw = sorted(self.held_waits)
        dec = sorted(self.decision_ns)
        pl = sorted(self.plan_ns)
        wall = time.time() - self.t0
        total = self.count["reads"] + self.count["writes"]
        hot = np.argsort(-self.heat)[:20]
        cs = self.cap.stats()
        out = layout.describe(m, self.free)
        for i, d in enumerate(out["devices"]):
            d.update(written_extents=int(written[i]), read_latency_us=self.lat[i, 0] / 1e3,
                     write_latency_us=self.lat[i, 1] / 1e3)
        return {
            **out, "state": "running", "pid": os.getpid(), "path": self.dev.path, "policy": self.policy,
            "uptime_s": wall,
            "reads": self.count["reads"], "writes": self.count["writes"],
            "fast_hit_ratio": self.count["fast_hits"] / total if total else 0.0,
            "promotions": self.count["promotions"], "evictions": self.count["evictions"],
            "remaps_without_copy": self.count["remaps_without_copy"],
            "migrated_bytes": self.count["migrated_bytes"], "recopied_bytes": self.count["recopied_bytes"],
            "batches": self.count["batches"], "rollbacks": self.count["rollbacks"],
            "stale_moves": self.count["stale_moves"],
            "pending_moves": len(self.pending),
            "copy_bandwidth_bytes_s": self.copier.bandwidth(), "copy_rate_limit_bytes_s": self.copier.throttle.rate,
            "copy_depth": self.copier.depth,
            "copy_idle_read_latency_us": self.copier.throttle.baseline and self.copier.throttle.baseline / 1e3,
            "stall_ms": {"last": st and self.stalls[-1], "p50": pct(st, 0.5), "p99": pct(st, 0.99),
                         "max": st[-1] if st else None, "count": len(st)},
            "hold_ms": {"last": ho and self.holds[-1], "p50": pct(ho, 0.5), "p99": pct(ho, 0.99),
                        "max": ho[-1] if ho else None, "count": len(ho), "last_breakdown": self.last_stall},
            "batch_steps_ms_p50": {k: float(np.median([b[k] for b in self.steps])) for k, v in self.steps[0].items()
                                   if not isinstance(v, (list, bool))}
            if self.steps else {},
            "slowest_holds": sorted(self.steps, key=lambda b: b["hold_ms"])[-5:],
            **settle_summary(self.steps),
            "held_io_ms": {"p50": pct(hw, 0.5), "p99": pct(hw, 0.99), "max": hw[-1] if hw else None,
                           "count": len(hw)},
            "decision_to_remap_ms": {"p50": pct(dec, 0.5) and pct(dec, 0.5) / 1e6,
                                     "p99": pct(dec, 0.99) and pct(dec, 0.99) / 1e6},
            # of which the wait for a batch to begin (the rest: the batch, up to the switch)
            "decision_to_batch_ms": {"p50": pct(pl, 0.5) and pct(pl, 0.5) / 1e6,
                                     "p99": pct(pl, 0.99) and pct(pl, 0.99) / 1e6},
            "controller_cpu": (self._cpu() - self.cpu0) / wall if wall > 0 else 0.0,
            # of which the controller's thread (the rest: the agents' training thread, the uevent watch)
            "controller_cpu_main": (self._cpu_main() - self.cpu0_main) / wall if wall > 0 else 0.0,
            "agents": self.engine.stats().get("agents", []),
            "ebpf": {"events": cs["events"], "lost": cs["lost"]},
            "unsure_after_crash": self.unsure,
            "degraded": {m.members[d]["path"]: why for d, why in sorted(self.failed.items())},
            "hot_extents": [{"extent": int(e), "device": int(m.dev[e]), "heat": float(self.heat[e]),
                             "reads": int(self.rw[e, 0]), "writes": int(self.rw[e, 1])}
                            for e in hot.tolist() if self.heat[e] > 0],
            "decisions": list(self.decisions)[-20:],
            "timeline": list(self.timeline),
        }

    def run(self):
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        last_mig = last_status = last_tl = last_save = time.monotonic()
        write_json_atomic(self.paths.status, self.status())
        self.engine.start_training()
        try:
            # this thread only (Linux: nice is per thread), after the training thread started:
            # a held extent waits on this thread, never on training
            os.setpriority(os.PRIO_PROCESS, 0, NICE)
        except OSError as exc:
            self.log("controller priority not raised (%s): holds may be longer under CPU contention" % exc.strerror)
        while not self.stop:
            self.pump(50)
            now = time.monotonic()
            if now - last_mig >= self.interval:
                last_mig = now
                self.tick(now)
            if now - last_tl >= 5.0:
                last_tl = now
                self.timeline.append({"t": round(time.time() - self.t0, 1), "requests": self.win[0],
                                      "fast_hit_ratio": self.win[1] / self.win[0] if self.win[0] else None})
                self.win = [0, 0]
                self.heat *= 0.5
            if now - last_status >= 1.0:
                last_status = now
                write_json_atomic(self.paths.status, self.status())
            if now - last_save >= 60 and self.engine.agents():
                last_save = now
                self.engine.save_agents(self.paths.agents)
        self.shutdown()

    def _on_signal(self, *_):
        self.stop = True

    def shutdown(self):
        """hbl down: agents saved, I/O flushed, written extents recorded exactly, device removed."""
        m = self.meta
        self.engine.stop_training()
        if self.engine.agents():
            self.engine.save_agents(self.paths.agents)
        self.dev.suspend(flush=True)
        self.drain()
        self.check_lost()
        m.clean = True          # the written extents are known exactly (or all counted as written)
        m.counters = dict(self.count)
        m.save(self.paths.meta)
        final = self.status()
        self.cap.close()
        self.copier.close()
        self.dev.resume()
        try:
            self.stack.remove()
        except DmError as exc:
            m.clean = False
            m.save(self.paths.meta)
            write_json_atomic(self.paths.status, dict(final, state="stopped-device-busy"))
            raise HblError("%s: the controller stopped but the device stays (%s); its mapping is saved" % (
                m.name, exc)) from None
        final["state"] = "stopped"
        write_json_atomic(self.paths.status, final)
        self.log("%s down: generation %d, %d promotions, %d evictions, %s migrated" % (
            m.name, m.generation, self.count["promotions"], self.count["evictions"],
            "%.1f MiB" % (self.count["migrated_bytes"] / 2**20)))
