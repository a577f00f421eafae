"""The `hbl` command line."""
import argparse
import dataclasses
import json
import math
import os
import shlex
import sys

from hbl import __version__
from hbl.cmdline import (U32, nonnegative, page_size, parse_duration, positive, print_json, whole,
                         write_json)
from hbl.errors import HblError, show

EPILOG_TRACES = """trace names: a file (format auto-detected, or --format), bundled:NAME for a
bundled MSR Cambridge slice (hm_0, hm_1, mds_0, proj_0, rsrch_1, rsrch_2, wdev_1),
synth:PRESET[:key=value,...] for a seeded synthetic workload
(presets: uniform, zipf, sequential, mixed, phases, hm, prxy, src, web, usr, proj),
workload:NAME for a real application's whole capture (shipped with hbl, or your own from
hbl workloads capture), apps:NAME for its first 20,000 requests, and workload:A+B for
captures replayed together, each tenant on its own address range."""


class Parser(argparse.ArgumentParser):
    """Usage errors in the one style of every other error: one line, exit status 2."""

    def error(self, message):
        print("hbl: error: %s (see %s --help)" % (message, self.prog), file=sys.stderr)
        sys.exit(2)


def _trace_args(p, many=False):
    if many:
        p.add_argument("--trace", action="append", metavar="TRACE",
                       help="trace to replay (repeatable; default: bundled MSR slices + synthetic suite)")
    p.add_argument("--format", dest="fmt", metavar="FMT",
                   help="input format: msrc, blkparse, spc, alibaba, tencent, fio, csv, native "
                        "(default: detected)")
    p.add_argument("--lenient", action="store_true", help="skip malformed lines (counted) instead of failing")
    p.add_argument("--columns", help="csv format: column mapping, e.g. time=0,offset=1,length=2,op=3")
    p.add_argument("--delimiter", help="csv format: field separator (default ,)")
    p.add_argument("--time-unit", choices=["ns", "us", "ms", "s"], help="csv format: unit of the time column")
    p.add_argument("--offset-unit", choices=["bytes", "sectors", "kib", "pages"],
                   help="csv format: unit of offset (and length) columns")
    p.add_argument("--header", action="store_true", default=None, help="csv format: first line is a header")
    p.add_argument("--blk-action", choices=["D", "C", "Q"],
                   help="blkparse format: keep issue (D, default), complete (C) or queue (Q) events")


def _reader_options(a):
    opts = {}
    if a.columns:
        opts.update(columns=a.columns, delimiter=a.delimiter or ",", time_unit=a.time_unit or "ns",
                    offset_unit=a.offset_unit or "bytes", length_unit="bytes", header=bool(a.header))
    elif any((a.delimiter, a.time_unit, a.offset_unit, a.header)):
        raise HblError("--delimiter, --time-unit, --offset-unit and --header go with --format csv --columns")
    if a.blk_action:
        opts["action"] = a.blk_action
    return opts


def _sim_args(p):
    p.add_argument("--fast-capacity", metavar="CAP",
                   help="fast-device capacity: fraction (0.1), percentage (10%%) of the trace footprint, "
                        "or a size (512M, 2G); default 10%% as in Sibyl's evaluation")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="policy parameter (repeatable), e.g. --param promote=8 (see `hbl policies`)")
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


def _sim_options(a):
    opts = dict(speed=a.speed, queue_depth=a.queue_depth, open_loop=a.open_loop or None, page_size=a.page_size,
                migrate_every=a.migrate_every, migrate_max=a.migrate_max,
                background_backlog=a.background_backlog, background_rate_mb_s=a.background_rate,
                background_idle_ms=a.background_idle)
    if (a.speed is not None or a.open_loop) and a.queue_depth is not None:
        raise HblError("--queue-depth is for closed-loop replay, --open-loop and --speed for open loop: choose one")
    return {k: v for k, v in opts.items() if v is not None}


def _check_sim(a, hss_names):
    """The simulation options no argparse type can check alone, before any trace is read:
    the HSS configurations (their JSON profiles included), the fast capacity against the
    page size, and the policy parameters."""
    from hbl.devices import load_hss
    from hbl.sim import parse_params
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


def _check_output_dir(*paths):
    """Before any work: every file the command will write can be created."""
    for path in paths:
        if path is None:
            continue
        out_dir = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(out_dir):
            raise HblError("%s: no such directory" % out_dir)
        if os.path.isdir(path):
            raise HblError("%s: is a directory" % path)


# ---- commands ----

