"""hbl trace-info, convert and trace: a trace's figures, its conversion, a live capture."""
import argparse
import os
import sys

from hbl.cli.options import EPILOG_TRACES, check_output_dir, reader_options, trace_args
from hbl.cmdline import page_size, parse_duration, print_json, whole
from hbl.errors import HblError

#: The names open_trace reads as something else than a file (hbl/trace/__init__.py)
TRACE_SCHEMES = ("bundled:", "synth:", "workload:", "apps:")


def add_parsers(sub):
    _add_trace_info(sub)
    _add_convert(sub)
    _add_trace(sub)


def _add_trace_info(sub):
    """hbl trace-info."""
    t = sub.add_parser("trace-info", help="summarize a trace",
                       description="Requests, reads/writes, bytes, footprint, sequentiality, sizes, "
                       "inter-arrival times and reuse distances of a trace.", epilog=EPILOG_TRACES)
    t.add_argument("trace", help="a trace file or name (below)")
    t.add_argument("--json", action="store_true", help="print the figures as JSON")
    t.add_argument("--quiet", action="store_true", help="no progress on stderr")
    t.add_argument("--page-size", type=page_size, help="page size for footprint and reuse (default 4096)")
    trace_args(t)
    t.set_defaults(func=cmd_trace_info)


def _add_convert(sub):
    """hbl convert."""
    v = sub.add_parser("convert", help="convert a trace (or generate a synthetic one)",
                       description="Convert between trace formats. Output format from --to or the "
                       "file name: .csv = msrc, .iolog/.fio = fio iolog v3, .hblz = packed (zstd-compressed "
                       "columns, checksummed, about 3 bytes a request), anything else = native "
                       "(memory-mapped, fastest to reload).", epilog=EPILOG_TRACES)
    v.add_argument("input", help="a trace file or name (below)")
    v.add_argument("output", help="the file to write (its name gives the format, as above)")
    v.add_argument("--to", choices=["native", "packed", "msrc", "fio"], help="output format")
    v.add_argument("--quantum-ns", type=whole(1, 1 << 40), metavar="NS",
                   help="packed format: keep times and latencies in multiples of NS (default 1, lossless)")
    v.add_argument("--fio-file", help="fio format: device or file name written in the iolog")
    v.add_argument("--json", action="store_true", help="print a JSON summary")
    v.add_argument("--quiet", action="store_true", help="no progress on stderr")
    trace_args(v)
    v.set_defaults(func=cmd_convert)


def _add_trace(sub):
    """hbl trace."""
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


def check_not_a_trace_name(out):
    """A trace written to bundled:X (synth:, workload:, apps:) could not be read back: the name is the other trace."""
    if out.startswith(TRACE_SCHEMES):
        raise HblError("%s: a trace name, not a file name: the file written would be read back as the named "
                       "trace; give a path, e.g. ./%s.hbltrace"
                       % (out, out.split(":", 1)[1].split(":")[0].split("@")[0].replace("+", "-")))


def cmd_trace_info(a):
    from hbl.trace.info import format_info, trace_info
    from hbl.trace import open_trace
    reader = open_trace(a.trace, fmt=a.fmt, lenient=a.lenient, **reader_options(a))
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
    reader = tracemod.open_trace(a.input, fmt=a.fmt, lenient=a.lenient, **reader_options(a))
    to = a.to or tracemod.format_for_path(a.output)
    check_not_a_trace_name(a.output)
    if any(os.path.realpath(a.output) == os.path.realpath(f) for f in tracemod.input_files(a.input)):
        raise HblError("%s: refusing to overwrite the input" % a.output)     # a mix's tenants and a part's capture too
    check_output_dir(a.output)
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
    check_not_a_trace_name(a.out)
    check_output_dir(a.out)
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
               "lost_missed": st["lost_missed"],
               "interrupted": stop["now"]}
    if a.json:
        print_json(summary)
    elif not a.quiet:
        print("%s: %d records (%.1f MiB) in %.1f s, %d lost%s" % (
            a.out, w.count, nbytes / 2 ** 20, elapsed, st["lost"], " (interrupted)" if stop["now"] else ""),
            file=sys.stderr)
    return 0
