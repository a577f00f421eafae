"""A simulation: an HSS, a policy and its parameters, driven from Python in batches (the request loop,
the page table, the device model and the policies are C, ctypes_core/).  hbl.sim re-exports Simulator;
simulate() there runs one on a trace."""
import time

import numpy as np

from hbl import record
from hbl.core import ffi, lib
from hbl.errors import HblError
from hbl.sim.model import (DEFAULTS, LIVE_BATCH, LIVE_COPY, LIVE_FRONTIER, LIVE_INTERVAL_S, LIVE_STALE_S,
                            live_spares, replay_mode)
from hbl.sim.registry import parse_params


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

    def live_waiting(self, pages, devices):
        """Live mode: the moves taken that wait in the controller's queue, pages[i] on devices[i] there
        (hbl_live_waiting): until the next take, the policy moving one back there undoes its move."""
        e = np.ascontiguousarray(pages, dtype=np.uint64)
        d = np.ascontiguousarray(devices, dtype=np.int8)
        if len(e) != len(d):
            raise ValueError("one device per page")
        if lib.hbl_live_waiting(self.sim, ffi.cast("uint64_t *", ffi.from_buffer(e)),
                                ffi.cast("int8_t *", ffi.from_buffer(d)), len(e)):
            raise HblError("the engine refused the waiting moves (bad device, unknown page or out of memory)")

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
