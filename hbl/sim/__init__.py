"""The trace-driven simulator, driven from Python in batches.

    from hbl.sim import simulate
    result = simulate("bundled:hm_0", hss="cost", policy="smq")

The request loop, the page table, the device model and the policies are C
(ctypes_core/); Python only moves chunks of requests and reads the results.

The package holds the simulator's driver (here) and its agents: agent.py (the agents' view),
plugin.py (policies written in Python), pretrained.py (trains the shipped agents) and
agent_files.py (finds them).
"""
import os
import time

import numpy as np

from hbl import record
from hbl.core import ffi, lib
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.trace import open_trace

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


# what a policy can do (enum hbl_policy_flag): ask the registry, never a list of names
CAPABILITIES = {"learns": lib.HBL_POLICY_LEARNS, "needs_future": lib.HBL_POLICY_NEEDS_FUTURE,
                "live": lib.HBL_POLICY_LIVE}


def policies():
    """Every registered C policy: {name, description, capabilities (names of CAPABILITIES)}."""
    out, i = [], 0
    while True:
        name = lib.hbl_policy_name(i)
        if name == ffi.NULL:
            return out
        flags = lib.hbl_policy_flags(i)
        out.append(dict(name=ffi.string(name).decode(), description=ffi.string(lib.hbl_policy_doc(i)).decode(),
                        capabilities=[c for c, bit in CAPABILITIES.items() if flags & bit]))
        i += 1


def policy_names(capability=None):
    """Names of the registered policies, only those with `capability` (a CAPABILITIES key) if given."""
    return [p["name"] for p in policies() if capability is None or capability in p["capabilities"]]


def policy_params(i):
    """{name: {default, live_default, description}} of the parameters policy i accepts; a default
    is None when its init does not read it with two devices (it depends on other parameters or the
    variant); live_default, on a live device, only for a policy that can run live."""
    names, docs = [], []
    while lib.hbl_policy_param(i, len(names)) != ffi.NULL:
        docs.append(ffi.string(lib.hbl_policy_param_doc(i, len(names))).decode())
        names.append(ffi.string(lib.hbl_policy_param(i, len(names))).decode())

    def read(defaults):
        values, known = ffi.new("double[]", max(len(names), 1)), ffi.new("uint8_t[]", max(len(names), 1))
        if defaults(i, values, known, len(names)) < 0:
            return None
        return [values[j] if known[j] else None for j in range(len(names))]

    sim, live = read(lib.hbl_policy_defaults), read(lib.hbl_policy_live_defaults)
    out = {k: dict(default=sim[j] if sim else None, description=docs[j]) for j, k in enumerate(names)}
    for j, k in enumerate(names if live else []):
        out[k]["live_default"] = live[j]
    return out


def param_items(items):
    """['smq.promote=8', 'promote=8'] -> [('smq', 'promote', 8.0), (None, 'promote', 8.0)]: each
    parameter with the policy it is scoped to (POLICY.NAME) or None; a dict's keys may be scoped too."""
    pairs = []
    if isinstance(items, dict):
        pairs = [(str(k), v, "%s=%s" % (k, v)) for k, v in items.items()]
    else:
        for item in items or []:
            for part in filter(None, item.split(",")):
                key, eq, value = part.partition("=")
                if not eq or not key.strip():
                    raise HblError("policy parameter %r: want NAME=NUMBER" % part)
                pairs.append((key, value, part))
    out = []
    for key, value, part in pairs:
        scope, _, name = key.strip().rpartition(".")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise HblError("policy parameter %r: want NAME=NUMBER" % part) from None
        if not name:
            raise HblError("policy parameter %r: want NAME=NUMBER" % part)
        out.append((scope or None, name, value))
    return out


def parse_params(items, policy=None):
    """['smq.promote=8', 'promote=8'] -> {'promote': 8.0}; also accepts a dict. With `policy`, a
    parameter scoped to another policy (lru.NAME for smq) is an error, not silently dropped."""
    out = {}
    for scope, name, value in param_items(items):
        if policy is not None and scope is not None and scope != policy:
            raise HblError("policy parameter %s.%s is for policy %s, not %s" % (scope, name, scope, policy))
        out[name] = value
    return out


