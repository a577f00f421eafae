"""One batch of moves on a live device: the migration protocol, one method per step.

The moving extents' data is copied while I/O flows, their I/O alone waits in the hold
while their last writes are copied again and the new mapping is persisted, and a crash
at any point leaves the old mapping or the new one in force, whose slots hold the data.
"""
import json
import time

import numpy as np

from dmsetup import Switch
from dmsetup.device import DmError
from hbl.live import layout
from hbl.live.settle import Settle
from hbl.live.stack import HOLD
from hbl.live.status import step_row

CRASH_POINTS = ("after_copy", "after_hold", "after_drain", "after_recopy", "after_meta", "after_release",
                "after_switch", "after_reload")
COPY_PASSES = 4        # a whole copy, then re-copies of what was written meanwhile, before the hold


def late_write_times(rows, hold_ns):
    """When the member writes copied again in the hold completed, for the log of a long hold:
    (member, ms from the hold at wall-clock hold_ns; negative: before it, after settle's last
    pass).  A write of unknown completion recorded before the batch (OpenWrites keeps only its
    span) has no time: None, not its 0 less the hold (which read as -1.8e12 ms)."""
    return [(int(d), round((int(t) - hold_ns) / 1e6, 1) if t else None) for d, t in rows[:, [0, 3]]]


class Batch(Settle):
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
    them (Controller.take); everything else in them (the decider, the counters) waits for
    the release, so that reading them costs the hold little.
    """

    passes = 0          # copy passes so far (copy's and settle's): each reads the records

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
        """In the hold: which moving extents the writes just read touched (their decider and
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
            c.observe_pending()        # the members' latencies during the copy
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

    def copy_pass(self, limit=True, wait_ms=0):
        """The old slots' writes read since the last pass (self.mark) copied again, after reading
        the records up to the pass's start (the first poll waiting wait_ms), I/O flowing; bytes
        copied.  limit: at the copy rate.  (Reading until the ring was found empty twice in a
        row, as after a suspend, went on as long as records kept arriving between polls; a
        write whose record is read later is copied by the next pass or the hold's recopy.)"""
        c, ext = self.c, self.m.extent_bytes
        self.passes += 1
        c.drain_until(time.monotonic_ns() + c.clock_offset, wait_ms=wait_ms)
        done = 0
        for mv in self.plan:
            if not mv["copy"] and c.meta.written[mv["extent"]]:
                mv["copy"] = True      # written since it was planned: its data must move too
                self.copy_whole(mv, limit=limit)
                done += ext
        end = self.rows()
        if end > self.mark:     # (most of settle's passes read no new write: no numpy work per move then)
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
        self.new_table = c.dm.prepare(layout.table(new, names, s.gone).validate())
        # the hold maps the moving extents, and the last batch's (a request routed to the hold
        # just before that batch's switch may reach it late); nothing else is routed to it
        hold_table = c.dm.prepare(layout.partial_table(new, np.concatenate([self.moving, c.last_moving]),
                                                       names, s.gone).validate())
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
        # where the slow holds' re-copies come from
        self.late_writes = late_write_times(rows[:8], self.t["hold"] + c.clock_offset)
        if len(rows):
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
            self.assemble(self.new)
        self.t["reload"] = time.monotonic_ns() - t0
        c.crash("after_reload")

    def assemble(self, meta):
        """Every view with `meta`'s mapping; a member found removed under the device on the way
        (a table that names it cannot load) is marked gone, and its extents map to errors."""
        try:
            self.c.stack.assemble(meta)
        except DmError:
            if not self.c.members_gone():
                raise
            self.c.stack.assemble(meta)

    def rollback(self, exc):
        """The old mapping persisted and in every view, every region on one view, nothing held."""
        c = self.c
        c.log("batch rolled back: %s" % exc)
        try:
            if self.committed:
                self.old.save(c.paths.meta)
        finally:
            self.assemble(self.old)
            self.give_back(None)
            c.count["rollbacks"] += 1
            c.release_held()
            c.fault(exc)

    def give_back(self, why):
        self.c.batch = None
        self.c.last_moving = self.moving      # (some may have been routed to the hold)
        self.c.give_back_moves(self.plan, why)

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
                        "passes": self.passes,
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
        c.step_rows.append(step_row(c.last_stall))
        c.recent_holds.append((self.moving, t["hold"] + c.clock_offset, t["released"] + c.clock_offset))
        if hold_ms > 200:
            c.log("long hold %.0f ms: %s" % (hold_ms, json.dumps(c.last_stall)))
        c.batch = None
        c.last_moving = self.moving
        c.release_held()
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