def cmd_simulate(a):
    from hbl.devices import load_hss
    from hbl.sim import Simulator, replay_label, simulate
    plugin, policy = None, a.policy
    if policy == "python":
        raise HblError("--policy python needs a plugin class: --policy python:FILE.py:CLASS")
    _check_sim(a, [a.hss])
    if not policy.startswith("python:"):   # the policy checks its parameters when built: build it now
        hss = load_hss(a.hss, a.fast_capacity)
        Simulator(hss, policy, [1] * (len(hss.devices) - 1) + [None], params=a.param, seed=a.seed,
                  **_sim_options(a))
    _check_output_dir(a.timeline, a.save_agent)
    if a.agent == "none":
        a.agent = False
    elif a.agent and not os.path.isfile(a.agent):
        raise HblError("%s: no such file" % a.agent)
    from hbl import progress as prog
    if policy.startswith("python:"):
        from hbl.plugin import check, load_policy
        plugin = load_policy(policy)

    def progress(chunks, what):   # a plugin's failure stops the run at the next chunk
        for c in prog.chunks(chunks, what, quiet=a.quiet):
            yield c
            if plugin is not None:
                check(plugin)
    r = simulate(a.trace, hss=a.hss, policy=policy, fast_capacity=a.fast_capacity, params=a.param,
                 plugin=plugin, seed=a.seed, fmt=a.fmt, lenient=a.lenient, reader_options=_reader_options(a),
                 timeline=bool(a.timeline), load_agents=a.agent, save_agents=a.save_agent,
                 progress=progress, **_sim_options(a))
    if plugin is not None:
        check(plugin)
    if a.timeline:
        write_json(a.timeline, r["timeline"])
        if not a.json:
            del r["timeline"]
    if a.json:
        print_json(r)
        return 0
    print("policy %s on %s, HSS %s (%s), fast capacity %d pages of %d footprint; %s" % (
        r["policy"], r["trace"], r["hss"], "+".join(r["devices"]), r["capacity_pages"][0], r["footprint_pages"],
        replay_label(r["replay"])))
    if "oracle_family" in r:
        print("  oracle          best of %s" % ", ".join("%s %.1f us" % (
            ",".join("%s=%g" % kv for kv in v["params"].items()), v["avg_latency_us"]) for v in r["oracle_family"]))
    print("  requests        %d (%d reads, %d writes; %d not simulated)" % (
        r["requests"], r["reads"], r["writes"], r["skipped"]))
    print("  avg latency     %.1f us   p50 %.1f  p95 %.1f  p99 %.1f  p99.9 %.1f us" % (
        r["avg_latency_us"], r["p50_latency_us"], r["p95_latency_us"], r["p99_latency_us"], r["p999_latency_us"]))
    print("  read hit ratio  %.3f of page reads served by %s; %.3f of page writes landed there" % (
        r["read_hit_ratio"], r["devices"][0], r["fast_write_share"]))
    print("  migrations      %d promotions, %d evictions (%d forced by a full device, %d free), %.1f MiB moved" % (
        r["promotions"], r["evictions"], r["fallback_evictions"], r["clean_evictions"], r["migrated_bytes"] / 2 ** 20))
    print("  background I/O  %d I/Os in idle time; %d evictions waited for (queue full), %d moves refused; "
          "%.1f us per request waiting behind it" % (r["background_ios"], r["sync_evictions"], r["moves_refused"],
                                                     r["background_wait_us"]))
    print("  utilization     " + ", ".join("%s %.0f%%" % (d, 100 * u) for d, u in
                                          zip(r["devices"], r["device_utilization"])))
    print("  throughput      %.0f IOPS simulated; simulator ran %.2f M requests/s" % (
        r["throughput_iops"], r["requests_per_second"] / 1e6))
    if "agents_from" in r:
        print("  agents from     %s" % r["agents_from"])
    for i, ag in enumerate(r.get("agents", [])):
        print("  agent %d         %d decisions (%d explored), %d training steps, epsilon %.3f, "
              "recent reward %.3f" % (i, ag["decisions"], ag["explorations"], ag["train_steps"], ag["epsilon"],
                                      ag["reward_ewma"]))
    if r.get("bad_lines_skipped"):
        print("  skipped         %d bad lines (--lenient)" % r["bad_lines_skipped"])
    if a.save_agent:
        print("  agents saved to %s" % a.save_agent)
    return 0


def cmd_compare(a):
    from hbl import compare as cmp, results
    hss = [h.strip() for h in a.hss.split(",") if h.strip()]
    _check_output_dir(a.output, a.plot, a.out)
    if a.out:
        fmt = os.path.splitext(a.out)[1].lstrip(".").lower()
        if fmt not in results.FORMATS:
            raise HblError("--out %s: give a file ending in .csv, .parquet or .json" % a.out)
        if fmt == "parquet" and not results.parquet_available():
            raise HblError("--out %s: Parquet needs pyarrow: pip install pyarrow (or hbl[sweep]); "
                           ".csv and .json need nothing" % a.out)
    if a.from_json:
        summary = cmp.from_results(a.from_json)
    else:
        _check_sim(a, hss)
        summary = cmp.compare(traces=a.trace, hss_list=hss, policies=a.policies, jobs=a.jobs, fmt=a.fmt,
                          lenient=a.lenient, reader_options=_reader_options(a), progress=not a.quiet,
                          synthetic_requests=a.synthetic_requests, capture_requests=a.capture_requests,
                          fast_capacity=a.fast_capacity,
                          params=a.param, seed=a.seed, seeds=a.seeds, untrained=a.untrained,
                          **_sim_options(a))
    if not summary.get("workloads"):   # every trace was left out: nothing to normalize or average
        raise HblError("no trace with reads or writes to compare")
    if a.output:
        write_json(a.output, summary)
    if a.out:
        results.write(a.out, results.from_compare(summary))
    return _show(a, summary, cmp.format_wide if a.wide else cmp.format_text, cmp.plot)


def _show(a, report, format_text, plot):
    """A report as JSON (--json) or text, and its chart when --plot names a file."""
    if a.plot:
        plot(report, a.plot)
    if a.json:
        print_json(report)
    else:
        print(format_text(report))
        if a.plot:
            print("plot written to %s" % a.plot)
    return 0


def cmd_sweep(a):
    """hbl sweep (grid from flags or SPEC.toml) and hbl sweep report DIR."""
    from hbl import sweep
    if a.target[:1] == ["report"]:
        if len(a.target) != 2:
            raise HblError("usage: hbl sweep report DIR [--plot PNG] [--json]")
        from hbl import sweep_report
        return _show(a, sweep_report.report(a.target[1]), sweep_report.format_report, sweep_report.plot)
    if a.target[:1] == ["tune"]:
        from hbl import sweep_tune
        policies = [p.strip() for p in (a.policies or "").split(",") if p.strip()]
        if len(a.target) != 1 or len(policies) != 1 or not a.trace or not a.out:
            raise HblError("usage: hbl sweep tune --trace TRAIN... --policies ONE --space NAME=LOW:HIGH[:log|:int]... "
                           "--trials N --out DIR [--test TRACE...]")
        options = dict(_sim_options(a), fast_capacity=a.fast_capacity, params=a.param)
        r = sweep_tune.tune(a.trace, policies[0], [sweep_tune.parse_space(s) for s in a.space or []], a.trials,
                            a.out, hss=[h.strip() for h in (a.hss or "cost").split(",") if h.strip()],
                            seeds=list(range(a.seed, a.seed + (a.seeds or 1))), test=a.test or [],
                            options={k: v for k, v in options.items() if v is not None}, workers=a.workers,
                            address=a.address, progress=None if a.quiet else
                            lambda line: print(line, file=sys.stderr, flush=True))
        if a.json:
            print_json(r)
        else:
            print(sweep_tune.format_tune(r))
        return 0
    if len(a.target) > 1:
        raise HblError("hbl sweep takes one spec file (or `report DIR`), got: %s" % " ".join(a.target))
    if a.target:
        if a.trace or a.policies or a.param_grid or a.seeds or a.hss:
            raise HblError("give the grid in %s or on the command line, not both" % a.target[0])
        grid, where = sweep.load_spec(a.target[0])
    else:
        seeds = range(a.seed, a.seed + (a.seeds or 1))
        options = dict(_sim_options(a), fast_capacity=a.fast_capacity, params=a.param)
        grid = sweep.Grid(traces=a.trace or [], hss=[h.strip() for h in (a.hss or "cost").split(",") if h.strip()],
                          policies=[p.strip() for p in (a.policies or "").split(",") if p.strip()],
                          param_grid=dict(sweep.parse_grid_item(g) for g in a.param_grid or []), seeds=list(seeds),
                          options={k: v for k, v in options.items() if v is not None}, fmt=a.fmt,
                          lenient=a.lenient, reader_options=_reader_options(a))
        where = {}
    where.update({k: v for k, v in (("out", a.out), ("workers", a.workers), ("address", a.address)) if v})
    if not where.get("out"):
        raise HblError("hbl sweep: give --out DIR (or out = \"DIR\" in the spec)")
    if where.get("workers") and where.get("address"):
        raise HblError("--workers sizes the embedded cluster; with --address the cluster has its own workers")
    summary = sweep.run(grid, where["out"], workers=where.get("workers"), address=where.get("address"),
                        progress=not a.quiet)
    if a.json:
        print_json(summary)
    else:
        print("%d cells: %d computed, %d skipped (already in %s), %d failed; results in %s" % (
            summary["cells"], summary["computed"], summary["skipped"], summary["out"], summary["failed"],
            os.path.join(summary["out"], sweep.CSV_TABLE)))
    return 2 if summary["failed"] else 0

