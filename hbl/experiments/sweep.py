"""Grids of simulations (traces x HSS x policies x parameters x seeds) on Dask distributed: the
experiment engine (hbl.experiments.engine, which `hbl compare` runs on local processes) with a Dask executor
and a journal.

    from hbl.experiments.sweep import Grid, run
    grid = Grid(traces=["bundled:hm_0"], hss=["cost"], policies=["fast-only", "lru"], seeds=[1, 2])
    summary = run(grid, "out/", workers=2)          # or address="tcp://scheduler:8786"

Each cell is one call of hbl.sim.simulate on a worker. The driver reads every trace once,
converts it to the native format and scatters the bytes into the cluster, so a worker never
needs the driver's files. A cell's key is the hash of its inputs (the trace's records, the
hbl version, the HSS, policy, parameters, seed and simulator options): DIR/cells.jsonl is an
append-only journal of finished cells (one JSON line each, written as the cell finishes), so
a rerun after a crash or Ctrl-C computes only the cells the journal lacks. The tidy tables
DIR/results.csv (always) and DIR/results.parquet (when pyarrow is installed) are rebuilt from
the journal every few seconds and at the end.
"""
import dataclasses
import json
import os
import sys
import tempfile
import time

from hbl import __version__
from hbl.experiments import engine, results
from hbl.experiments.engine import Grid, prepare
from hbl.errors import HblError
from hbl.progress import Progress
from hbl.experiments.results import JOURNAL, read_journal

MANIFEST = "sweep.json"
CSV_TABLE = "results.csv"
PARQUET_TABLE = "results.parquet"
FLUSH_EVERY = 5.0   # seconds between rewrites of the tidy tables


def need_dask():
    try:
        import distributed
    except ImportError:
        raise HblError("hbl sweep needs Dask distributed: pip install 'hbl[sweep]' "
                       "(scripts/bootstrap.sh installs it)") from None
    return distributed


def parse_grid_item(text):
    """'smq.promote=2,4,8' -> ('smq.promote', [2.0, 4.0, 8.0])."""
    name, eq, values = text.partition("=")
    try:
        vals = [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        vals = []
    if not eq or not name.strip() or not vals:
        raise HblError("--param-grid %r: want NAME=V1,V2,... (numbers; NAME or POLICY.NAME)" % text)
    return name.strip(), vals


def load_spec(path):
    """A sweep spec file (TOML, see the README): (Grid, {'out', 'workers', 'address'})."""
    try:
        import tomllib
    except ImportError:
        raise HblError("%s: spec files need Python 3.11 or later (tomllib)" % path) from None
    try:
        with open(path, "rb") as f:
            spec = tomllib.load(f)
    except OSError as exc:
        raise HblError("%s: %s" % (path, exc.strerror)) from None
    except tomllib.TOMLDecodeError as exc:
        raise HblError("%s: %s" % (path, exc)) from None
    known = {"traces", "hss", "policies", "seeds", "param_grid", "options", "format", "lenient",
             "reader_options", "out", "workers", "address"}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise HblError("%s: unknown key%s %s (have: %s)" % (path, "s" * (len(unknown) > 1),
                                                           ", ".join(unknown), ", ".join(sorted(known))))
    seeds = spec.get("seeds", 1)
    as_list = lambda v: [v] if isinstance(v, str) else list(v)
    try:
        grid = Grid(traces=as_list(spec.get("traces", [])), hss=as_list(spec.get("hss", ["cost"])),
                    policies=as_list(spec.get("policies", [])),
                    param_grid={k: [float(x) for x in as_list(v)] for k, v in spec.get("param_grid", {}).items()},
                    seeds=list(range(1, int(seeds) + 1)) if isinstance(seeds, int) else [int(s) for s in seeds],
                    options=dict(spec.get("options", {})), fmt=spec.get("format"),
                    lenient=bool(spec.get("lenient", False)), reader_options=dict(spec.get("reader_options", {})))
    except (TypeError, ValueError) as exc:
        raise HblError("%s: %s" % (path, exc)) from None
    return grid, {k: spec[k] for k in ("out", "workers", "address") if k in spec}


# ---- on the worker ----

def _local_trace(data, digest):
    """The scattered bytes as a native file on this machine (written once per worker; the
    simulator memory-maps it)."""
    try:
        from distributed import get_worker
        where = get_worker().local_directory
    except (ImportError, ValueError):
        where = tempfile.gettempdir()
    path = os.path.join(where, "hbl-%s.hbltrace" % digest[:32])
    if not os.path.exists(path):
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    return path


def run_cell(cell, options, data, digest, footprint, version):
    """One cell on a Dask worker (engine.run_cell on the scattered bytes, written once to a local
    file): {'result': simulate's dict} or {'error': message}, with wall time and worker."""
    def local():
        if version != __version__:
            raise HblError("worker runs hbl %s, the sweep hbl %s" % (__version__, version))
        return _local_trace(data, digest)
    return engine.run_cell(cell, options, local, footprint)


# ---- results ----

def write_tables(out_dir, records):
    """results.csv (always) and results.parquet (with pyarrow), each replaced atomically."""
    rows = [results.tidy_row(r) for r in records.values()]
    results.write(os.path.join(out_dir, CSV_TABLE), rows)
    if results.parquet_available():
        results.write(os.path.join(out_dir, PARQUET_TABLE), rows)


def dask_client(distributed, workers, address):
    """A client of the cluster at address, or of a new local one on loopback."""
    import logging
    if address:
        try:
            return distributed.Client(address, timeout=30), None
        except (OSError, TimeoutError) as exc:
            raise HblError("cannot reach the Dask scheduler at %s: %s" % (address, exc)) from None
    # everything on loopback: the scheduler, the workers, and the scheduler's HTTP endpoints
    # (health and metrics; the dashboard only if bokeh is installed) on a free port. Dask's own
    # logs stay quiet (a heartbeat cut by the shutdown is logged as an error): a cell's failure,
    # including a worker that died under it, is in its record.
    cluster = distributed.LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                       processes=True, host="127.0.0.1", scheduler_port=0,
                                       dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL)
    return distributed.Client(cluster), cluster


