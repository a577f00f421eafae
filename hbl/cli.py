"""The `hbl` command line."""
import argparse
import json
import os
import shlex
import sys

from hbl import __version__
from hbl.errors import HblError

EPILOG_TRACES = """trace names: a file (format auto-detected, or --format), bundled:NAME for a
bundled MSR Cambridge slice (hm_0, hm_1, mds_0, proj_0, rsrch_1, rsrch_2, wdev_1),
or synth:PRESET[:key=value,...] for a seeded synthetic workload
(presets: uniform, zipf, sequential, mixed, phases, hm, prxy, src, web, usr, proj)."""


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
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--speed", type=float, help="open-loop replay speed factor (default 1: trace timing)")
    p.add_argument("--queue-depth", type=int,
                   help="closed-loop replay at this queue depth (trace timestamps ignored)")
    p.add_argument("--page-size", type=int, help="bytes per page, the unit of placement (default 4096)")
    p.add_argument("--migrate-every", type=int, help="requests between migration rounds (default 1000)")
    p.add_argument("--migrate-max", type=int, help="moves per migration round at most (default 64)")


def _sim_options(a):
    opts = dict(speed=a.speed, queue_depth=a.queue_depth, page_size=a.page_size,
                migrate_every=a.migrate_every, migrate_max=a.migrate_max)
    if a.speed is not None and a.speed <= 0:
        raise HblError("--speed must be > 0")
    if a.queue_depth is not None and a.queue_depth < 1:
        raise HblError("--queue-depth must be >= 1")
    if a.page_size is not None and a.page_size < 512:
        raise HblError("--page-size must be at least 512 bytes")
    return {k: v for k, v in opts.items() if v is not None}


def _progress(chunks, what):
    """Pass chunks through, with a live count on stderr when it is a terminal and the pass is long."""
    import time
    if not sys.stderr.isatty():
        yield from chunks
        return
    t0 = last = time.time()
    n = 0
    for c in chunks:
        n += len(c)
        now = time.time()
        if now - last >= 1:
            print("\r%s: %d requests, %.0f k/s   " % (what, n, n / (now - t0) / 1e3), end="", file=sys.stderr,
                  flush=True)
            last = now
        yield c
    if last != t0:
        print("\r%s: %d requests in %.1f s   " % (what, n, time.time() - t0), file=sys.stderr)


def _check_output_dir(path):
    out_dir = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(out_dir):
        raise HblError("%s: no such directory" % out_dir)


def _print_json(obj):
    json.dump(obj, sys.stdout, indent=2, default=float)
    print()


# ---- commands ----

