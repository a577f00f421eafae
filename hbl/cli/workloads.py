"""hbl workloads: real applications' block I/O, their recipes and captures."""
import sys

from hbl.cli.options import check_output_dir
from hbl.cmdline import parse_duration, print_json
from hbl.errors import HblError


def add_parsers(sub):
    """hbl workloads list, summary, slice, pack and capture."""
    wl = sub.add_parser("workloads", help="real applications' block I/O: recipes and captures (root)",
                        description="Run a real application (PostgreSQL, MariaDB, RocksDB, SQLite, a build; fio as "
                        "the synthetic control) on a scratch file system on a loop device and capture its block "
                        "I/O into ~/.cache/hbl/workloads/NAME.hbltrace, used as the trace workload:NAME (where there is "
                        "none, workload:NAME is the capture shipped with hbl, hbl/data/traces/workloads/NAME.hblz).")
    wsub = wl.add_subparsers(dest="workloads_command", metavar="ACTION", required=True)
    wsub.add_parser("list", help="the recipes and whether each is captured").add_argument(
        "--json", action="store_true", help="print the recipes as JSON")
    ws = wsub.add_parser("summary", help="trace-info figures of every cached capture (results/workloads/workloads.*)")
    ws.add_argument("--json", action="store_true", help="print the figures as JSON")
    wsub.add_parser("slice", help="write the first 20,000 requests of a cached capture to hbl/data/traces/apps/"
                    ).add_argument("name", help="a recipe captured here (hbl workloads list)")
    wsub.add_parser("pack", help="write a cached capture, packed, to hbl/data/traces/workloads/ (what "
                    "workload:NAME reads where it was not captured)").add_argument(
                        "name", help="a recipe captured here (hbl workloads list)")
    wc = wsub.add_parser("capture", help="run a recipe and capture its block I/O (root)")
    wc.add_argument("name", help="recipe (hbl workloads list)")
    wc.add_argument("--duration", help="capture at most this long (default 30m)")
    wc.add_argument("--requests", type=int, default=1_000_000, help="stop after about this many requests "
                    "(default 1000000)")
    wc.add_argument("--out", help="trace file (default ~/.cache/hbl/workloads/NAME.hbltrace)")
    wl.set_defaults(func=cmd_workloads)


def cmd_workloads(a):
    from hbl.trace import workloads as wl
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
        check_output_dir(a.out)
    meta = wl.capture(a.name, duration=duration, requests=a.requests, out=a.out)
    from hbl.trace.info import format_info, trace_info
    from hbl.trace import open_trace
    print("%s: %d requests in %.0f s of capture (%.0f s in all), %d lost records%s" % (
        meta["trace"], meta["requests"], meta["capture_seconds"], meta["total_seconds"], meta["lost"],
        " (interrupted)" if meta["interrupted"] else ""), file=sys.stderr)
    print(format_info(trace_info(open_trace(meta["trace"]))))
    if meta["lost"]:
        print("hbl: error: the capture lost %d records: the trace is incomplete" % meta["lost"], file=sys.stderr)
        return 1
    return 0
