"""Member faults of a live device: a member that errs or is removed is marked failed,
persisted with the mapping, and left out of every migration from then on."""
import time

from hbl.live import layout
from hbl.live.copier import MemberError

PROBE_S = 2.0          # seconds between health reads of the members


class MemberFaults:
    """The Controller's member checks (a base class of it, over its state: meta, paths, log,
    copier, and failed, uevents, member_rdev, last_probe, which the controller sets up)."""

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

    def members_gone(self):
        """The members that can no longer be opened (removed under the device) marked failed and
        gone: every table from now on maps their extents to an error target.  True if one was new."""
        new = layout.gone_members(self.meta.members) - self.stack.gone
        for d in sorted(new):
            self.member_gone(d, "removed (its device can no longer be opened)")
        return bool(new)

    def member_gone(self, d, why):
        """Member d removed: failed, and gone from every table from now on."""
        self.stack.gone.add(d)
        self.member_failed(d, why)

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
                self.member_gone(d, "removed (kernel uevent)")
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
