"""The migration queue of a live device: the moves the decider asked for and the
controller has not carried out yet, and the choice of each batch's moves among them.

A move is an extent and the device the policy wants it on, with the time of the newest
request the controller had read when the decision came out (0 for a remap the controller
asks itself: the write frontier's, or a test's).  The newest decisions go first; a move not
started STALE_S after its decision is given back to the decider, which decides again from
what it sees then.
"""
STALE_S = 2.0          # a move not started this long after its decision is given back to the decider


class MoveQueue:
    """extent -> (device wanted, ns its decision was seen; 0: a remap asked by the controller)."""

    def __init__(self, count, stale_s=STALE_S):
        self.moves = {}
        self.count = count          # the controller's counters: asked_moves, stale_moves
        self.stale_s = stale_s

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

    def take(self, dev, free, failed, max_batch, newest_ns, stay):
        """Up to max_batch moves, newest decisions first (remaps asked by the controller, which
        cost no copy, before all), each as (extent, from, to, slot on `to`, seen ns) with its
        slot popped from free[to].  On the way, moves already done or undone are dropped, and
        stale ones, those touching a failed member, and evictions with no slot below are given
        back: stay(extents) tells the decider those stay where they are.  A promotion with no
        free slot waits (the fast device has spares)."""
        q = self.moves
        out, back = [], []
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
