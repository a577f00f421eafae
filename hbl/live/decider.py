"""The decider of a live device: the simulator's policies, fed with
observed requests, answering with moves.

It runs the same C policy code as `hbl simulate` (ctypes_core/sim*.c in live
mode): a page is an extent, latencies are the measured ones, and instead of
charging a device model the decider queues the extents whose device it changed.
The controller carries the moves out and puts back the ones it could not do; it says which
of those it took still wait in its queue, so that the policy reversing one of them undoes it.
"""
import numpy as np

from hbl.core import ffi, lib
from hbl.devices import HSS, PROFILES
from hbl.errors import HblError
from hbl.sim import Simulator
from hbl.sim.registry import refuse_live

# Service models only matter to policies that read them; the live decider has
# no device model.  Fastest first, the slowest last.
LIVE_PROFILES = ("H", "N", "M")


class Decider:
    """Policy decisions for `nextents` extents over devices with the given capacities (in extents)."""

    def __init__(self, policy, extent_bytes, capacities, params=None, seed=1, migrate_every=256, migrate_max=32,
                 agents=None):
        """agents: a file of saved agents to start from (ignored by a policy without agents); the
        decider runs with the parameters it needs (Simulator.with_agents)."""
        refuse_live(policy)
        ndev = len(capacities)
        if not 2 <= ndev <= 4:
            raise HblError("a live device has 2 to 4 member devices, not %d" % ndev)
        names = list(LIVE_PROFILES[:ndev - 1]) + ["L"]
        hss = HSS("live", [PROFILES[n] for n in names], [1.0] * ndev)
        caps = [int(c) for c in capacities[:-1]] + [None]     # the slowest holds the rest
        self.sim = Simulator.with_agents(hss, policy, caps, agents, params=params, seed=seed, live=True,
                                         page_size=extent_bytes, migrate_every=migrate_every,
                                         migrate_max=migrate_max, timeline_every=0, queue_depth=0, speed=1.0)
        self.agents_from = agents if agents and self.sim.agents() else None
        self.policy, self.extent_bytes, self.ndev = policy, extent_bytes, ndev
        self._moves = np.zeros(65536, np.uint64)

    def set_devices(self, extents, devices):
        """Where extents are (at start-up, or moved by the controller's own rule)."""
        self.sim.set_devices(extents, devices)

    def put_back(self, extents, devices):
        """Moves the policy asked for and the controller did not do: the extents are still on devices."""
        self.sim.set_devices(extents, devices, undone=True)

    def waiting(self, extents, devices):
        """The moves taken (take_moves) that wait in the controller's queue, not started, the extents on
        `devices` there (the whole queue, after each batch is chosen).  Until the next take_moves, the
        policy moving one back there undoes its move, as one moved back before it was taken: the
        policy is told (as put_back tells it: a read-admitted extent stays read admission's), and
        the next take_moves has the extent, where it is, so the controller drops its move."""
        self.sim.live_waiting(extents, devices)

    def device(self, extent):
        return lib.hbl_live_device(self.sim.sim, int(extent))

    def feed(self, requests):
        """Observed requests (hbl.record.REQUEST, logical offsets, latency_ns measured)."""
        if len(requests):
            self.sim.feed(requests)

    def take_moves(self):
        """{extent: device wanted}: every extent whose device the policy changed since the last call."""
        out = {}
        while True:
            n = lib.hbl_live_take_moves(self.sim.sim, ffi.cast("uint64_t *", ffi.from_buffer(self._moves)),
                                        len(self._moves))
            for e in self._moves[:n].tolist():
                out[e] = self.device(e)
            if n < len(self._moves):
                return out

    def check(self):
        self.sim.check()

    def stats(self):
        r = self.sim.result()
        keep = ("requests", "reads", "writes", "read_hit_ratio", "fast_write_share", "promotions", "evictions",
                "used_pages")
        out = {k: r[k] for k in keep}
        if "agents" in r:
            out["agents"] = r["agents"]
        return out

    def agents(self):
        return self.sim.agents()

    def start_training(self, budget=0.0):
        """Learning policies train on a thread of their own from now on, so a decision
        never waits for a training step (the controller has one thread for everything else);
        budget: the most of one CPU that thread uses (0: no limit)."""
        self.sim.background_training(True, budget)

    def stop_training(self):
        self.sim.background_training(False)

    def load_agents(self, path):
        """Agents of this decider's shape; a file that needs other parameters goes to Decider(agents=)."""
        self.sim.load_agents(path)

    def save_agents(self, path):
        self.sim.save_agents(path)