def params_for(items, policy):
    """The parameters of one policy in a run of several (hbl compare, hbl sweep): POLICY.NAME
    entries for this policy, and unscoped NAME entries when this policy takes NAME (a policy
    that does not, such as fast-only, runs without them)."""
    takes = set(policy_params(policy_names().index(policy))) if policy in policy_names() else set()
    return {name: value for scope, name, value in param_items(items)
            if scope == policy or (scope is None and name in takes)}


def check_params_for(items, names):
    """Refuse parameters no policy of a run would get: a scope that is not one of `names`, or an
    unscoped NAME that none of them takes (a typo would otherwise be dropped without a word)."""
    known = policy_names()
    takes = set()
    for p in names:
        if p in known:
            takes.update(policy_params(known.index(p)))
    for scope, name, _ in param_items(items):
        if scope is not None and scope not in names:
            raise HblError("--param %s.%s: policy %s is not in this run (have: %s)"
                           % (scope, name, scope, ", ".join(names)))
        if scope is None and name not in takes:
            raise HblError("--param %s: no policy in this run takes it (see `hbl policies`)" % name)


#: Parameters of the learning policies that teach their agents from the oracle's labels
#: (ctypes_core/demos.h): a run with any of them non-zero hands the policy the trace's future.
DEMO_PARAMS = ("demo", "m_demo", "demo_follow", "m_demo_follow")


def wants_future(policy, params=None):
    """Whether a run of `policy` reads the whole trace first: the oracle, or demonstrations asked for."""
    return policy in policy_names("needs_future") or any(parse_params(params).get(k) for k in DEMO_PARAMS)


def footprint_pages(chunks, page_size=4096):
    """Distinct pages a trace touches (one streaming pass in C)."""
    t = lib.hbl_tstats_new(page_size, 0)
    if t == ffi.NULL:
        raise MemoryError("hbl_tstats_new")
    try:
        for chunk in chunks:
            ptr, keep = record.as_cdata(chunk)
            if lib.hbl_tstats_feed(t, ptr, len(keep)):
                raise MemoryError("hbl_tstats_feed")
        return int(lib.hbl_tstats_pages(t))
    finally:
        lib.hbl_tstats_free(t)


