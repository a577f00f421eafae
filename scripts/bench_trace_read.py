#!/usr/bin/env python3
"""Size and read speed of one trace in the formats hbl reads: packed (.hblz), gzipped MSRC CSV
(the shipped slices' format) and native, on this machine.

Each file is written once (outside the timing) into a temporary directory; a read is a full
pass of open_trace over it (the chunks a simulation consumes), best of --repeat.

    scripts/bench_trace_read.py workload:fio-zipf
    scripts/bench_trace_read.py hbl/data/traces/workloads/pgbench.hblz --quantum-ns 1
"""
import argparse
import os
import sys
import tempfile
import time

from hbl import record
from hbl.trace.workloads import PACK_QUANTA
from hbl.trace import load, open_trace, writer


def read_rate(path, repeat):
    """(requests/s of wall time, requests/s of this process's CPU time, requests), each the best of
    `repeat` full passes: on a shared machine the CPU time is the figure an idle core would give."""
    wall = cpu = None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        n = sum(len(chunk) for chunk in open_trace(path))
        t, c = time.perf_counter() - t, time.process_time() - c
        wall, cpu = min(wall or t, t), min(cpu or c, c)
    return n / wall, n / cpu, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--quantum-ns", type=int, help="the packed file's time and latency quantum "
                    "(default: as the shipped captures, %(time_quantum_ns)d ns and %(latency_quantum_ns)d ns)"
                    % PACK_QUANTA)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    data, reader = load(a.trace)
    # MSRC keeps reads and writes only: every format gets the same requests, so the rates compare
    data = data[(data["op"] == record.READ) | (data["op"] == record.WRITE)]
    print("%s: %d reads and writes (%s)" % (a.trace, len(data), getattr(reader, "source", "")))
    with tempfile.TemporaryDirectory() as tmp:
        quanta = dict(time_quantum_ns=a.quantum_ns, latency_quantum_ns=a.quantum_ns) if a.quantum_ns else PACK_QUANTA
        files = [("packed (.hblz, quanta %(time_quantum_ns)d/%(latency_quantum_ns)d ns)" % quanta, "t.hblz",
                  "packed", quanta),
                 ("msrc CSV, gzip (.csv.gz)", "t.csv.gz", "msrc", dict(compress=True)),
                 ("native (.hbltrace)", "t.hbltrace", "native", {})]
        for label, name, fmt, opts in files:
            path = os.path.join(tmp, name)
            t = time.perf_counter()
            with writer(path, fmt, source=a.trace, **opts) as w:
                w.write(data)
            wrote = time.perf_counter() - t
            wall, cpu, n = read_rate(path, a.repeat)
            print("  %-38s %6.2f bytes/request  read %7.2f M requests/s (%7.2f per CPU second)  (write %.1f s)" % (
                label, os.path.getsize(path) / n, wall / 1e6, cpu / 1e6, wrote))
    print("machine: %d cores, load %.1f" % (os.cpu_count(), os.getloadavg()[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
