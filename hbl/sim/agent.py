"""Thin Python view of the C learning agent (ctypes_core/agent*.c).

Used by tests and benchmarks; policies drive their agents from C.  States are
sequences of small integers (feature bins), one byte each.
"""
import numpy as np

from hbl.core import ffi, lib
from hbl.errors import HblError

HEADS = {"dqn": 0, "c51": 1}
OPTIMIZERS = {"adam": 0, "rmsprop": 1}


def config(nbins, nactions, hidden=(20, 30), head="c51", atoms=51, vmin=0.0, vmax=10.0, optimizer="adam",
           lr=1e-3, gamma=0.9, epsilon=0.001, warmup=0, batch=128, buffer=1000, train_every=1000,
           sync_every=1000, cache=0, seed=1, demo=0.0, demo_margin=0.8):
    c = ffi.new("struct hbl_agent_config *")
    c.nfeatures = len(nbins)
    for i, b in enumerate(nbins):
        c.nbins[i] = b
    c.nactions = nactions
    c.nhidden = len(hidden)
    for i, h in enumerate(hidden):
        c.hidden[i] = h
    c.head, c.atoms, c.vmin, c.vmax = HEADS[head], atoms, vmin, vmax
    c.optimizer, c.lr, c.gamma, c.epsilon, c.warmup = OPTIMIZERS[optimizer], lr, gamma, epsilon, warmup
    c.batch, c.buffer, c.train_every, c.sync_every, c.cache, c.seed = batch, buffer, train_every, sync_every, cache, seed
    c.demo, c.demo_margin = demo, demo_margin
    return c


