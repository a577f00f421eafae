"""Policies written in Python (the slow path, for experiments).

Subclass Policy, override place() and, if the policy migrates, migrate(), then
`hbl simulate --policy python:my_policy.py:MyPolicy` or
`simulate(..., plugin=MyPolicy())`.  Every decision is a call from C into
Python, so expect tens of thousands of requests per second, not millions.

    class HotWrites(Policy):
        def place(self, view, request, slots):
            if request["op"] == WRITE and view.count(slots[0]) >= 2:
                return 0          # the fast device, for every page of the request
            return None           # leave pages where they are
"""
import importlib
import importlib.util
import os

from hbl.core import ffi, lib
from hbl.errors import HblError


class View:
    """What a Python policy may read of the simulator's page table."""

    def __init__(self, sim):
        self._sim = sim
        self.ndev = sim.ndev

    def device(self, slot):
        return lib.hbl_sim_page_device(self._sim.sim, slot)

    def count(self, slot):
        return lib.hbl_sim_page_count(self._sim.sim, slot)

    def page(self, slot):
        return lib.hbl_sim_page_number(self._sim.sim, slot)

    def last_access(self, slot):
        return lib.hbl_sim_page_last_access(self._sim.sim, slot)

    def free_pages(self, dev):
        return lib.hbl_sim_free_pages(self._sim.sim, dev)

    def now(self):
        """Requests processed so far."""
        return lib.hbl_sim_now_request(self._sim.sim)

    def lru(self, dev, n):
        """Up to n slots of device dev, least recently used first."""
        buf = ffi.new("uint32_t[]", max(n, 1))
        k = lib.hbl_sim_lru_pages(self._sim.sim, dev, buf, n)
        return list(buf[0:k])


class Policy:
    """Base class of Python policies."""

    def place(self, view, request, slots):
        """Device for the request's pages: an int (all pages), a list (one per
        slot, None = no preference) or None.  request is a dict of the record's fields."""
        return None

    def migrate(self, view, max_moves):
        """Moves to make now: a list of (slot, device), at most max_moves."""
        return []


def attach(policy, sim):
    """A C handle for hbl_sim_new; the simulator must keep it alive as long as itself."""
    if not isinstance(policy, Policy):
        raise HblError("a plugin policy must subclass hbl.plugin.Policy")
    policy._view = View(sim)
    policy._error = None
    return ffi.new_handle(policy)


_FIELDS = ("time_ns", "offset", "latency_ns", "length", "pid", "device", "op")


class PluginError(HblError):
    """A plugin method raised or returned something unusable: the run stops."""


def _failed(policy, method, exc):
    """Note the first failure; the C loop cannot unwind through a callback, so
    check() raises it between chunks and the remaining callbacks return at once."""
    if policy._error is None:
        policy._error = (method, policy._view.now() + 1, exc)


def check(policy):
    """Raise the failure of a plugin's method, if any, as one line (KeyboardInterrupt as itself)."""
    err = getattr(policy, "_error", None)
    if err is None:
        return
    method, n, exc = err
    if isinstance(exc, KeyboardInterrupt):
        raise exc
    raise PluginError("plugin %s: %s() failed at request %d: %s: %s"
                      % (type(policy).__name__, method, n, type(exc).__name__, str(exc)[:200]))


@ffi.def_extern()
def hbl_py_place(plugin, req, slots, n, targets):
    policy = ffi.from_handle(plugin)
    if policy._error is not None:
        return
    try:
        request = {f: getattr(req, f) for f in _FIELDS}
        choice = policy.place(policy._view, request, list(slots[0:n]))
        if choice is None:
            return
        if isinstance(choice, int):
            choice = [choice] * n
        for i, c in enumerate(list(choice)[:n]):
            if c is not None:
                targets[i] = _device(c, policy._view.ndev)
    except BaseException as exc:   # KeyboardInterrupt too: cffi would print and drop it
        _failed(policy, "place", exc)


@ffi.def_extern()
def hbl_py_migrate(plugin, slots, targets, max_moves):
    policy = ffi.from_handle(plugin)
    if policy._error is not None:
        return 0
    try:
        moves = list(policy.migrate(policy._view, max_moves))[:max_moves]
        for i, (slot, dev) in enumerate(moves):
            slots[i] = int(slot)
            targets[i] = _device(dev, policy._view.ndev)
    except BaseException as exc:
        _failed(policy, "migrate", exc)
        return 0
    return len(moves)


def _device(value, ndev):
    dev = int(value)
    if not 0 <= dev < ndev:
        raise ValueError("device %d is not one of 0..%d" % (dev, ndev - 1))
    return dev


def load_policy(spec):
    """An instance from 'python:path/to/file.py:Class' or 'python:package.module:Class'."""
    body = spec.split(":", 1)[1] if spec.startswith("python:") else spec
    where, _, cls = body.rpartition(":")
    if not where or not cls:
        raise HblError("plugin %r: want python:FILE.py:CLASS or python:MODULE:CLASS" % spec)
    try:
        if where.endswith(".py"):
            if not os.path.exists(where):
                raise HblError("plugin %r: no such file %s" % (spec, where))
            s = importlib.util.spec_from_file_location("hbl_plugin_" + cls, where)
            module = importlib.util.module_from_spec(s)
            s.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except HblError:
        raise
    except Exception as exc:  # the plugin's own error, shown as one line
        raise HblError("plugin %r failed to load: %s: %s" % (spec, type(exc).__name__, exc)) from None
    policy = getattr(module, cls, None)
    if policy is None:
        raise HblError("plugin %r: %s has no class %s" % (spec, where, cls))
    obj = policy()
    if not isinstance(obj, Policy):
        raise HblError("plugin %r: %s does not subclass hbl.plugin.Policy" % (spec, cls))
    return obj
