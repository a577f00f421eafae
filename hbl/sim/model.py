"""The simulator's model: its default options, the options that model hbl's live device
(copies, batches, spares, the write frontier) as the live controller's defaults set them, the
oracle's variants, and how a run replays its trace (closed or open loop)."""
from hbl.errors import HblError

DEFAULTS = dict(page_size=4096, queue_depth=1, open_loop=False, speed=None, migrate_every=1000, migrate_max=64,
                timeline_every=10_000, background_backlog=256, background_rate_mb_s=0.0, background_idle_ms=0.0,
                copy_partial_reads=False, serve_after_copy=False,
                background_compete=False, live_batches=False, batch_overhead_ms=(0.0, 0.0))
# Background I/O (promotions, evictions, write-backs) is served in each device's idle time.
# backlog: pages queued per device at most (256 pages = 1 MiB, dm-cache's default
#   migration_threshold of 2048 sectors, the migration I/O it lets be outstanding); when
#   full, an eviction a request needs is done at once and the request waits for it.
# rate: MB/s per device, 0 = no cap beyond idle time (bcache's writeback rate and dm-cache's
#   migration_threshold are the caps of real systems; set one to emulate them).
# idle: how long a device must have had no foreground I/O (dm-cache waits for an idle origin).
# The options of LIVE_COPY model copies as hbl's live device makes them (scripts/simcheck.py turns
# them on; off by default, the model of every figure in results/ so far):
# copy_partial_reads: a page promoted after a read of part of it (a 4 KiB read of a 1 MiB extent)
#   is copied whole, the rest read from where it is; off, only the write is charged, as if the
#   read had brought the whole page.  Not the default: the oracle promotes reads as if free, and
#   with it on rnn-hss beats the oracle family on rocksdb (cost) by up to 12%.
# serve_after_copy: a moved page is served from the device it is copied from until its copy's
#   background I/Os complete (the live device remaps an extent after copying it, dm-cache too);
#   off, it is served from its new device as soon as the copy is queued.
# background_compete: background I/O takes its turn with foreground I/O, one at a time per device,
#   each issued when the one before it completed (hbl's live copier runs beside the application,
#   throttled but never waiting for idle time); off, it runs only in the device's idle time.
LIVE_COPY = ("copy_partial_reads", "serve_after_copy", "background_compete")
# live_batches: moves are carried as hbl's live controller carries them (ctypes_core/sim_batch.c):
#   queued, taken newest first (those asked since the last batch as new as each other, the first asked
#   first, as the controller stamps a tick's decisions) in batches of LIVE_BATCH moves at most, one
#   batch at a time and at most one every LIVE_INTERVAL_S, the oldest past the queue's capacity (what
#   recent full batches carried in LIVE_STALE_S) or LIVE_STALE_S old refused and undone in the policy,
#   a batch's pages served from where they were until its last copy completes; the background queues'
#   backlog does not apply to them.  Evictions that make room are moves like the others, and a move
#   needs a free slot on its device: the device's capacity and the live device's spare slots
#   (live_spares), less the pages whose data is there.  A write is served where its page's data is (a
#   page never placed: on the slowest device), its placement elsewhere a move asked of the queue, as
#   the live device writes where the extent is mapped.  A page never written moves with no copy, and
#   after a first write the next LIVE_FRONTIER pages never written are remapped where the policy put
#   it, first in a batch (the live write frontier).  The live controller's defaults
#   (hbl/live/options.py max_batch, interval, frontier; hbl/live/moves.py STALE_S; hbl/live/layout.py
#   default_spares; tests/test_model.py checks they agree).  Off: every move queued at once, the
#   newest refused when full.
LIVE_BATCH, LIVE_INTERVAL_S, LIVE_STALE_S = 8, 0.25, 2.0
LIVE_FRONTIER = 4              # the write frontier: pages never written after a first write, remapped with it
LIVE_SPARES = (100, 4, 64)     # a live member's spare slots: one per 100 slots, at least 4, at most 64


def live_spares(capacity):
    """The spare slots of a live member that holds `capacity` extents (its slots less its spares)."""
    per, least, most = LIVE_SPARES
    return next(sp for sp in range(least, most + 1) if min(most, max(least, (capacity + sp) // per)) == sp)


# the oracle's variants (ctypes_core/policies/oracle.c): writes absorbed on the fast device, or placed by
# next access as whole requests (a split one costs the disk a positioning anyway), with reads promoted by
# next access or never (promotions cost a disk that is the bottleneck their write-backs), and the
# second with its write-backs taken as runs (the disk writes a run for one positioning; evicted by next
# access alone they are scattered, and rnn-hss beat the three others on rocksdb, cost:
# results/quality/oracle.txt)
ORACLE_FAMILY = ((("writes", 1.0),), (("writes", 0.0), ("whole", 1.0)),
                 (("writes", 0.0), ("promote", 0.0), ("whole", 1.0)),
                 (("writes", 0.0), ("whole", 1.0), ("runs", 1.0)))


def replay_mode(options):
    """('closed', queue depth) or ('open', speed) from simulate's options: closed loop at
    queue depth 1 unless open_loop, a speed, or queue_depth 0 asks for trace time."""
    qd, speed, open_loop = options.get("queue_depth"), options.get("speed"), options.get("open_loop")
    if open_loop or speed is not None or qd == 0:
        if qd not in (None, 0):
            raise HblError("--queue-depth is for closed-loop replay; --speed and --open-loop for open loop: "
                           "choose one")
        return "open", float(speed if speed is not None else 1.0)
    return "closed", int(qd if qd is not None else DEFAULTS["queue_depth"])


def replay_label(replay):
    """'closed loop, queue depth 1' / 'open loop at trace time x2'."""
    if replay["mode"] == "closed":
        return "closed loop, queue depth %d" % replay["queue_depth"]
    sp = replay["speed"]
    return "open loop at trace time" + ("" if sp == 1 else " x%g" % sp)