class Agent:
    """An agent: owned (created here) or a view of one inside a simulator."""

    def __init__(self, ptr=None, owner=None, **cfg):
        if ptr is None:
            err = ffi.new("char[256]")
            ptr = lib.hbl_agent_new(config(**cfg), err, 256)
            if ptr == ffi.NULL:
                raise HblError(ffi.string(err).decode())
            self._owned = True
        else:
            self._owned = False
        self.ptr, self._owner = ptr, owner
        c = ffi.new("struct hbl_agent_config *")
        lib.hbl_agent_get_config(ptr, c)
        self.nfeatures, self.nactions = c.nfeatures, c.nactions

    def __del__(self):
        if getattr(self, "_owned", False) and self.ptr != ffi.NULL:
            lib.hbl_agent_free(self.ptr)
            self.ptr = ffi.NULL

    def _state(self, s):
        a = np.ascontiguousarray(s, dtype=np.uint8)
        if a.shape[-1] != self.nfeatures:
            raise ValueError("a state has %d features" % self.nfeatures)
        return a, ffi.cast("uint8_t *", ffi.from_buffer(a))

    def act(self, state):
        _, p = self._state(state)
        return lib.hbl_agent_act(self.ptr, p)

    def greedy(self, state):
        _, p = self._state(state)
        return lib.hbl_agent_greedy(self.ptr, p)

    def values(self, state):
        _, p = self._state(state)
        out = ffi.new("float[]", self.nactions)
        lib.hbl_agent_values(self.ptr, p, out)
        return list(out)

    def remember(self, state, action, reward, next_state, label=None):
        """A transition; label: a demonstrator's action for the state (the large-margin loss, demo > 0)."""
        a, p = self._state(state)
        b, q = self._state(next_state)
        if label is None:
            lib.hbl_agent_remember(self.ptr, p, action, reward, q)
        else:
            lib.hbl_agent_remember_demo(self.ptr, p, action, reward, q, label)

    def train(self):
        return lib.hbl_agent_train(self.ptr)

    def sync(self):
        lib.hbl_agent_sync(self.ptr)

    def params(self):
        """The training network's parameters, as hbl_mlp lays them out (a copy)."""
        n = lib.hbl_agent_params(self.ptr, ffi.NULL, 0)
        out = np.zeros(n, np.float32)
        lib.hbl_agent_params(self.ptr, ffi.cast("float *", ffi.from_buffer(out)), n)
        return out

    def moments(self):
        """The optimizer's two moment vectors, laid out as params() (copies)."""
        n = lib.hbl_agent_moments(self.ptr, ffi.NULL, ffi.NULL, 0)
        m1, m2 = np.zeros(n, np.float32), np.zeros(n, np.float32)
        lib.hbl_agent_moments(self.ptr, ffi.cast("float *", ffi.from_buffer(m1)),
                              ffi.cast("float *", ffi.from_buffer(m2)), n)
        return m1, m2

    def set_params(self, w, m1=None, m2=None):
        """Replace the training network's parameters (params()' layout) and, if given, the optimizer's
        moments; the deciding network is synced to them."""
        n = lib.hbl_agent_params(self.ptr, ffi.NULL, 0)
        arrs = [None if a is None else np.ascontiguousarray(a, dtype=np.float32).ravel() for a in (w, m1, m2)]
        for name, a in zip(("parameters", "first moments", "second moments"), arrs):
            if a is not None and len(a) != n:
                raise HblError("set_params: %d %s, the agent has %d parameters" % (len(a), name, n))
        ptrs = [ffi.NULL if a is None else ffi.cast("float *", ffi.from_buffer(a)) for a in arrs]
        if lib.hbl_agent_set_params(self.ptr, ptrs[0], ptrs[1], ptrs[2], n):
            raise HblError("set_params: the agent refused %d parameters" % n)

    def memory_bytes(self):
        return int(lib.hbl_agent_memory_bytes(self.ptr))

    def stats(self):
        st = ffi.new("struct hbl_agent_stats *")
        lib.hbl_agent_get_stats(self.ptr, st)
        out = {k: getattr(st, k) for k in ("decisions", "explorations", "train_steps", "background_steps", "syncs",
                                           "buffered", "epsilon", "last_loss", "reward_ewma")}
        out["actions"] = [st.actions[i] for i in range(self.nactions)]
        return out

    def buffer_states(self):
        out = np.zeros((100_000, self.nfeatures), np.uint8)
        n = lib.hbl_agent_buffer_states(self.ptr, ffi.cast("uint8_t *", ffi.from_buffer(out)), len(out))
        return out[:n]

    def buffer_rewards(self):
        """The actions and rewards of the experience buffer, in buffer_states' order."""
        acts = np.zeros(100_000, np.uint8)
        rew = np.zeros(100_000, np.float32)
        n = lib.hbl_agent_buffer_rewards(self.ptr, ffi.cast("uint8_t *", ffi.from_buffer(acts)),
                                         ffi.cast("float *", ffi.from_buffer(rew)), len(acts))
        return acts[:n], rew[:n]

    def bench_forward_ns(self, states, n=1_000_000):
        a, p = self._state(states)
        return lib.hbl_agent_bench_inference(self.ptr, p, len(a), n)

    def bench_fp32_ns(self, states, n=1_000_000, linear=False):
        """ns per pass of the FP32 network of the training weights (linear: its layers'
        multiply-adds alone, no activations, no C51 expectation)."""
        a, p = self._state(states)
        return lib.hbl_agent_bench_fp32(self.ptr, p, len(a), n, int(linear))

    def set_shadow(self, on=True):
        """Also take every greedy decision with the FP32 network, to count agreement."""
        lib.hbl_agent_set_shadow(self.ptr, int(on))

    def agreement(self):
        """(greedy decisions compared with the FP32 network, of which identical)."""
        c, a = ffi.new("uint64_t *"), ffi.new("uint64_t *")
        lib.hbl_agent_agreement(self.ptr, c, a)
        return int(c[0]), int(a[0])

    def bench_decision_ns(self, states, sync_every=1000, n=1_000_000):
        a, p = self._state(states)
        return lib.hbl_agent_bench_decisions(self.ptr, p, len(a), sync_every, n)

    def save(self, path, policy="agent"):
        err = ffi.new("char[512]")
        arr = ffi.new("struct hbl_agent *[1]", [self.ptr])
        if lib.hbl_agents_save(str(path).encode(), policy.encode(), arr, 1, err, 512):
            raise HblError(ffi.string(err).decode())

    def load(self, path, policy="agent"):
        err = ffi.new("char[512]")
        arr = ffi.new("struct hbl_agent *[1]", [self.ptr])
        if lib.hbl_agents_load(str(path).encode(), policy.encode(), arr, 1, err, 512):
            raise HblError(ffi.string(err).decode())
