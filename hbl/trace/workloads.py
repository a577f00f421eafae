"""Real workloads: recipes that run a real application and capture its block I/O.

    hbl workloads list
    sudo hbl workloads capture pgbench --duration 2m
    hbl simulate --trace workload:pgbench          # the whole capture, shipped with hbl (or your own)
    hbl simulate --trace apps:pgbench              # its first 20,000 requests, shipped with hbl

A capture makes a sparse file in a new temporary directory (under $HBL_WORKLOADS_TMP,
default /var/tmp), a loop device over it (direct I/O, so the host's page cache does not
sit between the loop device and its file), an ext4 file system on it, and runs the
application there, inside a memory cgroup that bounds its page cache, while `hbl trace`'s
libbpf capture (fast mode) records the loop device's requests into the native format. Services
(PostgreSQL, MariaDB) run as their own processes with their data directories on the
scratch file system; everything is stopped and removed afterwards (hbl/trace/scratch.py). The applications
come from Debian's packages (`scripts/bootstrap.sh --workloads`); nothing is installed
here. The recipes themselves (what each application runs) are in hbl/trace/recipes/, one file each.
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

from hbl.errors import HblError, TraceError
from hbl.trace.recipes import RECIPES
from hbl.trace.scratch import MiB, Scratch, terminate

CACHE_DIR = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "hbl" / "workloads"
APPS_DIR = pathlib.Path(__file__).resolve().parent.parent / "data" / "traces" / "apps"
SHIPPED_DIR = pathlib.Path(__file__).resolve().parent.parent / "data" / "traces" / "workloads"
#: The quanta (ns) of time and latency in the shipped captures (hbl.trace.packed says why).
PACK_QUANTA = {"time_quantum_ns": 1000, "latency_quantum_ns": 10_000}
BOOTSTRAP = "scripts/bootstrap.sh --workloads"
DEFAULT_REQUESTS = 1_000_000
DEFAULT_DURATION = 1800.0


def trace_path(name):
    return CACHE_DIR / (name + ".hbltrace")


def shipped_path(name):
    return SHIPPED_DIR / (name + ".hblz")


def resolve(spec):
    """The file behind workload:NAME (a capture of this machine's cache, else the one shipped with
    hbl) or apps:NAME (a shipped slice)."""
    kind, name = spec.split(":", 1)
    if kind == "apps":
        path = APPS_DIR / (name + ".csv.gz")
        if not path.exists():
            raise TraceError(spec, "no application slice %r (have: %s)" % (name, ", ".join(app_slices()) or "none"))
        return str(path)
    if name not in RECIPES:
        raise TraceError(spec, "no workload recipe %r (have: %s)" % (name, ", ".join(RECIPES)))
    for path in (trace_path(name), shipped_path(name)):
        if path.exists():
            return str(path)
    raise TraceError(spec, "not shipped with this hbl and not captured here (no %s); capture it with: "
                     "sudo hbl workloads capture %s" % (trace_path(name), name))


def shipped():
    """Names of the full captures shipped with hbl (workload:NAME on any machine)."""
    return sorted(p.stem for p in SHIPPED_DIR.glob("*.hblz"))


def app_slices():
    """Names of the shipped application slices (apps:NAME)."""
    return sorted(p.name[:-len(".csv.gz")] for p in APPS_DIR.glob("*.csv.gz"))




def get(name):
    if name not in RECIPES:
        raise HblError("no workload recipe %r (have: %s)" % (name, ", ".join(RECIPES)))
    return RECIPES[name]


def meta_of(name):
    try:
        with open(trace_path(name).with_suffix(".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def listing():
    rows = []
    for r in RECIPES.values():
        path = trace_path(r.name)
        meta = meta_of(r.name) if path.exists() else None
        missing = r.tools()[1]
        rows.append({"name": r.name, "application": r.application, "package": r.package, "version": r.version(),
                     "runs": r.runs, "expected": r.expected, "page_cache_bound": r.cache_bound,
                     "synthetic": r.synthetic, "installed": not missing,
                     "missing_packages": sorted({p for _, p in missing}),
                     "captured": path.exists(), "trace": str(path),
                     "shipped": str(shipped_path(r.name)) if shipped_path(r.name).exists() else None,
                     "captured_requests": meta and meta.get("requests"),
                     "slice": ("apps:" + r.name) if r.name in app_slices() else None})
    return rows


# ---- capture ------------------------------------------------------------------------

def check(recipe):
    """Clear errors before anything is set up: root, the recipe's applications."""
    missing = recipe.tools()[1]
    if missing:
        pkgs = sorted({p for _, p in missing})
        raise HblError("%s needs %s (Debian: %s), which is not installed: run %s (it installs %s)" % (
            recipe.name, ", ".join(m for m, _ in missing), " ".join(pkgs), BOOTSTRAP, " ".join(pkgs)))
    if os.geteuid() != 0:
        raise HblError("hbl workloads capture needs root (loop devices, mounts, cgroups, eBPF): run with sudo")


