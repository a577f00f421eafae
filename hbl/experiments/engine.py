"""The experiment engine behind `hbl compare` and `hbl sweep`: a grid of simulations (traces x HSS
x policies x parameter sets x seeds), its traces read once, and each cell one call of
hbl.sim.simulate, run by an executor that yields each cell's record as it finishes.

    from hbl.experiments.engine import Grid, prepare
    grid = Grid(traces=["bundled:hm_0"], hss=["cost"], policies=["fast-only", "lru"], seeds=[1, 2])
    traces, cells = prepare(grid, grid.options, work_dir)

A record is the cell (trace, hss, policy, params, seed, key) with the simulator options, its
status, the result of simulate (or the error), the worker and the wall time. A cell's key is the
hash of its inputs (the trace's records, hbl's code, the HSS, policy, parameters, seed and
simulator options), so a journal of records can tell the cells already done (hbl.experiments.sweep).
The executors: LocalPool, forked processes of this machine (hbl.pool), on which `hbl compare`
runs its preset grid (hbl.experiments.compare.CompareGrid), and hbl.experiments.sweep.Session, a Dask cluster, for
`hbl sweep` (Dask is imported only there).
"""
import dataclasses
import functools
import hashlib
import itertools
import json
import os
import socket
import tempfile
import time

from hbl import __version__
from hbl import trace as tracemod
from hbl.errors import HblError
from hbl.pool import each
from hbl.progress import Progress
from hbl.sim import footprint_pages, simulate
from hbl.sim.registry import COMPOSITES, all_policy_names, check_params_for, params_for, refuse_plugin


@dataclasses.dataclass
class Grid:
    """The cells of an experiment (a sweep's; CompareGrid in hbl/experiments/compare.py is `hbl compare`'s
    preset, which overrides seeds_of and limit_of). param_grid maps NAME or POLICY.NAME to
    values: a bare NAME varies for every policy, POLICY.NAME only for that policy (the others run
    once without it). options are keyword arguments of hbl.sim.simulate shared by every cell
    (fast_capacity, queue_depth, ...)."""
    traces: list
    hss: list
    policies: list
    param_grid: dict = dataclasses.field(default_factory=dict)
    seeds: list = dataclasses.field(default_factory=lambda: [1])
    options: dict = dataclasses.field(default_factory=dict)
    fmt: str = None
    lenient: bool = False
    reader_options: dict = dataclasses.field(default_factory=dict)

    def check(self):
        for what, flag in (("traces", "--trace"), ("HSS", "--hss"), ("policies", "--policies"), ("seeds", "--seeds")):
            if not getattr(self, what.lower()):     # compare's grid too: no "sweep:" here
                raise HblError("no %s given (%s)" % (what, flag))
        known = [n for n in all_policy_names() if n != "python"]
        for p in self.policies:
            refuse_plugin(p, "a sweep's cells", "sweep: ")     # else every cell fails on it
            if p not in known:
                raise HblError("sweep: unknown policy %r (have: %s)" % (p, ", ".join(known)))
        for name in self.param_grid:
            scope = name.split(".")[0] if "." in name else None
            if scope and scope not in self.policies:
                raise HblError("sweep: --param-grid %s: policy %s is not in the sweep" % (name, scope))
        check_params_for(self.options.get("params"), self.policies)
        from hbl.devices import load_hss
        for h in self.hss:
            load_hss(h, self.options.get("fast_capacity"))   # fail early on a bad HSS or capacity

    def params_of(self, policy):
        """Every parameter combination for one policy: [{'promote': 2.0}, {'promote': 4.0}, ...]."""
        axes = [(name.split(".")[-1], values) for name, values in self.param_grid.items()
                if "." not in name or name.split(".")[0] == policy]
        combos = itertools.product(*[[(k, float(v)) for v in values] for k, values in axes])
        return [dict(c) for c in combos]

    def seeds_of(self, policy):
        """The seeds a policy runs with: every one of the grid's."""
        return self.seeds

    def limit_of(self, name):
        """How many of a trace's first requests the grid takes (None: all)."""
        return None

    def cells(self):
        given = self.options.get("params")    # --param: each policy that takes it, under the grid's
        fixed_of = {p: params_for(given, p) for p in self.policies}
        for t, h, p in itertools.product(self.traces, self.hss, self.policies):
            fixed = fixed_of[p]
            for s in self.seeds_of(p):
                for params in self.params_of(p):
                    yield dict(trace=t, hss=h, policy=p, params=dict(fixed, **params), seed=int(s))


# ---- traces ----

def materialize(name, path, fmt, lenient, reader_options, limit=None):
    """Read a trace (its first `limit` requests, if given) once into a native file (later passes
    memory-map it); its footprint and the malformed lines skipped (--lenient)."""
    reader = tracemod.open_trace(name, fmt=fmt, lenient=lenient, **reader_options)
    if getattr(reader, "name", "") == "native" and not limit:
        path = reader.path
    else:
        w = tracemod.writer(path, "native", source=name)
        for chunk in reader:
            w.write(chunk[:limit - w.count] if limit else chunk)
            if limit and w.count >= limit:
                break
        w.close()
    return path, footprint_pages(tracemod.open_trace(path)), getattr(reader, "skipped", 0)


@dataclasses.dataclass
class PreparedTrace:
    name: str
    data: bytes          # the native file's bytes (header + records), for an executor that ships them
    digest: str          # sha256 of the records: the trace's content, whatever its name
    footprint: int
    path: str = None     # or the native file, for executors on this machine (they memory-map it)
    skipped: int = 0     # malformed lines skipped (--lenient)