PLOT_FORMATS = "svg,png"


def cmd_plot(a):
    from hbl import plot
    formats = plot.parse_formats(a.format)
    if a.out and os.path.splitext(a.out)[1] and a.format != PLOT_FORMATS:
        raise HblError("-o %s names one format by its extension: leave --format out, or give a directory" % a.out)
    written = plot.plot(a.result, a.out, formats)
    if a.json:
        print_json(dict(result=a.result, figures=written))
    else:
        print("\n".join(written))
    return 0


def cmd_report(a):
    from hbl import report
    out = report.write(a.result, a.out)
    if a.json:
        print_json(dict(result=a.result, report=out))
    else:
        print("report written to %s" % out)
    return 0


def cmd_trace_info(a):
    from hbl.info import format_info, trace_info
    from hbl.trace import open_trace
    reader = open_trace(a.trace, fmt=a.fmt, lenient=a.lenient, **_reader_options(a))
    from hbl.progress import chunks
    info = trace_info(chunks(reader, "reading", quiet=a.quiet), page_size=a.page_size or 4096,
                      source=a.trace, skipped=lambda: reader.skipped)
    if a.json:
        print_json(info)
    else:
        print(format_info(info))
    return 0


def cmd_convert(a):
    from hbl import trace as tracemod
    reader = tracemod.open_trace(a.input, fmt=a.fmt, lenient=a.lenient, **_reader_options(a))
    to = a.to or tracemod.format_for_path(a.output)
    if os.path.abspath(a.output) == os.path.abspath(tracemod.resolve(a.input)):
        raise HblError("%s: refusing to overwrite the input" % a.output)
    _check_output_dir(a.output)
    opts = {"filename": a.fio_file} if to == "fio" and a.fio_file else {}
    if a.quantum_ns is not None:
        if to != "packed":
            raise HblError("--quantum-ns is for the packed format (.hblz) only")
        opts = {"time_quantum_ns": a.quantum_ns, "latency_quantum_ns": a.quantum_ns}
    from hbl.progress import chunks
    with tracemod.writer(a.output + ".part", to, source=getattr(reader, "source", a.input),
                         compress=a.output.endswith(".gz"), **opts) as w:
        for chunk in chunks(reader, "converting", quiet=a.quiet):
            w.write(chunk)
    os.replace(a.output + ".part", a.output)
    summary = {"trace": a.input, "out": a.output, "format": to, "compressed": a.output.endswith(".gz"),
               "requests": w.count, "dropped": getattr(w, "dropped", 0),
               "bad_lines_skipped": getattr(reader, "skipped", 0)}
    if a.json:
        print_json(summary)
        return 0
    msg = "%s: %d requests written (%s%s)" % (a.output, w.count, to, ", gzip" if summary["compressed"] else "")
    if summary["dropped"]:
        msg += "; %d discard/flush requests have no %s spelling and were dropped" % (w.dropped, to)
    if summary["bad_lines_skipped"]:
        msg += "; %d bad lines skipped (--lenient)" % reader.skipped
    print(msg, file=sys.stderr)
    return 0


def cmd_trace(a):
    import signal
    import time
    from hbl import trace as tracemod
    from hbl.capture import MODE_BIO, Capture
    if (a.duration is None) == (a.count is None):
        raise HblError("give exactly one of --duration and --count")
    duration = parse_duration(a.duration) if a.duration is not None else None
    to = a.to or tracemod.format_for_path(a.out)
    if a.out.endswith(".gz"):
        raise HblError("%s: a capture is not compressed while it runs; convert it afterwards" % a.out)
    _check_output_dir(a.out)
    cap = Capture(a.dev, backend=a.backend, fast=a.fast)
    names = ", ".join("%s (%s)" % (p, "logical, bio" if m == MODE_BIO else "device, with latency")
                      for p, (_, m, _) in zip(a.dev, cap.devices))
    w = tracemod.writer(a.out + ".part", to, source="hbl trace " + " ".join(a.dev))
    stop = {"now": False}
    old = signal.signal(signal.SIGINT, lambda *_: stop.__setitem__("now", True))
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__("now", True))
    if not a.quiet:
        print("tracing %s -> %s (%s, %s); Ctrl-C stops" % (names, a.out, to, a.backend), file=sys.stderr)
    from hbl.progress import Progress
    t0 = last = time.time()
    n = nbytes = b_last = 0
    bar = Progress("tracing", unit="records", quiet=a.quiet)
    try:
        for batch in cap.batches(duration=duration, count=a.count, stop=lambda: stop["now"]):
            w.write(batch)
            n += len(batch)
            nbytes += int(batch["length"].sum())
            now = time.time()
            note = None
            if now - last >= 1:
                note = "%.1f MiB/s, lost %d" % ((nbytes - b_last) / (now - last) / 2 ** 20, cap.stats()["lost"])
                last, b_last = now, nbytes
            bar.update(len(batch), note=note)
    finally:
        bar.close()
        signal.signal(signal.SIGINT, old)
        st = cap.stats()
        cap.close()
        w.close()
        os.replace(a.out + ".part", a.out)
    elapsed = time.time() - t0
    summary = {"out": a.out, "format": to, "backend": a.backend, "devices": a.dev, "requests": w.count,
               "bytes": nbytes, "seconds": elapsed, "events_per_second": n / elapsed if elapsed else 0.0,
               "lost": st["lost"], "lost_ringbuf": st["lost_ringbuf"], "lost_inflight": st["lost_inflight"],
               "interrupted": stop["now"]}
    if a.json:
        print_json(summary)
    elif not a.quiet:
        print("%s: %d records (%.1f MiB) in %.1f s, %d lost%s" % (
            a.out, w.count, nbytes / 2 ** 20, elapsed, st["lost"], " (interrupted)" if stop["now"] else ""),
            file=sys.stderr)
    return 0


