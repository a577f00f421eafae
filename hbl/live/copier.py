"""Copy jobs: move an extent's bytes between members with O_DIRECT.

The copy runs while I/O continues; the controller re-copies, while the moving
extents are held, whatever was written meanwhile.  An I/O error names its member.  Bandwidth is limited by a token bucket whose
rate backs off when the foreground latency rises (additive increase,
multiplicative decrease), so migrations yield to the application.
"""
import mmap
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

CHUNK = 1 << 20      # one I/O per 1 MiB extent: an HDD pays per I/O, not per byte


IDLE_EVERY_S = 5.0   # the idle level is measured again at least this often


class Throttle:
    """Token bucket in bytes/s; feedback() adjusts the rate from foreground latency, never
    above the ceiling (1 GiB/s unless given: `hbl up --copy-limit`), which also bounds the
    starting rate and the floor.  The level it compares with, the foreground latency with no
    copy running, is measured in intervals that copy nothing: those the policy plans nothing
    for, and one the controller leaves idle when the last is IDLE_EVERY_S old (a policy that
    always has a move to make would otherwise keep the level of its first seconds, and its
    copies at the floor)."""

    def __init__(self, rate=64 << 20, floor=4 << 20, ceiling=None):
        self.ceiling = float(ceiling or 1 << 30)
        self.rate, self.floor = min(float(rate), self.ceiling), min(float(floor), self.ceiling)
        self.tokens, self.t = 0.0, time.monotonic()
        self.baseline = None        # foreground latency with no copy running (EWMA, ns)
        self.idle_t = None          # when an interval without copies last ended

    def wants_idle(self, now):
        """Whether the next interval should copy nothing, to measure the idle level (never at
        a fixed rate)."""
        return self.floor < self.ceiling and (self.idle_t is None or now - self.idle_t >= IDLE_EVERY_S)

    def take(self, n):
        while True:
            now = time.monotonic()
            self.tokens = min(self.rate * 0.05, self.tokens + (now - self.t) * self.rate)
            self.t = now
            if self.tokens >= n or self.tokens >= self.rate * 0.05:
                self.tokens -= n
                return
            time.sleep(min(0.05, (n - self.tokens) / self.rate))

    def idle_latency(self, ns, now):
        """Foreground latency seen in an interval in which nothing was copied (0: no request
        completed in it), which ended at `now` (time.monotonic())."""
        self.idle_t = now
        if ns > 0:
            self.baseline = ns if self.baseline is None else 0.7 * self.baseline + 0.3 * ns

    def feedback(self, ns):
        """Foreground latency seen during a copy: back off above 1.5x the idle level."""
        if ns <= 0 or self.baseline is None:
            return
        if ns > 1.5 * self.baseline:
            self.rate = max(self.floor, self.rate * 0.7)
        else:
            self.rate = min(self.ceiling, self.rate + (4 << 20))


class MemberError(OSError):
    """An I/O error on one member: which one, and what the kernel said."""

    def __init__(self, member, path, exc):
        super().__init__(exc.errno, "%s: %s" % (path, exc.strerror or exc))
        self.member = member


class Copier:
    """O_DIRECT file descriptors on the members, an aligned buffer per copy that may run at
    once (`depth`: copy_many() keeps that many in flight)."""

    def __init__(self, paths, throttle=None, depth=1):
        self.paths = list(paths)
        self.fds = [os.open(p, os.O_RDWR | os.O_DIRECT) for p in paths]
        self.depth = max(1, int(depth))
        self.bufs = [mmap.mmap(-1, CHUNK) for _ in range(self.depth)]
        self.buf = self.bufs[0]
        self.lock = threading.Lock()           # the throttle's bucket, between lanes
        self.pool = ThreadPoolExecutor(self.depth - 1, thread_name_prefix="hbl-copy") if self.depth > 1 else None
        self.throttle = throttle or Throttle()
        self.bytes = 0
        self.seconds = 0.0
        self.dirty = set()         # members written since their last flush
        self.own = []              # (member, offset, length) of every I/O issued, until taken (own_io)

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        for b in self.bufs:
            b.close()

    def copy_many(self, jobs, limit=True):
        """Copy each (src, src_off, dst, dst_off, length) of `jobs`, `depth` at once: each copy
        on an HDD waits behind the application's queue, so one at a time a batch of them
        waits that long for each.  The first error is raised once all have stopped."""
        if self.pool is None or len(jobs) < 2:
            for j in jobs:
                self.copy(*j, limit=limit)
            return
        t = time.monotonic()
        lanes = [jobs[i::self.depth] for i in range(self.depth)]
        futs = [self.pool.submit(self._lane, lane, self.bufs[i], limit) for i, lane in enumerate(lanes) if i and lane]
        err = None
        try:
            self._lane(lanes[0], self.bufs[0], limit)
        except OSError as exc:
            err = exc
        for f in futs:
            try:
                f.result()
            except OSError as exc:
                err = err or exc
        if err is not None:
            raise err
        self.bytes += sum(j[4] for j in jobs)
        self.seconds += time.monotonic() - t

    def _lane(self, jobs, buf, limit):
        for j in jobs:
            self.copy(*j, limit=limit, buf=buf, account=False)

    def copy(self, src, src_off, dst, dst_off, length, limit=True, buf=None, account=True):
        """Copy length bytes (multiples of 4 KiB, aligned) from member src to member dst."""
        t = time.monotonic()
        done = 0
        with memoryview(buf or self.buf) as view:       # released on an error too (the buffer stays closable)
            while done < length:
                n = min(CHUNK, length - done)
                if limit:
                    with self.lock:
                        self.throttle.take(n)
                with view[:n] as part:
                    self.own.append((src, src_off + done, n))
                    got = self._io(os.preadv, src, part, src_off + done)
                    if got != n:
                        raise OSError("short read from %s at %d: %d of %d bytes"
                                      % (self.paths[src], src_off + done, got, n))
                    self.dirty.add(dst)
                    self.own.append((dst, dst_off + done, n))
                    put = self._io(os.pwritev, dst, part, dst_off + done)
                    if put != n:
                        raise OSError("short write to %s at %d: %d of %d bytes"
                                      % (self.paths[dst], dst_off + done, put, n))
                done += n
        if account:
            self.bytes += length
            self.seconds += time.monotonic() - t

    def flush(self, devs):
        """Make what was copied to members `devs` durable (device write caches included); a
        member not written since its last flush is left alone (an HDD's flush waits behind
        its queue: tens of ms under load)."""
        for d in sorted(set(devs) & self.dirty):
            try:
                os.fsync(self.fds[d])
            except OSError as exc:
                raise MemberError(d, self.paths[d], exc) from None
            self.dirty.discard(d)

    def probe(self, d):
        """Read member d's first 4 KiB (its superblock) past any cache: raises MemberError if it errs."""
        view = memoryview(self.buf)
        if len(self.own) > 4096:          # nothing took them (an idle device): the recent ones do
            del self.own[:-1024]
        self.own.append((d, 0, 4096))
        try:
            self._io(os.preadv, d, view[:4096], 0)
        finally:
            view.release()

    def _io(self, fn, d, part, off):
        try:
            return fn(self.fds[d], [part], off)
        except OSError as exc:
            raise MemberError(d, self.paths[d], exc) from None

    def own_io(self):
        """[member, offset, length] of the copier's own I/Os since the last call: the capture
        records them on the members like any other (the fast mode carries no pid)."""
        out, self.own = self.own, []
        return np.array(out, np.int64).reshape(-1, 3)

    def bandwidth(self):
        return self.bytes / self.seconds if self.seconds > 0 else 0.0
