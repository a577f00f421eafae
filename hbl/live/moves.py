"""The migration queue of a live device: the moves the decider asked for and the
controller has not carried out yet, and the choice of each batch's moves among them.

A move is an extent and the device the policy wants it on, with the time of the newest
request the controller had read when the decision came out (0 for a remap the controller
asks itself: the write frontier's, or a test's).  The newest decisions go first; a move not
started STALE_S after its decision is given back to the decider, which decides again from
what it sees then.

The queue holds no more moves than the controller can carry out before they go stale: its
capacity is the moves per second its recent full batches carried (a batch's moves over the
time from its start to the next tick: the copies, the hold, the reload and the wait for the
next tick together) times STALE_S.  The oldest decisions past it are refused at once (the
simulator's word: a move refused, when the background queues are full), and the decider,
told the extent stays, decides again from what it sees then, instead of seconds later.
Before a full batch has been measured, the capacity is what max_batch moves every interval
would carry.
"""
import collections

STALE_S = 2.0          # a move not started this long after its decision is given back to the decider
CARRIED_KEPT = 16      # full batches the rate is measured over


class MoveQueue:
    """extent -> (device wanted, ns its decision was seen; 0: a remap asked by the controller)."""

    def __init__(self, count, stale_s=STALE_S):
        self.moves = {}
        self.count = count          # the controller's counters: asked_moves, stale_moves, refused_moves
        self.stale_s = stale_s
        self.carried_full = collections.deque(maxlen=CARRIED_KEPT)   # (moves, seconds) of full batches

    def __len__(self):
        return len(self.moves)

    def __contains__(self, extent):
        return extent in self.moves

    def ask(self, extent, want, seen_ns, at):
        """The decider wants `extent` (on device `at` now) on `want`; a second ask for an extent
        queued replaces the first (want == at: the decider has undone it)."""
        if want == at or want < 0:
            self.moves.pop(extent, None)
            return
        if extent not in self.moves:
            self.count["asked_moves"] += 1
        self.moves[extent] = (want, seen_ns)

    def carried(self, moves, seconds):
        """A full batch of `moves` (max_batch of them), `seconds` from its start to the next tick."""
        if seconds > 0:
            self.carried_full.append((moves, seconds))

    def rate(self):
        """Moves per second the recent full batches carried (None before one was measured)."""
        if not self.carried_full:
            return None
        return sum(n for n, _ in self.carried_full) / sum(s for _, s in self.carried_full)

    def capacity(self, max_batch, interval):
        """The most moves the queue holds: what the controller carries in STALE_S at the rate
        measured (before one is: max_batch every interval), never under one full batch."""
        r = self.rate()
        if r is None:
            r = max_batch / interval
        return max(max_batch, int(r * self.stale_s))

    def take(self, dev, free, failed, max_batch, interval, newest_ns, stay):
        """Up to max_batch moves, newest decisions first (remaps asked by the controller, which
        cost no copy, before all), each as (extent, from, to, slot on `to`, seen ns) with its
        slot popped from free[to].  On the way, moves already done or undone are dropped, and
        stale ones, those touching a failed member, those past the queue's capacity (the moves
        taken now and those left waiting together; a batch every `interval` s before a full one
        was measured) and evictions with no slot below are given back: stay(extents) tells the
        decider those stay where they are.  A promotion with no free slot waits (the fast device
        has spares)."""
        capacity = self.capacity(max_batch, interval)
        q = self.moves
        out, back = [], []
        held = 0
        # newest first: when the policy asks for more than the copies can carry, what it asked
        # for seconds ago is the least likely to still be right
        for e in sorted(q, key=lambda x: (q[x][1] != 0, -q[x][1])):
            want, t_seen = q[e]
            src = int(dev[e])
            if want == src or want < 0:
                del q[e]
                continue
            if t_seen and newest_ns - t_seen > self.stale_s * 1e9:
                # decided on what the workload did seconds ago: the decider, told the extent
                # stayed, decides again from what it sees now
                back.append(e)
                del q[e]
                self.count["stale_moves"] += 1
                continue
            if src in failed or want in failed:     # stays where it is; the decider is told so
                back.append(e)
                del q[e]
                continue
            held += 1
            if held > capacity:
                # more than can be carried out before it goes stale: refused now, the decider
                # decides again from what it sees next
                back.append(e)
                del q[e]
                self.count["refused_moves"] += 1
                continue
            if len(out) >= max_batch:
                continue
            if not free[want]:
                if want > src:
                    # No room below: an eviction that cannot happen now is undone in the
                    # decider (it will decide again).  A promotion waits: the fast device has
                    # spares.
                    back.append(e)
                    del q[e]
                continue
            out.append((e, src, want, free[want].pop(0), t_seen))
            del q[e]
        if back:
            stay(back)
        return out