def cmd_workloads(a):
    from hbl import workloads as wl
    if a.workloads_command == "list":
        rows = wl.listing()
        if a.json:
            print_json(rows)
            return 0
        for r in rows:
            state = ("captured here, %s requests" % r["captured_requests"]) if r["captured"] else \
                ("not captured here" if r["installed"] else "needs " + " ".join(r["missing_packages"]))
            if r["shipped"]:
                state += "; shipped with hbl (workload:%s)" % r["name"]
            print("%-17s %s %s%s: %s\n%17s page cache: %s\n%17s expected: %s; %s" % (
                r["name"], r["application"], r["version"] or "(not installed)",
                " [synthetic]" if r["synthetic"] else "", r["runs"], "", r["page_cache_bound"], "",
                r["expected"], state))
        return 0
    if a.workloads_command == "slice":
        r = wl.make_slice(a.name)
        print("%s: first %d requests, %d written (%d flushes/discards left out), %d bytes" % (
            "apps:" + a.name, r["requests"], r["written"], r["dropped_flush_discard"], r["bytes"]))
        return 0
    if a.workloads_command == "pack":
        r = wl.pack(a.name)
        print("%s: %d requests, %d bytes (%.2f bytes a request)" % (r["out"], r["requests"], r["bytes"],
                                                                    r["bytes_per_request"]))
        return 0
    if a.workloads_command == "summary":
        rows = [wl.summary(n) for n in wl.RECIPES if wl.trace_path(n).exists()]
        if a.json:
            print_json(rows)
            return 0
        print("%-17s %-10s %9s %6s %10s %22s %5s %8s" % ("workload", "kind", "requests", "reads", "footprint",
                                                          "reuse p50/p90/p99 pg", "lost", "capture"))
        for r in rows:
            q = r["reuse_distance_pages"]
            print("%-17s %-10s %9d %5.0f%% %7.0f MiB %22s %5s %7.0fs" % (
                r["name"], "synthetic" if r["synthetic"] else "real", r["requests"], 100 * r["read_share"],
                r["footprint_bytes"] / 2 ** 20, "/".join(str(q[k]) for k in ("p50", "p90", "p99")),
                r["lost"], r["capture_seconds"] or 0))
        return 0
    duration = parse_duration(a.duration) if a.duration else wl.DEFAULT_DURATION
    if a.requests < 1:
        raise HblError("--requests must be >= 1")
    if a.out:
        _check_output_dir(a.out)
    meta = wl.capture(a.name, duration=duration, requests=a.requests, out=a.out)
    from hbl.info import format_info, trace_info
    from hbl.trace import open_trace
    print("%s: %d requests in %.0f s of capture (%.0f s in all), %d lost records%s" % (
        meta["trace"], meta["requests"], meta["capture_seconds"], meta["total_seconds"], meta["lost"],
        " (interrupted)" if meta["interrupted"] else ""), file=sys.stderr)
    print(format_info(trace_info(open_trace(meta["trace"]))))
    if meta["lost"]:
        print("hbl: error: the capture lost %d records: the trace is incomplete" % meta["lost"], file=sys.stderr)
        return 1
    return 0


def vm_command_line(args):
    """`hbl vm run -- CMD ARG...` runs the arguments as given; a single argument is a shell line."""
    args = args[1:] if args[:1] == ["--"] else list(args)
    if not args or not "".join(args).strip():
        raise HblError("give a command: hbl vm run -- CMD [ARG...] (or one shell line in quotes)")
    return args[0] if len(args) == 1 else shlex.join(args)


def cmd_vm(a):
    import time
    from hbl.vm import build as vmbuild, run as vmrun
    say = (lambda m: None) if getattr(a, "json", False) else (lambda m: print("hbl vm: " + m, file=sys.stderr))
    t0 = time.time()
    images = vmbuild.build(progress=say, force=getattr(a, "force", False))
    build_s = time.time() - t0
    if a.vm_command == "build":
        info = {"images": images.path, "seconds": build_s, "cached": build_s < 5}
        if a.json:
            print_json(info)
        else:
            print("%s (%s, %.1f s)" % (images.path, "cached" if info["cached"] else "built", build_s))
        return 0
    disks = vmrun.default_disks(a.fast_mb, a.slow_mb, a.extra)
    if a.vm_command == "shell":
        return vmrun.run("", images, disks=disks, interactive=True).rc
    if a.vm_command == "run":
        cmd = vm_command_line(a.cmd)
    elif a.vm_command == "test":
        cmd = shlex.join(["python3", "-m", "pytest", "-p", "no:cacheprovider", "-rs", "/hbl/vm/guest/tests"] +
                         [x for x in a.pytest_args if x != "--"])
    elif getattr(a, "live", False):
        cmd = "python3 /hbl/vm/guest/bench_live.py"
    else:   # bench
        cmd = "python3 /hbl/vm/guest/tests/bench_stall.py && sh /hbl/vm/guest/bench_fio.sh"
    r = vmrun.run(cmd, images, disks=disks, timeout=a.timeout, out_dir=a.out)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if not a.quiet:
        print("hbl vm: exit status %d, booted in %.1f s, %.1f s in all; results in %s" % (
            r.rc, r.boot_seconds, r.seconds, r.out_dir), file=sys.stderr)
    return r.rc


def cmd_policies(a):
    from hbl.sim import policies, policy_params
    rows = [dict(p, params=policy_params(i)) for i, p in enumerate(policies())]
    if a.json:
        print_json(rows)
    else:
        for r in rows:
            print("%-11s %s%s" % (r["name"], r["description"],
                                  " [%s]" % ", ".join(r["capabilities"]) if r["capabilities"] else ""))
            for k, v in r["params"].items():
                live = v.get("live_default", v["default"])
                print("%-11s   %-18s %-8s %s%s" % ("", k, _default(v["default"]), v["description"],
                                                    "" if live == v["default"] else " (live: %s)" % _default(live)))
        print("\nparameters: --param NAME=VALUE (defaults shown, and where a live device's differs; ? = accepted, "
              "but its default depends on other parameters or it is unused by this variant);"
              "\ncapabilities: learns (its result depends on the seed), needs_future (reads the whole trace "
              "first), live (can drive a live device);"
              "\nPython plugins: --policy python:FILE.py:CLASS (see hbl/plugin.py)")
    return 0