class Simulator:
    """One simulation: an HSS, a policy and its parameters.  Feed chunks, then read result()."""

    def __init__(self, hss, policy, capacities_pages, params=None, plugin=None, seed=1, live=False, **options):
        mode, value = replay_mode(options)
        opts = dict(DEFAULTS, **{k: v for k, v in options.items() if v is not None})
        cfg = ffi.new("struct hbl_sim_config *")
        cfg.ndev = len(hss.devices)
        cfg.page_size = int(opts["page_size"])
        cfg.speed = value if mode == "open" else 1.0
        cfg.queue_depth = value if mode == "closed" else 0
        self.replay = {"mode": mode, ("queue_depth" if mode == "closed" else "speed"): value}
        cfg.bg.backlog_pages = int(opts["background_backlog"])
        cfg.bg.rate_bytes_per_ns = float(opts["background_rate_mb_s"]) * 1e6 / 1e9
        cfg.bg.idle_ns = float(opts["background_idle_ms"]) * 1e6
        self.background = {k: opts[k] for k in ("background_backlog", "background_rate_mb_s", "background_idle_ms")}
        for k in LIVE_COPY:                         # named in the result only when on
            setattr(cfg.bg, k.replace("background_", ""), int(bool(opts[k])))
            if opts[k]:
                self.background[k] = True
        if opts["live_batches"]:
            cfg.bg.batch_moves, cfg.bg.batch_interval_ns, cfg.bg.stale_ns = LIVE_BATCH, LIVE_INTERVAL_S * 1e9, LIVE_STALE_S * 1e9
            for i, cap in enumerate(capacities_pages):
                cfg.bg.spare_pages[i] = live_spares(cap) if cap is not None and cap >= 0 else 0
            cfg.bg.frontier = LIVE_FRONTIER
            # a diagnosis, not a model: the controller's own time per batch, before its copies and after
            cfg.bg.batch_prepare_ns, cfg.bg.batch_commit_ns = (ms * 1e6 for ms in opts["batch_overhead_ms"])
            self.background["live_batches"] = True
        cfg.migrate_every = int(opts["migrate_every"])
        cfg.migrate_max = int(opts["migrate_max"])
        cfg.timeline_every = int(opts["timeline_every"])
        cfg.seed = int(seed)
        for i, (profile, cap) in enumerate(zip(hss.devices, capacities_pages)):
            profile.to_c(cfg.dev[i], cap)
        p = ffi.new("struct hbl_params *")
        params = parse_params(params, policy)
        if len(params) > 32:
            raise HblError("at most 32 policy parameters")
        for i, (k, v) in enumerate(params.items()):
            if len(k) >= 32:
                raise HblError("policy parameter name %r is too long" % k)
            p.keys[i] = k.encode()
            p.values[i] = v
        p.n = len(params)
        self.plugin = plugin
        self.ndev = cfg.ndev
        handle = ffi.NULL
        if plugin is not None:
            from hbl.sim.plugin import attach
            self._handle = handle = attach(plugin, self)
            policy = "python"
        err = ffi.new("char[512]")
        if live:      # see hbl.live.decider: no device model, decisions come back as moves
            if plugin is not None:
                raise HblError("Python plugin policies cannot drive a live device")
            self.sim = lib.hbl_live_new(cfg, policy.encode(), p, err, 512)
        else:
            self.sim = lib.hbl_sim_new(cfg, policy.encode(), p, handle, err, 512)
        if self.sim == ffi.NULL:
            raise HblError("policy %s: %s" % (policy, ffi.string(err).decode()))
        self.policy, self.hss, self.cfg = policy, hss, cfg
        self.capacities = capacities_pages
        self.params = params
        self.wall = 0.0

    def __del__(self):
        sim = getattr(self, "sim", ffi.NULL)
        if sim != ffi.NULL:
            lib.hbl_sim_free(sim)
            self.sim = ffi.NULL

    def agents(self):
        """The policy's learning agents (placement first), as hbl.sim.agent.Agent views."""
        from hbl.sim.agent import Agent
        out, i = [], 0
        while True:
            a = lib.hbl_sim_agent(self.sim, i)
            if a == ffi.NULL:
                return out
            out.append(Agent(a, owner=self))
            i += 1

    def save_agents(self, path):
        err = ffi.new("char[512]")
        if lib.hbl_sim_save_agents(self.sim, str(path).encode(), err, 512):
            raise HblError(ffi.string(err).decode())

    def background_training(self, on=True, budget=0.0):
        """Train the policy's agents on a thread of their own (on) or inline again (off).
        Decisions then never wait for a training step; runs are no longer reproducible.
        budget: the most of one CPU that thread trains with (0 < budget < 1; else no limit)."""
        err = ffi.new("char[512]")
        if lib.hbl_sim_background_training(self.sim, 1 if on else 0, float(budget), err, 512):
            raise HblError(ffi.string(err).decode())

    @classmethod
    def with_agents(cls, hss, policy, capacities_pages, agents, params=None, before_load=None, **options):
        """A Simulator started from the saved agents in file `agents` (None or False: untrained; a
        policy without agents ignores it), built with the parameters the file needs
        (hbl.sim.agent_files.run_params: its placement agent's width).  before_load(sim), if given,
        runs before they load (Agent.set_shadow, for the FP32 copy a file then gives)."""
        if agents:
            from hbl.sim.agent_files import run_params
            params = run_params(agents, policy, parse_params(params, policy))
        sim = cls(hss, policy, capacities_pages, params=params, **options)
        if before_load:
            before_load(sim)
        if agents and sim.agents():
            sim.load_agents(agents)
        return sim

    def load_agents(self, path):
        """Load saved agents of this configuration; Simulator.with_agents builds one with the
        parameters a file needs (its placement agent's width) and loads them."""
        err = ffi.new("char[512]")
        if lib.hbl_sim_load_agents(self.sim, str(path).encode(), err, 512):
            raise HblError(ffi.string(err).decode())

    def set_future(self, requests):
        ptr, keep = record.as_cdata(requests)
        if lib.hbl_sim_set_future(self.sim, ptr, len(keep)):
            raise HblError("policy %s does not take future knowledge (or out of memory)" % self.policy)

    def set_devices(self, pages, devices, undone=False):
        """Page pages[i] is on device devices[i] (where a live device's mapping has it), the policy told;
        undone: because the moves it asked for them were not done."""
        e = np.ascontiguousarray(pages, dtype=np.uint64)
        d = np.ascontiguousarray(devices, dtype=np.int8)
        if len(e) != len(d):
            raise ValueError("one device per page")
        place = lib.hbl_live_put_back if undone else lib.hbl_live_set_devices
        if place(self.sim, ffi.cast("uint64_t *", ffi.from_buffer(e)), ffi.cast("int8_t *", ffi.from_buffer(d)),
                 len(e)):
            raise HblError("the engine refused a placement (bad device or out of memory)")

    def feed(self, chunk):
        ptr, keep = record.as_cdata(chunk)
        t = time.perf_counter()
        rc = lib.hbl_sim_feed(self.sim, ptr, len(keep))
        self.wall += time.perf_counter() - t
        if rc:
            raise MemoryError("simulator out of memory")

    def check(self):
        """Raise AssertionError when an invariant of the page table is broken."""
        err = ffi.new("char[512]")
        if lib.hbl_sim_check(self.sim, err, 512):
            raise AssertionError(ffi.string(err).decode())

    def stats(self):
        st = ffi.new("struct hbl_sim_stats *")
        lib.hbl_sim_get_stats(self.sim, st)
        return st

    def timeline(self):
        n = lib.hbl_sim_timeline(self.sim, ffi.NULL, 0)
        rows = ffi.new("struct hbl_timeline_row[]", max(n, 1))
        lib.hbl_sim_timeline(self.sim, rows, n)
        return [dict(requests=r.requests, time_s=r.time_ns / 1e9, avg_latency_us=r.avg_latency_ns / 1e3,
                     read_hit_ratio=r.read_hit_ratio, promotions=r.promotions, evictions=r.evictions,
                     fast_used_pages=r.fast_used_pages) for r in (rows[i] for i in range(n))]

    def result(self, timeline=False):
        st = self.stats()
        n = st.requests
        span = max(st.last_completion_ns - st.first_arrival_ns, 1.0)
        pct = lambda q: lib.hbl_sim_latency_percentile(self.sim, q) / 1e3
        out = {
            "policy": self.policy,
            "hss": self.hss.name,
            "devices": [p.name for p in self.hss.devices],
            "capacity_pages": [lib.hbl_sim_capacity(self.sim, i) for i in range(self.ndev)],
            "replay": self.replay,
            "requests": n,
            "skipped": st.skipped,
            "reads": st.reads,
            "writes": st.writes,
            "avg_latency_us": (st.latency_sum_ns / n / 1e3) if n else 0.0,
            "p50_latency_us": pct(0.5),
            "p95_latency_us": pct(0.95),
            "p99_latency_us": pct(0.99),
            "p999_latency_us": pct(0.999),
            "throughput_iops": n / (span / 1e9) if n else 0.0,
            "read_hit_ratio": st.fast_read_hits / st.read_page_accesses if st.read_page_accesses else 0.0,
            "fast_write_share": st.fast_page_writes / st.write_page_accesses if st.write_page_accesses else 0.0,
            "promotions": st.promotions,
            "evictions": st.evictions,
            "fallback_evictions": st.fallback_evictions,
            "clean_evictions": st.clean_evictions,
            "sync_evictions": st.sync_evictions,
            "moves_refused": st.moves_refused,
            "background_ios": st.background_ios,
            "background_wait_us": st.foreground_wait_ns / n / 1e3 if n else 0.0,
            "background": self.background,
            "migrated_bytes": st.migrated_bytes,
            "pages": st.pages,
            "used_pages": [st.used_pages[i] for i in range(self.ndev)],
            "device_utilization": [min(1.0, st.busy_ns[i] / span) for i in range(self.ndev)],
            "background_utilization": [min(1.0, st.background_busy_ns[i] / span) for i in range(self.ndev)],
            # each request under the slowest device it was served from: how many, their mean latency
            "served_requests": [st.served_requests[i] for i in range(self.ndev)],
            "served_latency_us": [st.served_latency_ns[i] / st.served_requests[i] / 1e3 if st.served_requests[i]
                                  else 0.0 for i in range(self.ndev)],
            # mean per request of the wait for evictions made synchronous by a full background queue,
            # and the device time those drained background I/Os took
            "sync_wait_us": st.sync_wait_ns / n / 1e3 if n else 0.0,
            "sync_utilization": [min(1.0, st.sync_busy_ns[i] / span) for i in range(self.ndev)],
            # where page reads and writes were served, per device; read requests' mean latency; the
            # background I/O's device time per request; promotions whose copy was never read: moved
            # down again before a read (wasted), or not read yet at the end (unread)
            "read_pages": [st.read_pages[i] for i in range(self.ndev)],
            "write_pages": [st.write_pages[i] for i in range(self.ndev)],
            "read_latency_us": st.read_latency_ns / st.reads / 1e3 if st.reads else 0.0,
            "background_busy_us": [st.background_busy_ns[i] / n / 1e3 if n else 0.0 for i in range(self.ndev)],
            "promotions_wasted": st.promotions_wasted,
            "promoted_unread": st.promoted_unread,
            "params": self.params,
            "requests_per_second": n / self.wall if self.wall > 0 else 0.0,
        }
        if self.background.get("live_batches"):
            out["batches"] = st.batches
        agents = self.agents()
        if agents:
            out["agents"] = [a.stats() for a in agents]
            out["agents_memory_bytes"] = sum(a.memory_bytes() for a in agents)
        if timeline:
            out["timeline"] = self.timeline()
        return out


