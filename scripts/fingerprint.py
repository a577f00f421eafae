#!/usr/bin/env python3
"""A fingerprint of the simulator's figures, to show that a change meant to keep behaviour did.

Runs a fixed set of simulate() configurations and hashes every field of each result except the
run's own speed. Run it before a change (--out before.json) and after (--against before.json): it
prints each configuration whose figures moved, with the fields that moved, and exits 1 if any did.

  scripts/fingerprint.py --set all --out /tmp/before.json        # every policy, 5 traces, 2 HSS,
                                                                 # with and without live_batches
  scripts/fingerprint.py --set all --against /tmp/before.json    # after the change
  scripts/fingerprint.py --set admit ...                         # harmonia with read_admit 0, 5-9
  scripts/fingerprint.py --set live ...                          # the live decider (hbl up's C core)
  scripts/fingerprint.py --set live-queue ...                    # ... with moves waiting in a queue

The live set feeds every live policy's decider (hbl/live/decider.py, the C core in live mode) a fixed
stream of requests on a 2- and a 3-device shape, takes its moves two feeds in three (the third's are
asked back or replaced before the controller takes them) and puts a fifth of the taken ones back, as a
controller that refuses them would: the moves taken, in order, and the decider's counters are its figures.
The live-queue set is the live set with a controller that queues the moves it takes (hbl/live/moves.py
MoveQueue) and starts half of those queued at each take, the others waiting for the next: it tells the
decider which wait (Decider.waiting) and drops a move the decider reversed meanwhile.

Simulations are deterministic, so the figures do not depend on the host or its load.
"""
import argparse
import hashlib
import json
import sys

TIMING = ("requests_per_second",)
TRACES = ("bundled:hm_1", "bundled:mds_0", "bundled:proj_0", "bundled:wdev_1",
          "synth:mixed:requests=20000,seed=3")
READ_ONLY = "synth:zipf:read=1.0,requests=20000,pages=2000,seed=5"
POLICIES = ("fast-only", "slow-only", "oracle", "lru", "cde", "hps", "smq", "nhit", "seqcutoff", "arc", "lirs",
            "s3fifo", "wtinylfu", "sibyl", "harmonia", "harmonia-placement-only", "archivist", "rnn-hss",
            "harmonia-migration-only")
#: The live device's model: batches of moves, copies that compete with foreground I/O.
LIVE = dict(live_batches=True, copy_partial_reads=True, serve_after_copy=True, background_compete=True)


def configs(which, traces=None, policies=None):
    """(trace, hss, live, policy, params) of a named set."""
    out = []
    if which == "admit":
        for trace in (traces or TRACES + (READ_ONLY,)):
            for hss in ("perf", "cost"):
                for live in (False, True):
                    for k in (0, 5, 6, 7, 8, 9):
                        for pol in ("harmonia", "harmonia-migration-only"):
                            out.append((trace, hss, live, pol, {"read_admit": k}))
    elif which == "all":
        for trace in (traces or TRACES):
            for hss in ("perf", "cost"):
                for live in (False, True):
                    for pol in (policies or POLICIES):
                        out.append((trace, hss, live, pol, {}))
    elif which in ("live", "live-queue"):
        return [(which + ":" + "/".join(map(str, shape)), "-", True, pol, params)
                for shape, pol, params in live_configs(policies)]
    else:
        raise ValueError("unknown set %r (all, admit, live, live-queue)" % which)
    return out


#: The live set: shapes (extents per device), and the policies beyond POLICIES' live ones with parameters.
LIVE_SHAPES = ((16, 400), (8, 32, 400))
LIVE_PARAMS = tuple(("harmonia", {"read_admit": k}) for k in (1, 7, 8, 9)) + \
    tuple(("harmonia-migration-only", {"read_admit": k}) for k in (1, 7))


def live_configs(policies=None):
    """(shape, policy, params) of the live set: every policy that can run live, then LIVE_PARAMS."""
    from hbl.sim.registry import policy_names
    live = [p for p in POLICIES if p in policy_names("live")]
    pairs = [(p, {}) for p in (policies or live)] + [x for x in LIVE_PARAMS if not policies or x[0] in policies]
    return [(shape, pol, params) for shape in LIVE_SHAPES for pol, params in pairs]