def _default(d):
    return "?" if d is None else "%d" % d if d == int(d) else "%g" % d


def _short_count(x):
    return "%gk" % (x / 1000) if x >= 10000 else "%g" % x


def cmd_devices(a):
    import dataclasses
    from hbl.devices import HSS_CONFIGS, PROFILES
    if a.measure:
        from hbl.measure import measure
        if not a.seconds > 0 or a.seconds > 3600:
            raise HblError("--seconds must be > 0 and at most 3600")
        quiet = a.json or not sys.stderr.isatty()
        prof, info = measure(a.measure, seconds=a.seconds, write=a.write, force=a.force,
                             progress=None if quiet else lambda m: print(m, file=sys.stderr))
        fields = {k: v for k, v in dataclasses.asdict(prof).items() if k not in ("name", "description")}
        if a.json:
            print_json(dict(profile=fields, device=a.measure, **info))
        else:
            print("%s: modelled as %s%s" % (a.measure, "a disk (seeks)" if info["modelled_as"] == "hdd"
                                            else "a pipeline (no seeks)",
                                            "" if a.write else "; writes not measured (--write)"))
            print(json.dumps(fields))
            print("use it in an HSS file: {\"devices\": [{\"profile\": <the line above>, \"capacity\": \"10%\"}, ...]}")
        return 0
    if a.json:
        print_json({"profiles": {k: dataclasses.asdict(p) for k, p in PROFILES.items()},
                     "hss": {k: {"devices": d, "capacities": c} for k, (d, c) in HSS_CONFIGS.items()}})
        return 0
    for k, p in PROFILES.items():
        extra = ", seek %.1f ms (track %.1f), rotation %.2f ms" % (p.seek_ms, p.track_seek_ms, p.rotation_ms) \
            if p.seek_ms else ""
        iops = ", %s / %s IOPS" % (_short_count(p.read_iops), _short_count(p.write_iops)) if p.read_iops else ""
        print("%s  %-40s read %g us / write %g us, %g / %g MB/s%s%s" % (
            k, p.description, p.read_latency_us, p.write_latency_us, p.read_mb_s, p.write_mb_s, iops, extra))
    print()
    for k, (devs, caps) in HSS_CONFIGS.items():
        print("%-5s %s" % (k, " + ".join("%s (%s)" % (d, "%g%% of footprint" % (c * 100) if c else "unlimited")
                                         for d, c in zip(devs, caps))))
    return 0


def cmd_pretrain(a):
    from hbl import pretrained
    if a.list:
        rows = pretrained.listing()
        if a.json:
            print_json(rows)
        else:
            for r in rows:
                print("%-26s %-5s %s  %s" % (r["policy"], r["hss"], "seed %s" % r["seed"] if r["seed"] else "", r["file"]))
        return 0
    if not a.out:
        raise HblError("--out DIR is required (the shipped agents are in %s)" % pretrained.AGENTS_DIR)
    policies = [p.strip() for p in a.policies.split(",") if p.strip()] if a.policies else list(pretrained.POLICIES)
    hss = [h.strip() for h in a.hss.split(",") if h.strip()]
    traces = a.trace or pretrained.training_traces(a.requests)
    from hbl.devices import load_hss
    from hbl.sim import parse_params
    for h in hss:
        load_hss(h)
    parse_params(a.param)
    rows = pretrained.pretrain_all(policies, hss, a.seeds, a.out, traces=traces, passes=a.passes,
                                   params=a.param, jobs=a.jobs, progress=not a.quiet)
    chosen = pretrained.select(a.out, policies, hss, a.seeds, params=a.param, jobs=a.jobs,
                               progress=not a.quiet) if a.select else []
    if a.json:
        print_json(dict(trained=rows, selected=chosen) if a.select else rows)
        return 0
    for r in rows:
        print("%-26s %-5s seed %d  %s  (last pass: %.1f us mean latency over the training traces)" % (
            r["policy"], r["hss"], r["seed"], r["file"], r["train_latency_us"]))
    if chosen:
        print("\nvalidation (training families, generator seed 2): geomean of average latency / Fast-Only")
    for r in chosen:
        print("%-26s %-5s %s  spread %.1f%%  -> seed %d: %s" % (
            r["policy"], r["hss"], "  ".join("s%s %.3f" % kv for kv in sorted(r["validation"].items())),
            100 * r["spread"], r["seed"], r["file"]))
    return 0


def cmd_bench(a):
    from hbl.bench import AGREEMENT_POLICIES, agreement, bench, format_agreement, format_bench
    if a.agreement:
        r = agreement(policies=a.policies.split(",") if a.policies else AGREEMENT_POLICIES,
                      synthetic_requests=a.synthetic_requests)
        print_json(r) if a.json else print(format_agreement(r))
        return 0
    b = bench(requests=a.requests, policies=a.policies.split(",") if a.policies else None, repeat=a.repeat)
    if a.json:
        print_json(b)
    else:
        print(format_bench(b))
    return 0