def simulate(trace, hss="cost", policy="lru", fast_capacity=None, params=None, plugin=None, seed=1,
             fmt=None, lenient=False, reader_options=None, footprint=None, timeline=False,
             check=False, load_agents=None, save_agents=None, progress=None, **options):
    """Simulate one policy on one trace; returns the result dict (see Simulator.result).
    progress, if given, wraps each pass over the trace: progress(chunks, what) -> chunks.
    load_agents: a file of saved agents, or a directory of them (hbl.sim.agent_files.in_directory:
    the file this policy, HSS and seed start from there); None, the shipped pretrained agents of the
    policy for this HSS preset and seed where there are some (hbl.sim.agent_files); False, untrained agents."""
    watch = progress or (lambda chunks, what: chunks)
    page_size = int(options.get("page_size") or DEFAULTS["page_size"])
    config = load_hss(hss, fast_capacity) if isinstance(hss, str) else hss
    reader_options = reader_options or {}
    reopen = lambda: open_trace(trace, fmt=fmt, lenient=lenient, **reader_options)
    if wants_future(policy, params):
        first = reopen()
        data = record.concat(list(watch(first, "reading")))
        source = [data]
    else:
        data, source = None, None
    if footprint is None:
        footprint = footprint_pages(source if source else watch(reopen(), "footprint"), page_size)
    caps = config.capacity_pages(footprint, page_size)
    if load_agents and os.path.isdir(load_agents) and plugin is None:
        from hbl.sim.agent_files import in_directory
        load_agents = in_directory(load_agents, policy, hss, seed)
    agents_from = load_agents or None
    if load_agents is None and plugin is None:
        from hbl.sim.agent_files import shipped
        agents_from = shipped(policy, hss, seed)
    if agents_from:
        from hbl.sim.agent_files import ContradictingParams, run_params
        try:
            params = run_params(agents_from, policy, parse_params(params, policy))
        except ContradictingParams:
            if load_agents:
                raise
            agents_from = None   # shipped agents of another queue_feature than asked for: it starts untrained

    def run(params):
        nonlocal agents_from
        sim = Simulator(config, policy, caps, params=params, plugin=plugin, seed=seed, **options)
        if agents_from and load_agents:
            sim.load_agents(agents_from)
        elif agents_from:
            try:
                sim.load_agents(agents_from)
            except HblError:   # parameters that change the agents' shape: they start untrained
                agents_from = None
        if data is not None:
            sim.set_future(data)
        reader = source if source else reopen()
        for chunk in watch(reader, "simulating"):
            sim.feed(chunk)
        if check:
            sim.check()
        if save_agents:
            sim.save_agents(save_agents)
        return sim.result(timeline=timeline), reader

    if policy == "oracle" and not parse_params(params):
        # No single future-aware construction is optimal for latency in this model (absorbing
        # writes on the fast device wins when the slow device has idle time for the write-backs,
        # bypassing wins when it has none), so the oracle is the best of its family per run.
        tried = [run(dict(v)) + (v,) for v in ORACLE_FAMILY]
        out, reader, _ = min(tried, key=lambda t: t[0]["avg_latency_us"])
        out["oracle_family"] = [dict(params=dict(v), avg_latency_us=r["avg_latency_us"]) for r, _, v in tried]
    else:
        out, reader = run(params)
    out["trace"] = trace
    if "agents" in out:
        out["agents_from"] = ("untrained" if not agents_from else str(agents_from) if load_agents
                              else "pretrained:" + agents_from.stem)
    out["footprint_pages"] = footprint
    out["bad_lines_skipped"] = getattr(first if source else reader, "skipped", 0)
    return out
