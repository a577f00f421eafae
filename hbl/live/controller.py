"""The controller of a live device: capture -> decider -> copy jobs and dm remaps.

One loop, one thread.  It drains the eBPF ring buffer (logical requests on the
dm device, device requests with latency on the members), feeds the requests to
the decider (the simulator's policy code, in C) with the member's current
latency as the request's, and carries out the moves the decider asks for in
batches (Batch, in batch.py, one method per step), without ever suspending the
device: /dev/mapper/NAME is a dm-switch over views of the mapping (stack.py),
and only the moving extents' I/O waits, in the hold, while their last writes
are re-copied and the new mapping is persisted.  Extents never written carry
no data: moving them is a remap without a copy, checked again in the hold.
After a crash, nothing is known to be unwritten any more.
"""
import collections
import dataclasses
import fcntl
import os
import signal
import sys
import time

import numpy as np

from dmsetup import backend
from dmsetup.device import DmError
from hbl import record
from hbl.errors import HblError
from hbl.live import layout
from hbl.live.batch import CRASH_POINTS, Batch
from hbl.live.copier import Copier, Throttle
from hbl.live.faults import MemberFaults
from hbl.live.host import assemble, check_members, preflight
from hbl.live.in_flight import InFlight
from hbl.live.meta import Meta
from hbl.live.moves import MoveQueue
from hbl.live.observe import Observer
from hbl.live.open_writes import OpenWrites
from hbl.live.options import Options
from hbl.live.paths import write_json_atomic
from hbl.live.status import CpuLedger, StepRows, cpu_s, running_status, thread_cpu_s, thread_times

NICE = -10             # the controller's thread: ahead of the application's threads for the few ms a step takes
# the status file is written every STATUS_EVERY_S seconds, and at once when a reader asks for it
# (paths.ask_status: hbl status and hbl top do), whose request file is looked for every ASKED_EVERY_S:
# written every second, it took a fifth of the controller's thread (results/live/profile.txt)
STATUS_EVERY_S = 5.0
ASKED_EVERY_S = 0.1


# ---- the controller ----