def build_parser():
    p = Parser(
        prog="hbl", description="hbl: a hybrid block layer with learned data placement and migration. "
        "Replay block traces through a simulated hybrid storage system and compare placement and "
        "migration policies.", epilog=EPILOG_TRACES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version="hbl " + __version__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("simulate", help="replay one trace with one policy",
                       description="Replay a trace through a simulated HSS with one policy and report "
                       "latency, fast-device hits and migrations.", epilog=EPILOG_TRACES)
    s.add_argument("--trace", default="bundled:hm_0", help="trace to replay (default bundled:hm_0)")
    s.add_argument("--hss", default="cost", help="perf (H+M), cost (H+L), tri, quad, or a .json file "
                   "(default cost)")
    s.add_argument("--policy", default="smq", help="policy name (`hbl policies`) or python:FILE.py:CLASS "
                   "(default smq)")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.add_argument("--timeline", metavar="FILE", help="write a JSON timeline (latency, hits per window)")
    s.add_argument("--agent", metavar="FILE", help="learning policies: start from the agents saved in FILE, or "
                   "'none' for untrained agents (default: the shipped pretrained agents of the policy, HSS preset "
                   "and seed, where there are some; `hbl pretrain`)")
    s.add_argument("--save-agent", metavar="FILE", help="learning policies: save the trained agents to FILE")
    s.add_argument("--quiet", action="store_true", help="no progress on stderr")
    _trace_args(s)
    _sim_args(s)
    s.set_defaults(func=cmd_simulate)

    c = sub.add_parser("compare", help="policies x workloads x HSS configs, the papers' table",
                       description="Run every policy on every workload and HSS configuration (in parallel) "
                       "and print, per HSS, a summary (policies by the geomean of average latency normalized "
                       "to Fast-Only, against the best non-learning policy and the oracle) and the latency "
                       "per workload, within 100 columns; --wide prints the one wide table with p99 latency "
                       "and migrations, --out FILE every run as a table (hbl.results.load reads it).",
                       epilog=EPILOG_TRACES)
    c.add_argument("--hss", default="perf,cost", help="comma-separated HSS configs (default perf,cost)")
    c.add_argument("--policies", default="all", help="comma-separated policies, or all (default)")
    c.add_argument("--jobs", type=whole(1, 256), help="parallel simulations (default: number of cores)")
    c.add_argument("--synthetic-requests", type=whole(1, 1 << 40),
                   help="requests per synthetic workload of the default suite (default 1000000)")
    c.add_argument("--capture-requests", type=whole(0, 1 << 40), default=250_000,
                   help="the default suite takes the first N requests of each full capture (workload:NAME; "
                   "default 250000, 0 = whole)")
    c.add_argument("--json", action="store_true", help="print the full summary as JSON")
    c.add_argument("--wide", action="store_true",
                   help="print one wide table per HSS (policies x workloads, with p99 latency and migrations) "
                        "instead of the summary and the per-workload table, which fit 100 columns")
    c.add_argument("--out", metavar="FILE", help="also write every run, one row each with every metric, to FILE: "
                   ".csv, .parquet (needs pyarrow) or .json (hbl.results.load reads it)")
    c.add_argument("--output", metavar="FILE", help="also write the full summary as JSON to FILE")
    c.add_argument("--plot", metavar="PNG", help="write a bar chart like the papers' figures")
    c.add_argument("--seeds", type=whole(1, 100), default=3,
                   help="learning policies run with seeds --seed .. --seed+N-1; the table shows their mean "
                        "and the min-max of the geometric mean (default 3)")
    c.add_argument("--untrained", action="store_true",
                   help="learning policies start from untrained agents, not the shipped pretrained ones")
    c.add_argument("--quiet", action="store_true", help="no progress on stderr")
    c.add_argument("--from-json", metavar="FILE", help="re-print (and re-plot) a comparison saved with --output")
    _trace_args(c, many=True)
    _sim_args(c)
    c.set_defaults(func=cmd_compare)

    RESULT_HELP = ("hbl compare --out FILE or --output FILE, a sweep's DIR or its results table, hbl simulate "
                   "--timeline FILE, scripts/learning_timeline.py --output FILE, or hbl status NAME --json")
    pl = sub.add_parser("plot", help="the papers' figures from a result, SVG and PNG at one column's width",
                        description="Draw the papers' figures from a result, at the width of one column of a paper "
                        "(3.3 in, text at 7 pt or more), each policy in the same colour and marker in every "
                        "figure (Okabe-Ito colours; marker: reference, heuristic or learning policy). From compare "
                        "or sweep runs: latency-HSS, the average latency / Fast-Only per workload, a figure per HSS, "
                        "and geomean, the geomean summary, a panel per HSS with the best non-learning policy marked; "
                        "learning policies are their mean over the seeds with a min-max bar. From a simulate "
                        "timeline: the latency and hit ratio per window; from a learning study: its curves per "
                        "workload and HSS; from a live device's status: IOPS and hit ratio over time. "
                        "Prints the files written.")
    pl.add_argument("result", metavar="RESULT", help=RESULT_HELP)
    pl.add_argument("-o", "--out", metavar="DIR|FILE",
                    help="a directory (made if missing) for NAME.FORMAT, or one file (.svg, .png, .pdf; "
                         "FILE-NAME.EXT when there are several figures); default: beside RESULT")
    pl.add_argument("--format", default=PLOT_FORMATS,
                    help="comma-separated formats into a directory: svg, png, pdf (default %s)" % PLOT_FORMATS)
    pl.add_argument("--json", action="store_true", help="print the files written as JSON")
    pl.set_defaults(func=cmd_plot)

    rp = sub.add_parser("report", help="one self-contained HTML page of a result: summary, sortable table, figures",
                        description="Write one HTML file that needs nothing else (no network: style, script and "
                        "figures inline) to send or to open from a remote host: per HSS the summary `hbl compare` "
                        "prints, the per-workload table (click a header to sort by it, again to reverse; a learning "
                        "policy's min-max over seeds in the cell's tooltip) and the figures of `hbl plot`.")
    rp.add_argument("result", metavar="RESULT", help=RESULT_HELP)
    rp.add_argument("-o", "--out", metavar="FILE", required=True, help="the HTML file to write, e.g. report.html")
    rp.add_argument("--json", action="store_true", help="print the file written as JSON")
    rp.set_defaults(func=cmd_report)

    sw = sub.add_parser("sweep", help="traces x HSS x policies x parameters x seeds on a Dask cluster",
                        description="Run a grid of simulations on Dask distributed: a local cluster on "
                        "loopback by default, or an existing one (--address). Results go to DIR as they "
                        "finish (cells.jsonl, results.csv, results.parquet); a rerun computes only the "
                        "missing cells. `hbl sweep SPEC.toml` reads the grid from a file; "
                        "`hbl sweep report DIR [--plot PNG]` prints the papers' tables; `hbl sweep tune` searches "
                        "a policy's parameters with Optuna on training workloads (--trace) only.", epilog=EPILOG_TRACES)
    sw.add_argument("target", nargs="*", metavar="SPEC.toml | report DIR | tune",
                    help="a spec file, `report DIR`, or `tune`")
    sw.add_argument("--hss", help="comma-separated HSS configs (default cost)")
    sw.add_argument("--policies", help="comma-separated policies")
    sw.add_argument("--param-grid", action="append", metavar="NAME=V1,V2",
                    help="a parameter axis (repeatable); POLICY.NAME varies it for that policy only")
    sw.add_argument("--seeds", type=int, help="seeds per cell: --seed, --seed+1, ... (default 1)")
    sw.add_argument("--out", metavar="DIR", help="results directory (resumable)")
    sw.add_argument("--workers", type=int, help="local cluster size (default: the cores)")
    sw.add_argument("--address", help="scheduler of an existing Dask cluster, e.g. tcp://10.0.0.5:8786")
    sw.add_argument("--json", action="store_true", help="print a JSON summary (report: the full report)")
    sw.add_argument("--quiet", action="store_true", help="no progress on stderr")
    sw.add_argument("--plot", metavar="PNG", help="report: bar chart with min-max over seeds")
    sw.add_argument("--space", action="append", metavar="NAME=LOW:HIGH[:log|:int]",
                    help="tune: a parameter's search range (repeatable)")
    sw.add_argument("--trials", type=int, default=20, help="tune: trials (default 20)")
    sw.add_argument("--test", action="append", metavar="TRACE",
                    help="tune: a held-out workload (repeatable), simulated with the best and the default parameters")
    _trace_args(sw, many=True)
    _sim_args(sw)
    sw.set_defaults(func=cmd_sweep)

    t = sub.add_parser("trace-info", help="summarize a trace",
                       description="Requests, reads/writes, bytes, footprint, sequentiality, sizes, "
                       "inter-arrival times and reuse distances of a trace.", epilog=EPILOG_TRACES)
    t.add_argument("trace")
    t.add_argument("--json", action="store_true")
    t.add_argument("--quiet", action="store_true", help="no progress on stderr")
    t.add_argument("--page-size", type=page_size, help="page size for footprint and reuse (default 4096)")
    _trace_args(t)
    t.set_defaults(func=cmd_trace_info)

    v = sub.add_parser("convert", help="convert a trace (or generate a synthetic one)",
                       description="Convert between trace formats. Output format from --to or the "
                       "file name: .csv = msrc, .iolog/.fio = fio iolog v3, .hblz = packed (zstd-compressed "
                       "columns, checksummed, about 3 bytes a request), anything else = native "
                       "(memory-mapped, fastest to reload).", epilog=EPILOG_TRACES)
    v.add_argument("input")
    v.add_argument("output")
    v.add_argument("--to", choices=["native", "packed", "msrc", "fio"], help="output format")
    v.add_argument("--quantum-ns", type=whole(1, 1 << 40), metavar="NS",
                   help="packed format: keep times and latencies in multiples of NS (default 1, lossless)")
    v.add_argument("--fio-file", help="fio format: device or file name written in the iolog")
    v.add_argument("--json", action="store_true", help="print a JSON summary")
    v.add_argument("--quiet", action="store_true", help="no progress on stderr")
    _trace_args(v)
    v.set_defaults(func=cmd_convert)

    tr = sub.add_parser("trace", help="capture live block I/O with eBPF into a trace file (root)",
                        description="Capture the block requests of one or more devices with eBPF "
                        "(tracepoints) into a trace file that hbl simulate and fio can replay. A request-based "
                        "device (NVMe, SCSI, virtio, loop) gives one record per request with its device "
                        "latency; a device-mapper device gives its logical requests.")
    tr.add_argument("--dev", action="append", required=True, metavar="DEVICE",
                    help="block device to trace (repeatable), e.g. /dev/nvme0n1, /dev/loop0, /dev/mapper/x")
    tr.add_argument("--duration", help="how long: 500ms, 10s, 2m, 1h")
    tr.add_argument("--count", type=whole(1, 1 << 62), help="stop after this many records")
    tr.add_argument("--out", required=True, help="output file")
    tr.add_argument("--to", choices=["native", "msrc", "fio"],
                    help="output format (default from the file name: .csv msrc, .iolog fio, else native)")
    tr.add_argument("--format", dest="to", choices=["native", "msrc", "fio"], help=argparse.SUPPRESS)
    tr.add_argument("--backend", choices=["libbpf", "bcc"], default="libbpf",
                    help="loader: libbpf (default, C consumer) or bcc (python3-bpfcc)")
    tr.add_argument("--fast", action="store_true",
                    help="libbpf: one program per request, at completion (lower overhead; latency from the "
                         "request's start time, including scheduler queueing; no pid/comm)")
    tr.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    tr.add_argument("--quiet", action="store_true", help="no live line")
    tr.set_defaults(func=cmd_trace)

    vm = sub.add_parser("vm", help="the QEMU testbed: emulated NVMe + HDD, device-mapper (root)",
                        description="Build (once, cached) and run a QEMU guest with an emulated NVMe drive "
                        "(/dev/nvme0n1, fast), a throttled HDD-like virtio disk (/dev/vda, 100 IOPS) and "
                        "optionally SATA-SSD-like ones (/dev/vdb, /dev/vdc); the project is at /hbl (read-only) and "
                        "/out comes back to the host.")
    vsub = vm.add_subparsers(dest="vm_command", metavar="ACTION", required=True)
    vb = vsub.add_parser("build", help="build the kernel, initramfs and root file system (cached)")
    vb.add_argument("--force", action="store_true", help="rebuild even if cached")
    vb.add_argument("--json", action="store_true")
    vr = vsub.add_parser("run", help="run a command in a fresh guest: hbl vm run -- CMD ARG... "
                         "(one argument: a shell line); it runs in /root, writable")
    vr.add_argument("cmd", nargs=argparse.REMAINDER)
    vt = vsub.add_parser("test", help="run the guest test suite (device-mapper mechanics)")
    vt.add_argument("pytest_args", nargs=argparse.REMAINDER)
    vsub.add_parser("shell", help="an interactive shell in the guest (poweroff -f to leave)")
    vbe = vsub.add_parser("bench", help="table-reload stalls and emulated device latency, inside the guest; "
                          "--live: hbl's live device against dm-cache")
    vbe.add_argument("--live", action="store_true",
                     help="hbl up with harmonia, smq and lru against the kernel's dm-cache smq, same devices and "
                          "fio workload (about 12 minutes under TCG)")
    for vp in (vr, vt, vsub.choices["shell"], vsub.choices["bench"]):
        vp.add_argument("--timeout", type=whole(1, 1 << 20), default=1200, help="seconds before QEMU is killed (default 1200)")
        vp.add_argument("--fast-mb", type=whole(16, 1 << 20), default=512, help="NVMe size (default 512)")
        vp.add_argument("--slow-mb", type=whole(16, 1 << 20), default=1024, help="HDD size (default 1024)")
        vp.add_argument("--extra", type=whole(0, 2), default=0,
                        help="SATA-SSD-like virtio disks to add (/dev/vdb, /dev/vdc; default 0)")
        vp.add_argument("--out", help="keep the guest's /out here (default: a new temporary folder)")
        vp.add_argument("--quiet", action="store_true")
    vm.set_defaults(func=cmd_vm)

    wl = sub.add_parser("workloads", help="real applications' block I/O: recipes and captures (root)",
                        description="Run a real application (PostgreSQL, MariaDB, RocksDB, SQLite, a build; fio as "
                        "the synthetic control) on a scratch file system on a loop device and capture its block "
                        "I/O into ~/.cache/hbl/workloads/NAME.hbltrace, used as the trace workload:NAME (where there is "
                        "none, workload:NAME is the capture shipped with hbl, hbl/data/traces/workloads/NAME.hblz).")
    wsub = wl.add_subparsers(dest="workloads_command", metavar="ACTION", required=True)
    wsub.add_parser("list", help="the recipes and whether each is captured").add_argument("--json", action="store_true")
    ws = wsub.add_parser("summary", help="trace-info figures of every cached capture (results/workloads/workloads.*)")
    ws.add_argument("--json", action="store_true")
    wsub.add_parser("slice", help="write the first 20,000 requests of a cached capture to hbl/data/traces/apps/"
                    ).add_argument("name")
    wsub.add_parser("pack", help="write a cached capture, packed, to hbl/data/traces/workloads/ (what "
                    "workload:NAME reads where it was not captured)").add_argument("name")
    wc = wsub.add_parser("capture", help="run a recipe and capture its block I/O (root)")
    wc.add_argument("name", help="recipe (hbl workloads list)")
    wc.add_argument("--duration", help="capture at most this long (default 30m)")
    wc.add_argument("--requests", type=int, default=1_000_000, help="stop after about this many requests "
                    "(default 1000000)")
    wc.add_argument("--out", help="trace file (default ~/.cache/hbl/workloads/NAME.hbltrace)")
    wl.set_defaults(func=cmd_workloads)

    from hbl.live.cli import add_parsers as live_parsers
    live_parsers(sub)

    po = sub.add_parser("policies", help="list policies")
    po.add_argument("--json", action="store_true")
    po.set_defaults(func=cmd_policies)

    pt = sub.add_parser("pretrain", help="train learning policies' agents on training workloads, to start from",
                        description="Train the agents of learning policies from scratch on training workloads "
                        "(by default the synthetic training families of hbl/split.py, the train/evaluation split; "
                        "none is in `hbl compare`'s default suite, and an evaluation workload is refused) and save "
                        "one file per policy, HSS and seed. Simulations start from the shipped ones by default, the "
                        "best of 5 seeds on validation traces (--select); use yours with `simulate --agent FILE`.")
    pt.add_argument("--out", metavar="DIR", help="directory for the agent files (required to train)")
    pt.add_argument("--policies", help="comma-separated learning policies (default: those with shipped agents)")
    pt.add_argument("--hss", default="perf,cost,tri,quad", help="comma-separated HSS presets (default all four)")
    pt.add_argument("--seeds", type=whole(1, 100), default=3, help="pretraining seeds 1..N (default 3)")
    pt.add_argument("--passes", type=whole(1, 100), default=3, help="passes over the training traces (default 3)")
    pt.add_argument("--requests", type=whole(1, 1 << 40), default=300_000,
                    help="requests per training trace of the default suite (default 300000)")
    pt.add_argument("--jobs", type=whole(1, 256), help="parallel trainings (default: number of cores)")
    pt.add_argument("--select", action="store_true",
                    help="then run each seed's agents on the validation traces (the training families with "
                         "generator seed 2) and copy the best of each policy and HSS to DIR/POLICY-HSS.agent, "
                         "the form hbl ships (with DIR/selection.json: every seed's figure and the spread)")
    pt.add_argument("--list", action="store_true", help="list the shipped pretrained agents instead")
    pt.add_argument("--json", action="store_true")
    pt.add_argument("--quiet", action="store_true", help="no progress on stderr")
    pt.add_argument("--trace", action="append", metavar="TRACE",
                    help="training trace (repeatable; default: the training suite)")
    pt.add_argument("--param", action="append", metavar="NAME=VALUE",
                    help="policy parameter for the training runs (repeatable; see `hbl policies`)")
    pt.set_defaults(func=cmd_pretrain)

    d = sub.add_parser("devices", help="list device profiles and HSS configurations, or measure one",
                       description="List the built-in device profiles (with their datasheet figures) and HSS "
                       "configurations, or measure a profile of a real device with fio (--measure): QD1 4 KiB "
                       "latency, random 4 KiB IOPS at depth 32, sequential bandwidth. Reads only unless --write, "
                       "which overwrites the device's data and is refused on a device that is mounted, held or "
                       "carries a signature (--force overrides the signature check only).")
    d.add_argument("--json", action="store_true")
    d.add_argument("--measure", metavar="DEVICE", help="block device (or file of 64 MiB or more) to measure")
    d.add_argument("--seconds", type=float, default=5.0, help="per fio job (default 5; 4 jobs, 7 with --write)")
    d.add_argument("--write", action="store_true", help="also measure writes: DESTROYS the device's data")
    d.add_argument("--force", action="store_true", help="with --write: take a device that carries a signature")
    d.set_defaults(func=cmd_devices)

    b = sub.add_parser("bench", help="simulator throughput per policy on this machine",
                       description="Simulator throughput (requests/s) per policy on a synthetic zipf trace.")
    b.add_argument("--requests", type=whole(1, 1 << 32), default=1_000_000, help="trace length (default 1000000)")
    b.add_argument("--policies", help="comma-separated policies (default: all)")
    b.add_argument("--repeat", type=whole(1, 1000), default=3, help="runs per policy, best kept (default 3)")
    b.add_argument("--json", action="store_true")
    b.add_argument("--agreement", action="store_true",
                   help="instead: how often the int16 inference network's greedy action is the FP32 network's, "
                        "over real runs of the learned policies (--policies, default harmonia,sibyl) on the "
                        "default compare suite, HSS perf and cost")
    b.add_argument("--synthetic-requests", type=whole(1, 1 << 32), default=200_000,
                   help="with --agreement: requests per synthetic workload (default 200000)")
    b.set_defaults(func=cmd_bench)
    return p


def main(argv=None):
    parser = build_parser()
    a, extra = parser.parse_known_args(argv)
    if extra:   # hbl vm test / run pass what they do not know to pytest / the guest command
        if a.command == "vm" and a.vm_command == "test":
            a.pytest_args = list(extra) + list(a.pytest_args)
        elif a.command == "vm" and a.vm_command == "run":
            a.cmd = list(a.cmd) + list(extra)
        else:
            parser.error("unrecognized arguments: %s" % " ".join(extra))
    if not a.command:
        parser.print_help()
        return 2
    try:
        return a.func(a)
    except HblError as exc:
        print("hbl: error: %s" % exc, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hbl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:      # device-mapper refusals carry their own message
        from dmsetup.device import DmError
        from dmsetup.ioctl import DmIoctlError
        if isinstance(exc, (DmError, DmIoctlError)):
            print("hbl: error: %s" % exc, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