STAT_FIELDS = ("reads", "read_merges", "read_sectors", "read_ms", "writes", "write_merges", "write_sectors",
               "write_ms", "in_flight", "io_ms", "queue_ms", "discards", "discard_merges", "discard_sectors",
               "discard_ms", "flushes", "flush_ms")


def device_stat(dev):
    """The kernel's own counters of a block device (/sys/block/NAME/stat), by field name."""
    with open("/sys/block/%s/stat" % os.path.basename(dev)) as f:
        return dict(zip(STAT_FIELDS, (int(v) for v in f.read().split())))


def capture(name, duration=DEFAULT_DURATION, requests=DEFAULT_REQUESTS, out=None, say=None, progress_every=10.0):
    """Run the recipe and capture its block I/O into out (default: the cache). Returns a summary dict."""
    from hbl.capture import Capture
    from hbl.trace import files as tracemod
    recipe = get(name)
    say = say or (lambda m: print(m, file=sys.stderr, flush=True))
    check(recipe)
    out = str(out or trace_path(name))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    stop = {"now": False}
    sigs = (signal.SIGINT, signal.SIGTERM)

    def interrupt(*_):   # while setting up or tearing down: unwind, cleaning up on the way
        raise KeyboardInterrupt

    old = [signal.signal(s, interrupt) for s in sigs]
    t_start = time.time()
    try:
        with Scratch(recipe, say) as sc:
            t = time.time()
            say("%s: preparing (not captured)" % name)
            recipe.prepare(sc)
            subprocess.run(["sync", "-f", sc.mnt])
            prepare_s = time.time() - t
            steps = recipe.steps(sc)
            # fast mode: one program at completion, no in-flight table keyed by sector, in which
            # two requests in flight on the same sector (a hot page at queue depth 16) would
            # leave one of them out of the trace (seen: 13% of fio-zipf's requests)
            cap = Capture([sc.loop], fast=True)
            w = tracemod.writer(out + ".part", "native",
                                source="hbl workloads capture %s (%s %s)" % (name, recipe.application,
                                                                             recipe.version() or "?"))
            try:
                stat0 = device_stat(sc.loop)
                for s in sigs:    # while capturing: stop the application, keep what was captured
                    signal.signal(s, lambda *_: stop.__setitem__("now", True))
                t0 = time.time()
                nbytes, commands = _run_steps(name, sc, steps, cap, w, duration, requests, stop, say,
                                              progress_every)
                for s in sigs:
                    signal.signal(s, interrupt)
                stat1 = device_stat(sc.loop)
                st = cap.stats()
            finally:
                cap.close()
                w.close()
            seconds = time.time() - t0
            sc.stop_services()
        sort_by_issue(out + ".part", out)
    finally:
        for s, h in zip(sigs, old):
            signal.signal(s, h)
        if os.path.exists(out + ".part"):
            os.unlink(out + ".part")
    meta = {"name": name, "application": recipe.application, "package": recipe.package,
            "version": recipe.version(), "runs": recipe.runs, "page_cache_bound": recipe.cache_bound,
            "synthetic": recipe.synthetic, "commands": commands, "trace": out, "requests": w.count,
            "bytes": nbytes, "capture_seconds": seconds, "prepare_seconds": prepare_s,
            "total_seconds": time.time() - t_start, "lost": st["lost"], "lost_ringbuf": st["lost_ringbuf"],
            "lost_inflight": st["lost_inflight"], "lost_missed": st["lost_missed"], "interrupted": stop["now"],
            "device": os.path.basename(sc.loop), "scratch": sc.tmp,
            "device_stat": {k: stat1[k] - stat0[k] for k in STAT_FIELDS if k != "in_flight"},
            "limits": {"duration_s": duration, "requests": requests},
            "captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "kernel": os.uname().release}
    with open(os.path.splitext(out)[0] + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    return meta


# ---- what the captures look like ---------------------------------------------------

SLICE_REQUESTS = 20_000


def make_slice(name, requests=SLICE_REQUESTS, out_dir=APPS_DIR):
    """The first `requests` requests of the cached capture as gzipped MSR Cambridge CSV (apps:NAME).

    Flushes and discards have no MSRC spelling and are left out (counted in the result). Only from a
    capture of this machine: the shipped workload:NAME has its times and latencies rounded
    (PACK_QUANTA), and a slice of it would overwrite the shipped apps:NAME, cut from the capture itself."""
    import gzip
    from hbl import record
    from hbl.trace.files import open_file, writer
    resolve("workload:" + name)     # an unknown recipe: its own error
    src = trace_path(name)
    if not src.exists():
        raise HblError("no capture of %s on this machine (%s): sudo hbl workloads capture %s (the shipped "
                       "workload:%s has its times and latencies rounded; apps:%s, where shipped, was cut from "
                       "the capture itself)" % (name, src, name, name, name))
    parts, n = [], 0
    for chunk in open_file(src):
        parts.append(chunk[:requests - n])
        n += len(parts[-1])
        if n >= requests:
            break
    tmp = os.path.join(str(out_dir), name + ".csv.part")
    w = writer(tmp, "msrc", hostname=name)
    w.write(record.concat(parts))
    w.close()
    with open(tmp, "rb") as f, gzip.GzipFile(os.path.join(str(out_dir), name + ".csv.gz"), "wb", mtime=0) as g:
        shutil.copyfileobj(f, g)
    os.unlink(tmp)
    return {"name": name, "requests": n, "written": w.count, "dropped_flush_discard": w.dropped,
            "bytes": os.path.getsize(os.path.join(str(out_dir), name + ".csv.gz"))}


def pack(name, out_dir=SHIPPED_DIR):
    """This machine's capture of NAME as a packed trace in out_dir (NAME.hblz, times and latencies
    in PACK_QUANTA): what is shipped as workload:NAME."""
    from hbl.trace.files import open_file, writer
    src = trace_path(name)
    if not src.exists():
        raise HblError("no capture of %s on this machine (%s): sudo hbl workloads capture %s" % (name, src, name))
    reader = open_file(str(src))
    out = os.path.join(str(out_dir), name + ".hblz")
    with writer(out + ".part", "packed", source=reader.source, **PACK_QUANTA) as w:
        for chunk in reader:
            w.write(chunk)
    os.replace(out + ".part", out)
    size = os.path.getsize(out)
    return {"name": name, "out": out, "requests": w.count, "bytes": size, "bytes_per_request": size / w.count}


def reuse_percentiles(info, qs=(50, 90, 99)):
    """Reuse-distance percentiles (distinct pages, upper bound of trace-info's power-of-two bins)."""
    hist = info["reuse_distance"]["histogram"]
    total = sum(hist.values())
    out = {}
    for q in qs:
        acc = 0
        for k, c in hist.items():
            acc += c
            if total and acc * 100 >= q * total:
                out["p%d" % q] = int(k.split("-")[1])
                break
        else:
            out["p%d" % q] = None
    return out


def summary(name):
    """trace-info of a cached capture with its capture record and reuse percentiles."""
    from hbl.trace.info import trace_info
    from hbl.trace.files import open_file
    info = trace_info(open_file(resolve("workload:" + name)))
    meta = meta_of(name) or {}
    io = info["reads"] + info["writes"]
    return {"name": name, "application": meta.get("application"), "version": meta.get("version"),
            "synthetic": meta.get("synthetic"), "requests": info["requests"],
            "read_share": info["reads"] / io if io else 0.0, "footprint_bytes": info["footprint_bytes"],
            "reuse_distance_pages": reuse_percentiles(info), "lost": meta.get("lost"),
            "capture_seconds": meta.get("capture_seconds"), "prepare_seconds": meta.get("prepare_seconds"),
            "commands": meta.get("commands"), "captured_at": meta.get("captured_at"), "trace_info": info}


def sort_by_issue(src, dst):
    """Rewrite a native trace in issue-time order (records arrive at completion, slightly out of
    order under concurrency; replay wants arrivals in order), then remove src if it differs.

    An empty write is a cache flush (fsync's REQ_PREFLUSH with no data, which the kernel
    counts as a write in /sys/block stat): it is written as one."""
    import numpy as np
    from hbl import record
    from hbl.trace.files import load_file, writer
    data, reader = load_file(src)
    data = data[np.argsort(data["time_ns"], kind="stable")]
    data["op"][(data["op"] == record.WRITE) & (data["length"] == 0)] = record.FLUSH
    w = writer(dst + ".sorting", "native", source=reader.source)
    w.write(data)
    w.close()
    os.replace(dst + ".sorting", dst)
    if os.path.abspath(src) != os.path.abspath(dst):
        os.unlink(src)


def _run_steps(name, sc, steps, cap, w, duration, requests, stop, say, progress_every):
    """Run the steps one after another while writing the capture to w; (bytes, commands run)."""
    t0 = last = time.time()
    n = nbytes = 0
    commands = []

    def take(timeout_ms):
        nonlocal n, nbytes
        b = cap.poll(timeout_ms)
        if len(b):
            w.write(b)
            n += len(b)
            nbytes += int(b["length"].sum())

    for step in steps:
        if stop["now"] or n >= requests or time.time() - t0 >= duration:
            break
        commands.append(" ".join(step.argv))
        lim_t = (duration - (time.time() - t0)) * (step.share or 1.0)
        lim_n = (requests - n) * (step.share or 1.0)
        ts, ns = time.time(), n
        say("%s: [%6.0fs] %s: %s" % (name, ts - t0, step.label, " ".join(step.argv)))
        proc = sc.spawn(step.argv, stdin=step.stdin)
        try:
            while True:
                take(100)
                now = time.time()
                if now - last >= progress_every:
                    say("%s: [%6.0fs] %s: %d requests (%.1f k/s), %.0f MiB, lost %d" % (
                        name, now - t0, step.label, n, (n - ns) / max(now - ts, 1e-9) / 1e3, nbytes / MiB,
                        cap.stats()["lost"]))
                    last = now
                if proc.poll() is not None:
                    if proc.returncode:
                        raise HblError("%s: %s failed (exit status %d):\n%s" % (
                            name, step.label, proc.returncode, sc.log_tail()))
                    break
                if stop["now"] or now - ts >= lim_t or n - ns >= lim_n:
                    break
        finally:
            terminate(proc)
    # requests in flight when the application stopped complete within a moment
    t_end = time.time() + 0.5
    while time.time() < t_end:
        take(50)
    return nbytes, commands
