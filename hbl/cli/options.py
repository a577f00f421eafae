"""The options several commands share: which trace and how to read it (simulate, compare, sweep,
trace-info, convert), how to simulate (simulate, compare, sweep), and the checks of both that
run before any trace is read."""
import dataclasses
import json
import math
import os

from hbl.cmdline import U32, nonnegative, page_size, positive, whole
from hbl.errors import HblError, show

EPILOG_TRACES = """trace names: a file (format auto-detected, or --format), bundled:NAME for a
bundled MSR Cambridge slice (hm_0, hm_1, mds_0, proj_0, rsrch_1, rsrch_2, wdev_1),
synth:PRESET[:key=value,...] for a seeded synthetic workload
(presets: uniform, zipf, sequential, mixed, phases, burst, log, hm, prxy, src, web, usr, proj),
workload:NAME for a real application's whole capture (shipped with hbl, or your own from
hbl workloads capture), apps:NAME for its first 20,000 requests, workload:NAME@START-END for
requests START..END of a capture, and workload:A+B for captures replayed together, each tenant
on its own address range."""


def trace_args(p, many=False, default=None):
    """--trace (with many: repeatable; default says what runs without one) and how to read it."""
    if many:
        p.add_argument("--trace", action="append", metavar="TRACE",
                       help="trace to replay (repeatable%s)" % ("; default: " + default if default else ""))
    p.add_argument("--format", dest="fmt", metavar="FMT",
                   help="input format: msrc, blkparse, spc, alibaba, tencent, fio, csv, native, "
                        "packed (default: detected)")
    p.add_argument("--lenient", action="store_true", help="skip malformed lines (counted) instead of failing")
    p.add_argument("--columns", help="csv format: column mapping, e.g. time=0,offset=1,length=2,op=3")
    p.add_argument("--delimiter", help="csv format: field separator (default ,)")
    p.add_argument("--time-unit", choices=["ns", "us", "ms", "s"], help="csv format: unit of the time column")
    p.add_argument("--offset-unit", choices=["bytes", "sectors", "kib", "pages"],
                   help="csv format: unit of offset (and length) columns")
    p.add_argument("--header", action="store_true", default=None, help="csv format: first line is a header")
    p.add_argument("--blk-action", choices=["D", "C", "Q"],
                   help="blkparse format: keep issue (D, default), complete (C) or queue (Q) events")


def reader_options(a):
    opts = {}
    if a.columns:
        opts.update(columns=a.columns, delimiter=a.delimiter or ",", time_unit=a.time_unit or "ns",
                    offset_unit=a.offset_unit or "bytes", length_unit="bytes", header=bool(a.header))
    elif any((a.delimiter, a.time_unit, a.offset_unit, a.header)):
        raise HblError("--delimiter, --time-unit, --offset-unit and --header go with --format csv --columns")
    if a.blk_action:
        opts["action"] = a.blk_action
    return opts


def sim_args(p):
    p.add_argument("--fast-capacity", metavar="CAP",
                   help="fast-device capacity: fraction (0.1), percentage (10%%) of the trace footprint, "
                        "or a size (512M, 2G); default 10%% as in Sibyl's evaluation")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="policy parameter (repeatable), e.g. --param promote=8 (see `hbl policies`); with "
                        "several policies NAME goes to each that takes it, POLICY.NAME to POLICY only (and wins "
                        "over NAME there); a name given twice is refused")
    p.add_argument("--seed", type=whole(0, U32), default=1, help="random seed (default 1)")
    p.add_argument("--queue-depth", type=whole(1, 1 << 16),
                   help="closed-loop replay (the default, as the papers replay): a request is issued when "
                        "one of the N before it completes, trace timestamps ignored (default 1)")
    p.add_argument("--open-loop", action="store_true",
                   help="replay at the trace's timestamps instead (queues build when the trace's bursts "
                        "outrun the modelled devices)")
    p.add_argument("--speed", type=positive(1e6), help="open loop at trace time / F (implies --open-loop)")
    p.add_argument("--background-backlog", type=whole(1, 1 << 24), metavar="PAGES",
                   help="background I/O (promotions, evictions, write-backs) queued per device at most; when "
                        "full, a request that needs room waits for it (default 256 = 1 MiB of 4 KiB pages, "
                        "dm-cache's migration threshold)")
    p.add_argument("--background-rate", type=nonnegative(1e6), metavar="MB/S",
                   help="cap on background I/O per device (default 0: none; it runs in idle time only)")
    p.add_argument("--background-idle", type=nonnegative(1e6), metavar="MS",
                   help="idle time a device needs before background I/O starts (default 0)")
    p.add_argument("--page-size", type=page_size,
                   help="bytes per page, the unit of placement, a power of two (default 4096)")
    p.add_argument("--migrate-every", type=whole(1, U32), help="requests between migration rounds (default 1000)")
    p.add_argument("--migrate-max", type=whole(1, 1 << 16), help="moves per migration round at most (default 64)")