def cmd_simulate(a):
    from hbl.sim import simulate
    plugin, policy = None, a.policy
    if policy.startswith("python:"):
        from hbl.plugin import load_policy
        plugin = load_policy(policy)
    r = simulate(a.trace, hss=a.hss, policy=policy, fast_capacity=a.fast_capacity, params=a.param,
                 plugin=plugin, seed=a.seed, fmt=a.fmt, lenient=a.lenient, reader_options=_reader_options(a),
                 timeline=bool(a.timeline), load_agents=a.agent, save_agents=a.save_agent,
                 progress=_progress, **_sim_options(a))
    if a.timeline:
        with open(a.timeline, "w") as f:
            json.dump(r["timeline"], f, indent=1)
        if not a.json:
            del r["timeline"]
    if a.json:
        _print_json(r)
        return 0
    print("policy %s on %s, HSS %s (%s), fast capacity %d pages of %d footprint" % (
        r["policy"], r["trace"], r["hss"], "+".join(r["devices"]), r["capacity_pages"][0], r["footprint_pages"]))
    print("  requests        %d (%d reads, %d writes; %d not simulated)" % (
        r["requests"], r["reads"], r["writes"], r["skipped"]))
    print("  avg latency     %.1f us   p50 %.1f  p95 %.1f  p99 %.1f  p99.9 %.1f us" % (
        r["avg_latency_us"], r["p50_latency_us"], r["p95_latency_us"], r["p99_latency_us"], r["p999_latency_us"]))
    print("  fast hit ratio  %.3f (reads %.3f)" % (r["fast_hit_ratio"], r["read_hit_ratio"]))
    print("  migrations      %d promotions, %d evictions (%d forced by a full device), %.1f MiB moved" % (
        r["promotions"], r["evictions"], r["fallback_evictions"], r["migrated_bytes"] / 2 ** 20))
    print("  utilization     " + ", ".join("%s %.0f%%" % (d, 100 * u) for d, u in
                                          zip(r["devices"], r["device_utilization"])))
    print("  throughput      %.0f IOPS simulated; simulator ran %.2f M requests/s" % (
        r["throughput_iops"], r["requests_per_second"] / 1e6))
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
    from hbl import compare as cmp
    hss = [h.strip() for h in a.hss.split(",") if h.strip()]
    if a.from_json:
        summary = cmp.from_results(a.from_json)
    else:
        summary = cmp.compare(traces=a.trace, hss_list=hss, policies=a.policies, jobs=a.jobs, fmt=a.fmt,
                          lenient=a.lenient, reader_options=_reader_options(a), progress=not a.quiet,
                          synthetic_requests=a.synthetic_requests, fast_capacity=a.fast_capacity,
                          params=a.param, seed=a.seed, **_sim_options(a))
    if a.output:
        with open(a.output, "w") as f:
            json.dump(summary, f, indent=1, default=float)
    if a.plot:
        cmp.plot(summary, a.plot)
    if a.json:
        _print_json(summary)
    else:
        print(cmp.format_table(summary))
        if a.plot:
            print("plot written to %s" % a.plot)
    return 0


def cmd_trace_info(a):
    from hbl.info import format_info, trace_info
    from hbl.trace import open_trace
    reader = open_trace(a.trace, fmt=a.fmt, lenient=a.lenient, **_reader_options(a))
    info = trace_info(_progress(reader, "reading"), page_size=a.page_size or 4096,
                      source=getattr(reader, "source", a.trace), skipped=lambda: reader.skipped)
    if a.json:
        _print_json(info)
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
    w = tracemod.writer(a.output + ".part", to, source=getattr(reader, "source", a.input), **opts)
    try:
        for chunk in reader:
            w.write(chunk)
        w.close()
    except BaseException:
        w.f.close()
        os.unlink(a.output + ".part")
        raise
    os.replace(a.output + ".part", a.output)
    msg = "%s: %d requests written (%s)" % (a.output, w.count, to)
    if getattr(w, "dropped", 0):
        msg += "; %d discard/flush requests have no %s spelling and were dropped" % (w.dropped, to)
    if getattr(reader, "skipped", 0):
        msg += "; %d bad lines skipped" % reader.skipped
    print(msg, file=sys.stderr)
    return 0


