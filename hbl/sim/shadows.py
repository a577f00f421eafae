"""Shadows shared between runs of harmonia-guard (hbl/sim/guard.py).

A guard runs every member alone on the whole trace and reads, after each window, its cumulative
latency and request count.  A member that does not learn (lru, arc, lirs, s3fifo, wtinylfu) makes the
same run whatever the seed: the simulator and these policies draw no random number.  So when several
runs of the guard share a trace, an HSS and options (`hbl compare`'s seeds), the first one to run such a
member stores its figures window by window here, and the others replay them (Replayed) instead of
simulating it again; a cell of such a policy run with its default parameters records its run for them
too (Recorder).  A store serves one invocation: `hbl compare` keeps one in its working directory for the
length of one comparison.  Its keys name the trace and the HSS as given, not by content, and not the code's
version: each window's digest refuses a store of another trace, but a directory kept across runs could
replay the figures of an HSS file edited since, or of another build.
"""
import hashlib
import json
import os
import tempfile
import types
import zlib

import numpy as np

from hbl.errors import HblError
from hbl.sim.registry import all_policy_names


def shareable(portfolio):
    """The members of a guard's portfolio whose alone runs a store may share between seeds: those that do
    not learn (the simulator and their policies draw no random number), never the first (it is the live
    path until a switch)."""
    learns = set(all_policy_names("learns"))
    return [m for m in portfolio[1:] if m not in learns]


def recorder(sim, params, directory, windows, run_key):
    """A Recorder that stores a cell's run for the guards of the same run_key (simulate()'s), when the cell
    is one a guard's member would be (a policy that does not learn, its default parameters), else None."""
    if not (directory and windows and run_key) or params or sim.policy in set(all_policy_names("learns")):
        return None
    store = ShadowStore(directory)
    return Recorder(sim, store, {int(w): store.key(run_key, sim.policy, w) for w in windows})


def window_digest(chunk, crc=0):
    """A checksum of a window's requests, record by record and field by field (not of the records'
    padding): a store of another trace of the same length (the same path rewritten, another file) is
    refused, not replayed.  crc: the digest of the requests before these in the same window (a window fed
    in pieces, as a Recorder feeds it).  A whole window's is kept: a guard feeds one window to every member
    (about 0.3 ms a window of 10,000)."""
    if crc == 0 and chunk is _last[0]:
        return _last[1]
    packed = np.empty(len(chunk), dtype=[(n, chunk.dtype[n]) for n in chunk.dtype.names])
    for n in chunk.dtype.names:
        packed[n] = chunk[n]
    out = zlib.crc32(packed.tobytes(), crc)
    if crc == 0:
        _last[:] = [chunk, out]
    return out


_last = [None, 0]   # (the last window digested, its digest)


class Replayed:
    """A member alone, replayed from its stored figures: what a guard reads of an alone simulator
    (stats().latency_sum_ns and .requests after each window, wall, check()), without simulating it.
    cum: (latency_sum_ns, requests, fed, digest) after each window, fed the requests fed so far (requests leaves
    out those of no page, which the simulator skips), digest the window's window_digest.  Each feed() is one
    window; its length and its digest must be the stored ones (else the store is of another trace)."""

    replayed = True

    def __init__(self, policy, cum, wall):
        self.policy, self.cum, self.wall, self.fed = policy, cum, wall, 0

    def feed(self, chunk):
        if self.fed >= len(self.cum):
            raise HblError("shared shadow of %s: fed more windows than were stored (%d)" % (self.policy, len(self.cum)))
        before = self.cum[self.fed - 1][2] if self.fed else 0
        if self.cum[self.fed][2] - before != len(chunk):
            raise HblError("shared shadow of %s: window %d has %d requests, %d were stored" % (
                self.policy, self.fed + 1, len(chunk), self.cum[self.fed][2] - before))
        if window_digest(chunk) != self.cum[self.fed][3]:
            raise HblError("shared shadow of %s: window %d is not the one stored (a store of another trace)" % (
                self.policy, self.fed + 1))
        self.fed += 1

    def stats(self):
        lat, n = self.cum[self.fed - 1][:2] if self.fed else (0.0, 0)
        return types.SimpleNamespace(latency_sum_ns=lat, requests=n)

    def check(self):
        """Nothing to check: the run it replays was checked where it ran, if asked."""


class ShadowStore:
    """Members' figures window by window in a directory, one file per key (written whole, then renamed:
    two runs storing the same member at once leave one complete file)."""

    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)

    @staticmethod
    def key(run, member, window):
        """Member's run alone in windows of `window` requests, in the run that run (simulate()'s run_key:
        trace, HSS, capacities, options; json-able) names: the one key a guard and a Recorder both use."""
        ident = dict(run=run, member=member, window=int(window))
        return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:32]

    def path(self, key):
        return os.path.join(self.directory, key + ".json")

    def get(self, key, policy):
        """The member's Replayed, or None when no run has stored it yet."""
        try:
            with open(self.path(key)) as f:
                saved = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise HblError("%s: a shared shadow that cannot be read (%s)" % (self.path(key), exc)) from None
        if saved.get("policy") != policy:
            raise HblError("%s: a shared shadow of %s, not %s" % (self.path(key), saved.get("policy"), policy))
        return Replayed(policy, [tuple(x) for x in saved["cum"]], saved["wall"])

    def put(self, key, policy, cum, wall):
        """cum: Replayed's.  Best effort: a store that cannot be written (a full disk) leaves the run's
        figures alone; the other runs then simulate the member themselves."""
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump({"policy": policy, "cum": cum, "wall": wall}, f)
            os.replace(tmp, self.path(key))
        except OSError:
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)


class Recorder:
    """A member run as a cell of its own (`hbl compare`'s lru, arc, ...), recorded for a store as a
    guard would run it alone: the trace fed in pieces that end at every window boundary of each window
    size in `keys` ({window: key}), its figures taken there.  The simulator's results do not depend on
    how the trace is cut into pieces (tests/test_guard_shadows.py checks it)."""

    def __init__(self, sim, store, keys):
        self.sim, self.store, self.keys, self.fed = sim, store, dict(keys), 0
        self.cum = {w: [] for w in self.keys}
        self.crc = dict.fromkeys(self.keys, 0)      # each window size's digest of its current window so far

    def feed(self, chunk):
        while len(chunk):
            step = min(w - self.fed % w for w in self.keys)     # to the next boundary of any window size
            take = min(step, len(chunk))
            piece = chunk[:take]
            self.sim.feed(piece)
            for w in self.keys:
                self.crc[w] = window_digest(piece, self.crc[w])
            self.fed, chunk = self.fed + take, chunk[take:]
            if take == step:
                st = self.sim.stats()
                for w in self.keys:
                    if self.fed % w == 0:
                        self.cum[w].append((st.latency_sum_ns, st.requests, self.fed, self.crc[w]))
                        self.crc[w] = 0

    def finish(self):
        """The trace ended: each window size's last, partial window, then the runs stored."""
        st = self.sim.stats()
        for w, key in self.keys.items():
            if self.fed % w:
                self.cum[w].append((st.latency_sum_ns, st.requests, self.fed, self.crc[w]))
            self.store.put(key, self.sim.policy, self.cum[w], self.sim.wall)
