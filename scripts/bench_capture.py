#!/usr/bin/env python3
"""Capture overhead, side by side in one run (root).

fio 4 KiB random reads at queue depth 32 on a loop device over a file in the
page cache, for --seconds each, with: no capture; hbl's libbpf capture; hbl's
bcc capture; bcc's own biosnoop (the reference users know).  For each: fio
IOPS, records captured per second, lost records, and CPU used by the
consumer process (user + system seconds per second of run).

    sudo .venv/bin/python scripts/bench_capture.py [--seconds 20] [--json]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HBL = [sys.executable, "-m", "hbl.cli"]


def cpu_seconds(pid):
    """user + system CPU seconds of a process (and its reaped children)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return sum(int(x) for x in fields[11:15]) / tick


def fio(dev, seconds):
    out = subprocess.run(["fio", "--name=bench", "--filename=" + dev, "--rw=randread", "--bs=4k",
                          "--iodepth=32", "--ioengine=libaio", "--direct=1", "--time_based",
                          "--runtime=%d" % seconds, "--output-format=json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["jobs"][0]["read"]["iops"]


def run_case(name, dev, seconds, consumer_cmd, work):
    if consumer_cmd is None:
        return {"case": name, "fio_iops": fio(dev, seconds)}
    p = subprocess.Popen(consumer_cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)                       # attach (bcc compiles first)
    c0 = cpu_seconds(p.pid)
    t0 = time.time()
    iops = fio(dev, seconds)
    elapsed = time.time() - t0
    c1 = cpu_seconds(p.pid)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    row = {"case": name, "fio_iops": iops, "consumer_cpu": (c1 - c0) / elapsed}
    if name.startswith("hbl"):
        s = json.loads(out)
        row.update(records=s["records"], lost=s["lost"], records_per_second=s["records"] / s["seconds"])
    else:
        lines = max(0, out.count("\n") - 1)   # biosnoop prints a header, then a line per I/O
        row.update(records=lines, lost=None, records_per_second=lines / elapsed)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_capture: needs root")
    work = tempfile.mkdtemp(prefix="hbl-bench-")
    img = os.path.join(work, "disk.img")
    with open(img, "wb") as f:
        f.write(b"\0" * (256 << 20))   # written, so its pages are in the page cache
    dev = subprocess.run(["losetup", "-f", "--show", img], capture_output=True, text=True,
                         check=True).stdout.strip()
    rows = []
    try:
        fio(dev, 2)   # warm the page cache
        trace = lambda backend: HBL + ["trace", "--dev", dev, "--duration", "%ds" % (a.seconds + 30), "--out",
                                        os.path.join(work, backend + ".bin"), "--backend", backend, "--json",
                                        "--quiet"]
        cases = [("none", None), ("hbl libbpf", trace("libbpf")), ("hbl bcc", trace("bcc"))]
        biosnoop = shutil.which("biosnoop-bpfcc")
        if biosnoop:
            cases.append(("bcc biosnoop", [biosnoop]))
        for name, cmd in cases:
            print("running: %s" % name, file=sys.stderr)
            rows.append(run_case(name, dev, a.seconds, cmd, work))
    finally:
        subprocess.run(["losetup", "-d", dev])
        shutil.rmtree(work, ignore_errors=True)
    base = rows[0]["fio_iops"]
    for r in rows:
        r["iops_vs_none"] = r["fio_iops"] / base
    if a.json:
        json.dump({"seconds": a.seconds, "rows": rows}, sys.stdout, indent=1)
        print()
        return
    print("fio 4k randread qd32, loop device over a page-cached file, %d s per case" % a.seconds)
    print("%-14s %12s %8s %14s %10s %12s" % ("case", "fio IOPS", "vs none", "records/s", "lost", "consumer CPU"))
    for r in rows:
        print("%-14s %12.0f %7.0f%% %14s %10s %12s" % (
            r["case"], r["fio_iops"], 100 * r["iops_vs_none"],
            "%.0f" % r["records_per_second"] if "records_per_second" in r else "-",
            r.get("lost") if r.get("lost") is not None else "-",
            "%.0f%%" % (100 * r["consumer_cpu"]) if "consumer_cpu" in r else "-"))


if __name__ == "__main__":
    main()