class Session:
    """A Dask client, of a new cluster on loopback (started at the first cell to run) or of the
    one at address, that runs cells and journals each in DIR as it finishes."""

    def __init__(self, out_dir, workers=None, address=None):
        self.distributed = need_dask()
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise HblError("--out %s: a file, not a directory (a sweep writes cells.jsonl and its tables there)"
                           % out_dir)
        os.makedirs(out_dir, exist_ok=True)
        self.out_dir, self.workers, self.address = out_dir, workers, address
        self.records = read_journal(out_dir)
        self.client = self.cluster = None
        self.shared = {}        # trace name -> its scattered bytes
        self.last_flush = time.time()

    def __enter__(self):
        return self

    def __exit__(self, *exc):   # also on Ctrl-C: the tables hold every cell finished so far
        write_tables(self.out_dir, self.records)
        if self.client:
            self.client.close()
        if self.cluster:
            self.cluster.close()

    def connect(self):
        if self.client is None:
            self.client, self.cluster = dask_client(self.distributed, self.workers, self.address)
        return self.client

    def done(self, cell):
        return self.records.get(cell["key"], {}).get("status") == "ok"

    def run(self, cells, traces, options):
        """Yield the journal record of each cell as it finishes; cells already done are left out."""
        todo = {c["key"]: c for c in cells if not self.done(c)}
        if not todo:
            return
        client = self.connect()
        for name in {c["trace"] for c in todo.values()} - set(self.shared):
            self.shared[name] = client.scatter(traces[name].data)
        futures = {client.submit(run_cell, c, options, self.shared[c["trace"]], traces[c["trace"]].digest,
                                 traces[c["trace"]].footprint, __version__, key="hbl-cell-" + k): c
                   for k, c in todo.items()}
        with open(os.path.join(self.out_dir, JOURNAL), "a") as journal:
            for fut in self.distributed.as_completed(futures):
                cell = futures.pop(fut)
                try:
                    out = fut.result()
                except Exception as exc:    # the worker died (KilledWorker) or the task was lost
                    out = {"error": "%s: %s" % (type(exc).__name__, exc)}
                rec = engine.record(cell, options, out)
                journal.write(json.dumps(rec, default=str) + "\n")
                journal.flush()
                self.records[cell["key"]] = rec
                if time.time() - self.last_flush > FLUSH_EVERY:
                    write_tables(self.out_dir, self.records)
                    self.last_flush = time.time()
                yield rec


def run(grid, out_dir, workers=None, address=None, progress=True):
    """Run the grid's missing cells; returns {'cells', 'computed', 'skipped', 'failed', 'out'} and, when a
    cell failed, 'first_error': the first failed cell and its error."""
    grid.check()
    options = dict(grid.options)
    with Session(out_dir, workers, address) as session:
        traces, cells = prepare(grid, options, progress=progress)
        with open(os.path.join(out_dir, MANIFEST), "w") as f:
            json.dump(dict(dataclasses.asdict(grid), hbl=__version__, cells=len(cells)), f, indent=1, default=str)
        todo = [c for c in cells if not session.done(c)]
        summary = dict(cells=len(cells), computed=0, skipped=len(cells) - len(todo), failed=0, out=out_dir)
        bar = Progress("sweep", total=len(cells), unit="cells", initial=summary["skipped"], quiet=not progress)
        try:
            for rec in session.run(todo, traces, options):
                summary["computed"] += 1
                summary["failed"] += rec["status"] != "ok"
                if rec["status"] != "ok" and "first_error" not in summary:   # what a user reads first
                    summary["first_error"] = "%s on %s (%s, seed %s%s): %s" % (
                        rec["policy"], rec["trace"], rec["hss"], rec["seed"],
                        "".join(", %s=%g" % kv for kv in sorted(rec.get("params", {}).items())), rec.get("error"))
                bar.update(note="%d failed" % summary["failed"] if summary["failed"] else None)
        except KeyboardInterrupt:
            bar.close()
            print("sweep: interrupted after %d of %d cells; the same command resumes" % (
                summary["computed"], len(todo)), file=sys.stderr)
            raise
        finally:
            bar.close()
    return summary