class Controller(Observer, MemberFaults):
    """The controller of one live device: start() brings it up, run() loops until SIGTERM or
    SIGINT, then shuts it down.  Reading the records (Observer) and the member checks
    (MemberFaults) are its methods too, in their own files."""

    def __init__(self, paths, options=None, log=None):
        from hbl.live.decider import Decider
        self.paths = paths
        self.log = log or (lambda msg: print(time.strftime("%H:%M:%S ") + msg, file=sys.stderr, flush=True))
        self.meta = Meta.load(paths.meta)
        m = self.meta
        o = options or Options()
        self.policy = o.policy or m.policy
        self.params = o.params if o.params is not None else m.params
        self.unsure = not m.clean           # after a crash no extent is known to be unwritten
        if self.unsure:
            m.written[:] = 1
        m.clean = False
        m.policy, m.params = self.policy, self.params
        rate = o.copy_rate or int(os.environ.get("HBL_COPY_RATE", 64 << 20))
        self.options = dataclasses.replace(o, copy_rate=rate)
        self.crash_at = os.environ.get("HBL_CRASH_AT", "")
        self.crash_after = int(os.environ.get("HBL_CRASH_AFTER", "0"))
        self.crash_file = os.environ.get("HBL_CRASH_FILE", "")
        if self.crash_at and self.crash_at not in CRASH_POINTS:
            raise HblError("HBL_CRASH_AT=%s: one of %s" % (self.crash_at, ", ".join(CRASH_POINTS)))
        try:        # for tests: extents moved to the next member in every batch, whatever the policy says
            self.flip = [int(x) for x in os.environ.get("HBL_TEST_FLIP", "").split(",") if x.strip()]
        except ValueError:
            raise HblError("HBL_TEST_FLIP=%s: extent numbers separated by commas"
                           % os.environ["HBL_TEST_FLIP"]) from None
        if any(not 0 <= e < m.nextents for e in self.flip):
            raise HblError("HBL_TEST_FLIP: extents are 0..%d" % (m.nextents - 1))
        self.decider = Decider(self.policy, m.extent_bytes, layout.capacities(m.members), params=self.params,
                               seed=o.seed, agents=o.agent or (paths.agents if os.path.exists(paths.agents) else None))
        self.decider.set_devices(np.arange(m.nextents), m.dev)
        self.agent_source = self.decider.agents_from
        self.free = layout.free_slots(m)
        self.failed = {i: x["failed"] for i, x in enumerate(m.members) if x.get("failed")}   # member -> why
        self.uevents = None
        self.last_probe = 0.0
        self.stop = False
        self.batches = 0
        c = m.counters
        self.count = {k: int(c.get(k, 0)) for k in ("reads", "writes", "fast_hits", "read_pages", "fast_read_pages",
                                                       "write_pages", "fast_write_pages", "promotions", "evictions",
                                                       "migrated_bytes", "remaps_without_copy", "recopied_bytes",
                                                       "batches", "rollbacks", "asked_moves", "stale_moves",
                                                       "refused_moves")}
        self.queue = MoveQueue(self.count)                 # the moves asked for, not carried out yet
        self.full_batch = None                             # when the last tick's full batch began
        # per routing message (two a batch: the extents not moving to the next view, then the
        # moving ones): ms it took, the most an I/O arriving meanwhile could wait (no suspend)
        self.stalls = collections.deque(maxlen=4000)
        self.holds = collections.deque(maxlen=2000)         # per batch: ms the moving extents' I/O waited
        self.steps = collections.deque(maxlen=2000)         # per batch: ms of each step (Batch.finish)
        self.step_rows = StepRows(2000)                     # the same as status.step_row()s
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
        self.win = [0, 0, 0, 0]     # the current timeline window: requests, fast hits, page reads, fast page reads
        self.batch = None                                  # the Batch under way
        self.last_moving = np.zeros(0, np.int64)          # the extents the last batch moved
        self.newest_ts = 0
        self.t0 = time.time()
        self.cpu0, self.cpu0_main = cpu_s(), thread_cpu_s()
        self.times0, self.cpu_ledger = thread_times(), CpuLedger()
        self.last_stall = None
        self.held = None                                   # records read while extents are held, observed after
        self.unsorted, self.unsorted_n = [], 0             # records read, not yet given to self.in_flight
        self.own_io = np.zeros((0, 3), np.int64)           # the copier's I/Os whose records are not read yet

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
        t = thread_times()
        self.observe_pending()                   # the decider and the latencies up to date
        self.cpu_ledger.add("observe", t)
        if self.full_batch is not None:          # the last tick's full batch, start to this tick
            self.queue.carried(self.options.max_batch, now - self.full_batch)
            self.full_batch = None
        if self.idle_from is not None:           # the interval that just ended copied nothing
            thr.idle_latency(self.read_latency_since(self.idle_from), now)
            self.idle_from = None
        self.check_members()
        if thr.wants_idle(now):
            self.idle_from = self.reads.copy()
            return
        t = thread_times()
        plan = self.plan()
        self.cpu_ledger.add("plan", t)
        if plan:
            self.execute(plan)
            if len(plan) >= self.options.max_batch:      # a full batch: what the controller can carry
                self.full_batch = now
        else:
            self.idle_from = self.reads.copy()

    def crash(self, point):
        if self.crash_at == point and self.batches >= self.crash_after:
            self.log("crash point %s reached (HBL_CRASH_AT): SIGKILL" % point)
            os.kill(os.getpid(), signal.SIGKILL)
        if self.crash_file:
            self.crash_armed(point)

    def crash_armed(self, point):
        """HBL_CRASH_FILE (the soak): a crash armed while the controller runs, by a file holding
        "POINT kill" or "POINT stop"; at POINT the file is removed and the controller SIGKILLs
        itself, or SIGSTOPs itself so that the guest can be powered off with the controller
        frozen there."""
        try:
            with open(self.crash_file) as f:
                want = f.read().split()
        except OSError:
            return
        if len(want) != 2 or want[0] != point or want[1] not in ("kill", "stop"):
            return
        os.unlink(self.crash_file)
        self.log("crash point %s reached (HBL_CRASH_FILE): SIG%s" % (point, want[1].upper()))
        os.kill(os.getpid(), signal.SIGKILL if want[1] == "kill" else signal.SIGSTOP)

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
        # small batches: a poll allocates one, and the hold polls a few times for a few records.
        # The members' I/O with its completion: a member that is a dm device (LVM, dm-crypt) at
        # its bios' completion; one that is another bio-based device (md) is seen only as bios
        # queued, with no completion time (hbl.capture.resolve_device says why)
        # (HBL_TEST_QUEUED_MEMBERS=1, for tests and measures: every bio-based member at queue, as md's)
        paths = [x["path"] for x in m.members]
        self.cap = Capture([self.dev.path] + paths, fast=True, batch=2048,
                           completion=[] if os.environ.get("HBL_TEST_QUEUED_MEMBERS") else paths)
        (self.dm_dev, _, _), *members = self.cap.devices     # (dev_t, mode, name), as the capture resolved them
        self.member_dev = {dev: i for i, (dev, _, _) in enumerate(members)}
        self.open_writes = OpenWrites(m, [mode == MODE_BIO for _, mode, _ in members], os.getpid())
        self.in_flight = InFlight(m, [mode == MODE_BIO for _, mode, _ in members])
        self.member_rdev = {os.stat(x["path"]).st_rdev: i for i, x in enumerate(m.members)}    # as uevents say
        o, f = self.options, self.options.copy_fixed
        self.copier = Copier([x["path"] for x in m.members],
                             Throttle(f, floor=f, ceiling=f) if f else Throttle(o.copy_rate, ceiling=o.copy_limit),
                             depth=o.copy_depth)
        self.watch_members()
        self.clock_offset = time.time_ns() - time.monotonic_ns()     # as the capture consumer converts times
        self.log("%s up: %d extents of %d KiB over %s; policy %s%s%s" % (
            m.name, m.nextents, m.extent_bytes >> 10, ", ".join(x["path"] for x in m.members), self.policy,
            ", agents from " + self.agent_source if self.agent_source else "",
            "; not shut down cleanly last time: every extent counts as written" if self.unsure else ""))

    # ---- migrating ----

    def check_lost(self):
        """Records the kernel could not deliver may have been writes: nothing is unwritten any more."""
        if not self.unsure and self.cap.stats()["lost"]:
            self.unsure = True
            self.meta.written[:] = 1
            self.log("eBPF records were lost: every extent now counts as written (no more remaps without copy)")

    def plan(self):
        self.check_lost()
        m = self.meta
        for e, want in self.decider.take_moves().items():
            self.queue.ask(e, want, self.newest_ts, int(m.dev[e]))
        for e in self.flip:                # (HBL_TEST_FLIP) planned first: no decision time
            want = (int(m.dev[e]) + 1) % len(m.members)
            self.decider.set_devices([e], [want])
            self.queue.ask(e, want, 0, int(m.dev[e]))
        stay = lambda ex: self.decider.put_back(ex, m.dev[ex])
        o = self.options
        taken = self.queue.take(m.dev, self.free, self.failed, o.max_batch, o.interval, self.newest_ts, stay)
        # the moves left waiting: the policy moving one back (to where the extent is) undoes it in the
        # decider, as one it moved back before this queue took it, and this queue drops it (ask)
        waiting = np.fromiter(self.queue.moves, np.int64, len(self.queue.moves))
        self.decider.waiting(waiting, m.dev[waiting])
        return [{"extent": e, "src": src, "src_slot": int(m.slot[e]), "dst": want, "dst_slot": slot,
                 "copy": bool(m.written[e]) or self.unsure, "seen_ns": t_seen}
                for e, src, want, slot, t_seen in taken]

    def execute(self, plan):
        b = Batch(self, plan)
        t = thread_times()
        for name, step in (("prepare", b.prepare), ("copy", b.copy), ("settle_hold", b.hold), ("commit", b.commit)):
            done = step()
            t = self.cpu_ledger.add(name, t)
            if done is False:
                break

    def release_held(self):
        """The records read while extents were held noted, as one (a note's cost is mostly per call)."""
        b, self.held = record.joined(self.held or []), None
        if b is not None:
            self.note(b)

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

    def give_back_moves(self, plan, why):
        """Moves not done: slots back to the free lists, the decider told where the extents still are."""
        if why:
            self.log("moves not done: %s" % why)
        for mv in plan:
            self.free[mv["dst"]].insert(0, mv["dst_slot"])
        ex = [mv["extent"] for mv in plan]
        self.decider.put_back(ex, self.meta.dev[ex])

    # ---- the loop ----

    def run(self):
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        last_mig = last_status = last_asked = last_tl = last_save = time.monotonic()
        write_json_atomic(self.paths.status, running_status(self))
        self.decider.start_training(self.options.train_budget)
        try:
            # this thread only (Linux: nice is per thread), after the training thread started:
            # a held extent waits on this thread, never on training
            os.setpriority(os.PRIO_PROCESS, 0, NICE)
        except OSError as exc:
            self.log("controller priority not raised (%s): holds may be longer under CPU contention" % exc.strerror)
        while not self.stop:
            t = thread_times()
            self.pump(50)
            self.cpu_ledger.add("poll", t)
            now = time.monotonic()
            if now - last_mig >= self.options.interval:
                last_mig = now
                self.tick(now)
            if now - last_tl >= 5.0:
                last_tl = now
                self.observe_pending()
                self.timeline.append({"t": round(time.time() - self.t0, 1), "requests": self.win[0],
                                      "read_hit_ratio": self.win[3] / self.win[2] if self.win[2] else None,
                                      "fast_request_share": self.win[1] / self.win[0] if self.win[0] else None})
                self.win = [0, 0, 0, 0]
                self.heat *= 0.5
            asked = False
            if now - last_asked >= ASKED_EVERY_S:
                last_asked = now
                asked = os.path.exists(self.paths.status_asked)
            if asked or now - last_status >= STATUS_EVERY_S:
                last_status = now
                t = thread_times()
                self.observe_pending()
                write_json_atomic(self.paths.status, running_status(self))
                self.cpu_ledger.add("status", t)
                if asked:
                    try:
                        os.unlink(self.paths.status_asked)
                    except FileNotFoundError:
                        pass
            if now - last_save >= 60 and self.decider.agents():
                last_save = now
                self.decider.save_agents(self.paths.agents)
        self.shutdown()

    def _on_signal(self, *_):
        self.stop = True

    def shutdown(self):
        """hbl down: agents saved, I/O flushed, written extents recorded exactly, device removed."""
        m = self.meta
        self.decider.stop_training()
        if self.decider.agents():
            self.decider.save_agents(self.paths.agents)
        self.dev.suspend(flush=True)
        self.drain()
        self.observe_pending()
        self.check_lost()
        m.clean = True          # the written extents are known exactly (or all counted as written)
        m.counters = dict(self.count)
        m.save(self.paths.meta)
        final = running_status(self)
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