def parse_duration(text):
    """'10s', '2m', '500ms', '1h' or plain seconds -> seconds."""
    import re
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text or "")
    if not m:
        raise HblError("duration %r: give a number with an optional unit (500ms, 10s, 2m, 1h)" % text)
    return float(m.group(1)) * {"ms": 1e-3, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


def cmd_trace(a):
    import signal
    import time
    from hbl import trace as tracemod
    from hbl.capture import MODE_BIO, Capture
    if (a.duration is None) == (a.count is None):
        raise HblError("give exactly one of --duration and --count")
    duration = parse_duration(a.duration) if a.duration is not None else None
    if a.count is not None and a.count < 1:
        raise HblError("--count must be >= 1")
    to = a.format or tracemod.format_for_path(a.out)
    _check_output_dir(a.out)
    cap = Capture(a.dev, backend=a.backend, fast=a.fast)
    names = ", ".join("%s (%s)" % (p, "logical, bio" if m == MODE_BIO else "device, with latency")
                      for p, (_, m, _) in zip(a.dev, cap.devices))
    w = tracemod.writer(a.out + ".part", to, source="hbl trace " + " ".join(a.dev))
    stop = {"now": False}
    old = signal.signal(signal.SIGINT, lambda *_: stop.__setitem__("now", True))
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__("now", True))
    live = sys.stderr.isatty() and not a.quiet
    if not a.quiet:
        print("tracing %s -> %s (%s, %s); Ctrl-C stops" % (names, a.out, to, a.backend), file=sys.stderr)
    t0 = last = time.time()
    n = nbytes = n_last = b_last = 0
    try:
        for batch in cap.batches(duration=duration, count=a.count, stop=lambda: stop["now"]):
            w.write(batch)
            n += len(batch)
            nbytes += int(batch["length"].sum())
            now = time.time()
            if live and now - last >= 1:
                st = cap.stats()
                print("\r%8.1fs %9.0f events/s %9.1f MiB/s  %d records, lost %d   " % (
                    now - t0, (n - n_last) / (now - last), (nbytes - b_last) / (now - last) / 2 ** 20, n,
                    st["lost"]), end="", file=sys.stderr, flush=True)
                last, n_last, b_last = now, n, nbytes
    finally:
        signal.signal(signal.SIGINT, old)
        st = cap.stats()
        cap.close()
        w.close()
        os.replace(a.out + ".part", a.out)
    elapsed = time.time() - t0
    summary = {"out": a.out, "format": to, "backend": a.backend, "devices": a.dev, "records": w.count,
               "bytes": nbytes, "seconds": elapsed, "events_per_second": n / elapsed if elapsed else 0.0,
               "lost": st["lost"], "lost_ringbuf": st["lost_ringbuf"], "lost_inflight": st["lost_inflight"],
               "interrupted": stop["now"]}
    if a.json:
        _print_json(summary)
    elif not a.quiet:
        if live:
            print(file=sys.stderr)
        print("%s: %d records (%.1f MiB) in %.1f s, %d lost%s" % (
            a.out, w.count, nbytes / 2 ** 20, elapsed, st["lost"], " (interrupted)" if stop["now"] else ""),
            file=sys.stderr)
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
            _print_json(info)
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
    from hbl.sim import policies
    rows = [{"name": n, "description": d} for n, d in policies()]
    if a.json:
        _print_json(rows)
    else:
        for r in rows:
            print("%-11s %s" % (r["name"], r["description"]))
        print("\nparameters: --param NAME=VALUE (unknown names are rejected and listed);"
              "\nPython plugins: --policy python:FILE.py:CLASS (see hbl/plugin.py)")
    return 0


def cmd_devices(a):
    import dataclasses
    from hbl.devices import HSS_CONFIGS, PROFILES
    if a.json:
        _print_json({"profiles": {k: dict(dataclasses.asdict(p), channels=p.parallelism())
                                  for k, p in PROFILES.items()},
                     "hss": {k: {"devices": d, "capacities": c} for k, (d, c) in HSS_CONFIGS.items()}})
        return 0
    for k, p in PROFILES.items():
        extra = ", seek %.1f ms (track %.1f), rotation %.2f ms" % (p.seek_ms, p.track_seek_ms, p.rotation_ms) \
            if p.seek_ms else ""
        print("%s  %-40s read %g us / write %g us, %g / %g MB/s, %d in parallel%s" % (
            k, p.description, p.read_latency_us, p.write_latency_us, p.read_mb_s, p.write_mb_s,
            p.parallelism(), extra))
    print()
    for k, (devs, caps) in HSS_CONFIGS.items():
        print("%-5s %s" % (k, " + ".join("%s (%s)" % (d, "%g%% of footprint" % (c * 100) if c else "unlimited")
                                         for d, c in zip(devs, caps))))
    return 0


def cmd_bench(a):
    from hbl.bench import bench, format_bench
    b = bench(requests=a.requests, policies=a.policies.split(",") if a.policies else None, repeat=a.repeat)
    if a.json:
        _print_json(b)
    else:
        print(format_bench(b))
    return 0


