"""Shadows shared between runs of harmonia-guard (hbl/sim/guard.py).

A guard runs every member alone on the whole trace and reads, after each window, its cumulative
latency and request count.  A member that does not learn (lru, arc, lirs, s3fifo, wtinylfu) makes the
same run whatever the seed: the simulator and these policies draw no random number.  So when several
runs of the guard share a trace, an HSS and options (`hbl compare`'s seeds), the first one to run such a
member stores its figures window by window here, and the others replay them (Replayed) instead of
simulating it again.  A store lives as long as its directory: `hbl compare` keeps one in its working
directory for the length of one comparison.
"""
import hashlib
import json
import os
import tempfile
import types

from hbl.errors import HblError


class Replayed:
    """A member alone, replayed from its stored figures: what a guard reads of an alone simulator
    (stats().latency_sum_ns and .requests after each window, wall, check()), without simulating it.
    cum: (latency_sum_ns, requests, fed) after each window, fed the requests fed so far (requests leaves out
    those of no page, which the simulator skips).  Each feed() is one window; its length must be the
    stored one (else the store is of another trace)."""

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
    def key(**ident):
        """A key from everything the member's run depends on (json-able values)."""
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
        """cum: (latency_sum_ns, requests, fed) after each window (Replayed's)."""
        fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"policy": policy, "cum": cum, "wall": wall}, f)
        os.replace(tmp, self.path(key))