def live_run(shape, pol, params, feeds=150, per_feed=32, queue=False):
    """One live configuration's figures: {moves: a hash of the moves taken in order, stats}; queue:
    the controller queues the moves it takes and starts half of them at each take."""
    import numpy as np
    from hbl import record
    from hbl.live.decider import Decider
    mib = 1 << 20
    n, slowest = shape[-1], len(shape) - 1
    d = Decider(pol, mib, list(shape), params=params or None, migrate_every=64)
    d.set_devices(np.arange(n), np.full(n, slowest))
    stream, refuse = np.random.default_rng(7), np.random.default_rng(8)
    at = np.full(n, slowest)           # where the controller has each extent
    queued, start = {}, np.random.default_rng(9)      # queue: the controller's moves not started
    # (a decider from before Decider.waiting is told nothing, as the controller told it nothing then)
    tell = getattr(d, "waiting", None)
    h = hashlib.sha256()
    for k in range(feeds):
        ex = stream.zipf(1.2, per_feed) % n
        r = record.empty(per_feed)
        r["offset"], r["length"], r["op"] = ex * mib, 4096, stream.integers(0, 2, per_feed)
        r["latency_ns"] = 100_000 + (ex % 7) * 10_000
        r["time_ns"] = k * 10**6 + np.arange(per_feed) * 1000
        d.feed(r)
        if k % 3 == 2:
            continue
        moves = list(d.take_moves().items())
        h.update(repr(moves).encode())
        if queue:
            for x, to in moves:          # as MoveQueue.ask: a move back to where the extent is dropped
                if to == at[x]:
                    queued.pop(x, None)
                else:
                    queued[x] = to
            moves = [(x, to) for x, to in queued.items() if start.random() < 0.5]
            for x, _ in moves:
                del queued[x]
        back = [(x, int(at[x])) for x, to in moves if to != at[x] and refuse.random() < 0.2]
        for x, to in moves:
            at[x] = to
        for x, was in back:
            at[x] = was
        if back:
            d.put_back([x for x, _ in back], [was for _, was in back])
        if queue and tell:
            tell(list(queued), at[list(queued)])
    d.check()
    stats = d.stats()
    stats.pop("agents", None)
    return {"moves": h.hexdigest(), "stats": stats}


def key(trace, hss, live, pol, params):
    return "%s|%s|live=%d|%s|%s" % (trace, hss, live, pol, json.dumps(params, sort_keys=True))


def digest(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def run(cfgs, progress=None):
    """{key: result without its timing fields} for each configuration; a configuration the
    policy refuses records its error, which is then part of the fingerprint."""
    from hbl.errors import HblError
    from hbl.sim import simulate
    out = {}
    for n, (trace, hss, live, pol, params) in enumerate(cfgs):
        try:
            if trace.startswith(("live:", "live-queue:")):
                which, shape = trace.split(":")
                r = live_run(tuple(int(x) for x in shape.split("/")), pol, params, queue=which == "live-queue")
            else:
                r = simulate(trace, hss=hss, policy=pol, fast_capacity="10%", params=params, seed=1,
                             **(LIVE if live else {}))
                r = {k: v for k, v in r.items() if k not in TIMING}
        except (HblError, ValueError) as e:
            r = {"error": str(e)}
        k = key(trace, hss, live, pol, params)
        out[k] = json.loads(json.dumps(r, default=str))
        if progress:
            progress(n + 1, len(cfgs), k, digest(out[k]))
    return out


def differences(before, after):
    """[(key, [field, ...])] of the configurations whose figures differ, and those in one only."""
    diffs = []
    for k in sorted(set(before) | set(after)):
        if k not in before or k not in after:
            diffs.append((k, ["(only %s)" % ("after" if k in after else "before")]))
            continue
        a, b = before[k], after[k]
        fields = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
        if fields:
            diffs.append((k, fields))
    return diffs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--set", default="all", choices=("all", "admit", "live", "live-queue"), help="which configurations (default all)")
    ap.add_argument("--trace", action="append", help="only these traces (repeatable)")
    ap.add_argument("--policy", action="append", help="only these policies (set all; repeatable)")
    ap.add_argument("--out", help="write the figures of every configuration to this JSON file")
    ap.add_argument("--against", help="compare with a file written by --out; exit 1 if any figure moved")
    ap.add_argument("--quiet", action="store_true", help="no line per configuration")
    a = ap.parse_args(argv)
    before = None
    if a.against:
        try:
            with open(a.against) as f:
                before = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit("fingerprint: %s: cannot read it (%s)" % (a.against, e))
    cfgs = configs(a.set, a.trace, a.policy)

    def progress(n, total, k, h):
        if not a.quiet:
            print("[%d/%d] %s %s" % (n, total, h[:12], k), file=sys.stderr, flush=True)
    after = run(cfgs, progress)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(after, f, sort_keys=True)
    print("fingerprint %s: %d configurations, sha256 %s" % (a.set, len(after), digest(after)))
    if before is None:
        return 0
    diffs = differences({k: v for k, v in before.items() if k in after or not (a.trace or a.policy)}, after)
    for k, fields in diffs:
        print("MOVED %s: %s" % (k, ", ".join(fields)))
    print("against %s: %s" % (a.against, "%d of %d moved" % (len(diffs), len(after)) if diffs else "identical"))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