def sim_options(a):
    opts = dict(speed=a.speed, queue_depth=a.queue_depth, open_loop=a.open_loop or None, page_size=a.page_size,
                migrate_every=a.migrate_every, migrate_max=a.migrate_max,
                background_backlog=a.background_backlog, background_rate_mb_s=a.background_rate,
                background_idle_ms=a.background_idle)
    if (a.speed is not None or a.open_loop) and a.queue_depth is not None:
        raise HblError("--queue-depth is for closed-loop replay, --open-loop and --speed for open loop: choose one")
    return {k: v for k, v in opts.items() if v is not None}


def check_sim(a, hss_names):
    """The simulation options no argparse type can check alone, before any trace is read:
    the HSS configurations (their JSON profiles included), the fast capacity against the
    page size, and the policy parameters."""
    from hbl.devices import load_hss
    from hbl.sim.registry import parse_params
    for name in hss_names:
        if name.endswith(".json"):
            _check_hss_json(name)
        _check_profiles(name, load_hss(name, a.fast_capacity))
    if a.fast_capacity is not None:
        from hbl.devices import parse_capacity
        cap, page = parse_capacity(a.fast_capacity, "--fast-capacity"), a.page_size or 4096
        if isinstance(cap, int) and not page <= cap <= 1 << 60:
            raise HblError("--fast-capacity %s: %d bytes is %s (for a fraction write 0.1 or 10%%)"
                           % (show(a.fast_capacity), cap, "less than one page" if cap < page else "over 1 EiB"))
    parse_params(a.param)


def _check_hss_json(name):
    """Every value of a JSON device profile, past its name and description, is a number:
    the loader compares them, and a string there would fail as a TypeError."""
    try:
        with open(name) as f:
            spec = json.load(f)
    except (OSError, ValueError):
        return      # load_hss reports unreadable and invalid files with their line
    devices = spec.get("devices") if isinstance(spec, dict) else None
    for i, d in enumerate(devices if isinstance(devices, list) else []):
        profile = d.get("profile") if isinstance(d, dict) else None
        for key, v in (profile.items() if isinstance(profile, dict) else ()):
            if key not in ("name", "description") and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise HblError("%s: device %d: %s %s is not a number" % (name, i, key, show(json.dumps(v))))


def _check_profiles(name, hss):
    """Every numeric field of every device profile is a finite number of its declared type
    (a JSON file can hold 2.5 channels, a string latency or NaN)."""
    for i, p in enumerate(hss.devices):
        for f in dataclasses.fields(p):
            v = getattr(p, f.name)
            kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
            if kind not in ("int", "float"):
                continue
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
            if not ok or (kind == "int" and v != int(v)):
                raise HblError("%s: device %d: %s %s must be a finite %snumber >= 0"
                               % (name, i, f.name, show(v), "whole " if kind == "int" else ""))


def check_output_dir(*paths):
    """Before any work: every file the command will write can be created, and none is a device, a FIFO or a
    socket (outputs are written whole and renamed into place: a rename onto /dev/null or /dev/sdX replaces
    the device node with a file)."""
    for path in paths:
        if path is None:
            continue
        out_dir = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(out_dir):
            raise HblError("%s: no such directory" % out_dir)
        if os.path.isdir(path):
            raise HblError("%s: is a directory" % path)
        if os.path.exists(path) and not os.path.isfile(path):
            raise HblError("%s: not a regular file (a device, a FIFO or a socket): hbl writes a file whole and "
                           "renames it into place, which would replace it; leave the option out to write nothing"
                           % path)


#: What matplotlib's savefig writes by a file's extension (no extension: PNG, its default)
CHART_EXTENSIONS = ("png", "svg", "svgz", "pdf", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


def chart_extensions():
    """The extensions the installed matplotlib writes (pgf, raw, rgba, gif, ... besides CHART_EXTENSIONS,
    by version), the common ones first; CHART_EXTENSIONS without matplotlib."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        return CHART_EXTENSIONS
    writes = set(FigureCanvasBase.get_supported_filetypes())
    return tuple(e for e in CHART_EXTENSIONS if e in writes) + tuple(sorted(writes - set(CHART_EXTENSIONS)))


def check_chart_path(path, flag="--plot"):
    """Before any work: a chart's file name says a format matplotlib writes (else its ValueError came
    after the whole run)."""
    ext = os.path.splitext(path or "")[1].lstrip(".").lower()
    if ext and ext not in CHART_EXTENSIONS and ext not in chart_extensions():
        raise HblError("%s %s: give a file ending in %s"
                       % (flag, path, ", ".join("." + e for e in chart_extensions())))


def check_distinct(*named):
    """Before any work: (flag, path) pairs, none of them the same file as another (an input given
    with its flag too): the later write would replace the earlier, or the input read."""
    seen = {}
    for flag, path in named:
        if not path:
            continue
        key = os.path.realpath(path)
        if key in seen:
            raise HblError("%s %s is also %s: give another file" % (flag, path, seen[key]))
        seen[key] = "%s %s" % (flag, path) if flag else "the input"