def prepare_trace(name, grid, path=None):
    """A trace read once into a native file at path (the trace itself if it is one whole), or,
    without a path, into memory."""
    from hbl.trace.native import HEADER_SIZE
    fmt = None if name.startswith(("synth:", "bundled:")) else grid.fmt
    if path:
        path, footprint, skipped = materialize(name, path, fmt, grid.lenient, grid.reader_options,
                                               grid.limit_of(name))
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            f.seek(HEADER_SIZE)
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return PreparedTrace(name, None, digest.hexdigest(), footprint, path, skipped)
    with tempfile.TemporaryDirectory(prefix="hbl-sweep-") as work:
        path, footprint, skipped = materialize(name, os.path.join(work, "t.hbltrace"), fmt, grid.lenient,
                                               grid.reader_options, grid.limit_of(name))
        with open(path, "rb") as f:
            data = f.read()
    return PreparedTrace(name, data, hashlib.sha256(memoryview(data)[HEADER_SIZE:]).hexdigest(), footprint,
                         skipped=skipped)


def prepare(grid, options, work_dir=None, progress=True, what="sweep: read", note=None):
    """The grid's traces read and converted once (into work_dir, else into memory), and its cells
    with their keys. note(trace) -> str, if given, labels the progress after each trace."""
    traces = {}
    with Progress(what, total=len(grid.traces), unit="traces", quiet=not progress) as bar:
        for i, name in enumerate(grid.traces):
            traces[name] = prepare_trace(name, grid, work_dir and os.path.join(work_dir, "%d.hbltrace" % i))
            bar.update(note=note(traces[name]) if note else name)
    cells = []
    for c in grid.cells():
        c["key"] = cell_key(c, traces[c["trace"]].digest, options)
        cells.append(c)
    return traces, cells


# ---- cells ----

def hss_identity(hss):
    """A named HSS is part of this hbl version; a .json file is identified by its content."""
    if hss.endswith(".json") and os.path.exists(hss):
        with open(hss, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    return hss


@functools.lru_cache(maxsize=None)
def code_identity(policy=None):
    """hbl's version and a hash of its compiled core: the version alone stays the same while the
    policies change, and cells simulated by other code must not count as done.  A composite policy
    (hbl/sim/guard.py) is Python: its source and its registry entry are hashed too."""
    from hbl.core import LIBRARY
    with open(LIBRARY, "rb") as f:
        ident = "%s+%s" % (__version__, hashlib.sha256(f.read()).hexdigest()[:16])
    if policy in COMPOSITES:
        from hbl.sim import guard
        with open(guard.__file__, "rb") as f:
            src = f.read() + json.dumps(COMPOSITES[policy], sort_keys=True).encode()
        ident += "+" + hashlib.sha256(src).hexdigest()[:16]
    return ident


def cell_key(cell, trace_digest, options):
    """The hash of everything a cell's result depends on; the simulator's defaults are included,
    so changing a default changes the keys."""
    from hbl.sim.model import DEFAULTS
    ident = dict(trace=trace_digest, hbl=code_identity(cell["policy"]), hss=hss_identity(cell["hss"]), policy=cell["policy"],
                 params=cell["params"], seed=cell["seed"],
                 options=dict(DEFAULTS, **{k: v for k, v in options.items() if k != "params"}))
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:24]


def run_cell(cell, options, trace, footprint, strict=False, shared=None):
    """One cell on the native file trace (or what trace() returns: a Dask worker's copy):
    {'result': simulate's dict} or {'error': message}, with the worker and the wall time.
    strict: an error is raised, not recorded.  shared: more simulate() arguments that change how a
    cell is computed, not its result (compare's shadow_dir), so neither its key nor its record has them."""
    t0 = time.time()
    out = {"worker": "%s:%d" % (socket.gethostname(), os.getpid())}
    try:
        path = trace() if callable(trace) else trace
        kw = {k: v for k, v in options.items() if k != "params"}
        out["result"] = simulate(path, hss=cell["hss"], policy=cell["policy"], params=cell["params"],
                                 seed=cell["seed"], fmt="native", footprint=footprint, **kw, **(shared or {}))
    except Exception as exc:    # recorded with the cell; the sweep goes on
        if strict:
            raise
        out["error"] = "%s: %s" % (type(exc).__name__, exc)
    out["wall_s"] = time.time() - t0
    return out


def record(cell, options, out):
    """A finished cell's record: the cell, its options, its status and run_cell's output."""
    return dict(cell, options=options, status="error" if "error" in out else "ok", **out)


# ---- on this machine ----

def _run_local(job):
    cell, options, path, footprint, strict, shared = job
    return record(cell, options, run_cell(cell, options, path, footprint, strict, shared))


class LocalPool:
    """Cells on forked processes of this machine (hbl.pool), jobs at once (default: the cores):
    `hbl compare`'s executor. strict: a cell's error ends the run (raised), not recorded.
    note(record) -> str, if given, shows the progress on stderr, labelled by it.  shared: run_cell's."""

    def __init__(self, jobs=None, strict=False, note=None, shared=None):
        self.jobs, self.strict, self.note, self.shared = jobs, strict, note, shared

    def run(self, cells, traces, options):
        """Yield the record of each cell as it finishes (traces: prepared into files)."""
        jobs = [(c, options, traces[c["trace"]].path, traces[c["trace"]].footprint, self.strict, self.shared)
                for c in cells]
        yield from each(_run_local, jobs, self.jobs, self.note)