def build_parser():
    p = argparse.ArgumentParser(
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
    s.add_argument("--agent", metavar="FILE", help="learning policies: start from the agents saved in FILE")
    s.add_argument("--save-agent", metavar="FILE", help="learning policies: save the trained agents to FILE")
    _trace_args(s)
    _sim_args(s)
    s.set_defaults(func=cmd_simulate)

    c = sub.add_parser("compare", help="policies x workloads x HSS configs, the papers' table",
                       description="Run every policy on every workload and HSS configuration (in parallel) "
                       "and print average latency normalized to Fast-Only per workload and the mean, "
                       "p99 and migrations.", epilog=EPILOG_TRACES)
    c.add_argument("--hss", default="perf,cost", help="comma-separated HSS configs (default perf,cost)")
    c.add_argument("--policies", default="all", help="comma-separated policies, or all (default)")
    c.add_argument("--jobs", type=int, help="parallel simulations (default: number of cores)")
    c.add_argument("--synthetic-requests", type=int,
                   help="requests per synthetic workload of the default suite (default 1000000)")
    c.add_argument("--json", action="store_true", help="print the full summary as JSON")
    c.add_argument("--output", metavar="FILE", help="also write the full summary as JSON to FILE")
    c.add_argument("--plot", metavar="PNG", help="write a bar chart like the papers' figures")
    c.add_argument("--quiet", action="store_true", help="no progress on stderr")
    c.add_argument("--from-json", metavar="FILE", help="re-print (and re-plot) a comparison saved with --output")
    _trace_args(c, many=True)
    _sim_args(c)
    c.set_defaults(func=cmd_compare)

    t = sub.add_parser("trace-info", help="summarize a trace",
                       description="Requests, reads/writes, bytes, footprint, sequentiality, sizes, "
                       "inter-arrival times and reuse distances of a trace.", epilog=EPILOG_TRACES)
    t.add_argument("trace")
    t.add_argument("--json", action="store_true")
    t.add_argument("--page-size", type=int, help="page size for footprint and reuse (default 4096)")
    _trace_args(t)
    t.set_defaults(func=cmd_trace_info)

    v = sub.add_parser("convert", help="convert a trace (or generate a synthetic one)",
                       description="Convert between trace formats. Output format from --to or the "
                       "file name: .csv = msrc, .iolog/.fio = fio iolog v3, anything else = native "
                       "(memory-mapped, fastest to reload).", epilog=EPILOG_TRACES)
    v.add_argument("input")
    v.add_argument("output")
    v.add_argument("--to", choices=["native", "msrc", "fio"], help="output format")
    v.add_argument("--fio-file", help="fio format: device or file name written in the iolog")
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
    tr.add_argument("--count", type=int, help="stop after this many records")
    tr.add_argument("--out", required=True, help="output file")
    tr.add_argument("--format", choices=["native", "msrc", "fio"],
                    help="output format (default from the file name: .csv msrc, .iolog fio, else native)")
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
        vp.add_argument("--timeout", type=int, default=1200, help="seconds before QEMU is killed (default 1200)")
        vp.add_argument("--fast-mb", type=int, default=512, help="NVMe size (default 512)")
        vp.add_argument("--slow-mb", type=int, default=1024, help="HDD size (default 1024)")
        vp.add_argument("--extra", type=int, default=0, choices=[0, 1, 2],
                        help="SATA-SSD-like virtio disks to add (/dev/vdb, /dev/vdc; default 0)")
        vp.add_argument("--out", help="keep the guest's /out here (default: a new temporary folder)")
        vp.add_argument("--quiet", action="store_true")
    vm.set_defaults(func=cmd_vm)

    from hbl.live.cli import add_parsers as live_parsers
    live_parsers(sub)

    po = sub.add_parser("policies", help="list policies")
    po.add_argument("--json", action="store_true")
    po.set_defaults(func=cmd_policies)

    d = sub.add_parser("devices", help="list device profiles and HSS configurations")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_devices)

    b = sub.add_parser("bench", help="simulator throughput per policy on this machine",
                       description="Simulator throughput (requests/s) per policy on a synthetic zipf trace.")
    b.add_argument("--requests", type=int, default=1_000_000, help="trace length (default 1000000)")
    b.add_argument("--policies", help="comma-separated policies (default: all)")
    b.add_argument("--repeat", type=int, default=3, help="runs per policy, best kept (default 3)")
    b.add_argument("--json", action="store_true")
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
