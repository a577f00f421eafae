#!/usr/bin/env python3
"""Capture overhead, side by side in one run (root).

fio 4 KiB random reads at queue depth 32 on a loop device over a file in the
page cache, for --seconds each, with: no capture; hbl's libbpf capture (issue
and completion, the default; and --fast, completion only); hbl's bcc capture;
bcc's own biosnoop (the reference users know).  For each: fio
IOPS, records captured per second, lost records, and CPU used by the
consumer process (user + system seconds per second of run).  The cases run
interleaved, --rounds times, and the median of each is reported, because a
shared machine drifts more between minutes than the effects measured here.

    sudo .venv/bin/python scripts/bench_capture.py [--seconds 20] [--rounds 3] [--json FILE]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
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


def run_case(name, dev, seconds, consumer_cmd):
    if consumer_cmd is None:
        return {"case": name, "fio_iops": fio(dev, seconds)}
    p = subprocess.Popen(consumer_cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)                       # attach (bcc compiles first)
    if p.poll() is not None:            # the consumer could not start here
        err = p.stderr.read().strip().splitlines()
        return {"case": name, "failed": err[-1] if err else "exited with %d" % p.returncode}
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
        row.update(records=s["requests"], lost=s["lost"], records_per_second=s["requests"] / s["seconds"])
    else:
        lines = max(0, out.count("\n") - 1)   # biosnoop prints a header, then a line per I/O
        if not lines:
            msg = [l for l in err.strip().splitlines() if l.strip()]
            return {"case": name, "failed": "captured nothing" + (": " + msg[-1] if msg else "")}
        row.update(records=lines, lost=None, records_per_second=lines / elapsed)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
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
        cases = [("none", None), ("hbl libbpf", trace("libbpf")), ("hbl libbpf fast", trace("libbpf") + ["--fast"]),
                 ("hbl bcc", trace("bcc"))]
        biosnoop = shutil.which("biosnoop-bpfcc")
        if biosnoop:
            cases.append(("bcc biosnoop", [biosnoop]))
        runs = {name: [] for name, _ in cases}
        for k in range(a.rounds):
            for name, cmd in cases:
                print("round %d/%d: %s" % (k + 1, a.rounds, name), file=sys.stderr)
                runs[name].append(run_case(name, dev, a.seconds, cmd))
    finally:
        subprocess.run(["losetup", "-d", dev])
        shutil.rmtree(work, ignore_errors=True)
    for name, results in runs.items():
        ok = [r for r in results if "failed" not in r]
        if not ok:
            rows.append(results[0])
            continue
        row = {"case": name, "rounds": len(ok)}
        for key in ok[0]:
            if key != "case" and ok[0][key] is not None:
                row[key] = statistics.median(r[key] for r in ok)
            elif key != "case":
                row[key] = None
        row["fio_iops_all"] = [r["fio_iops"] for r in ok]
        rows.append(row)
    base = rows[0]["fio_iops"]
    for r in rows:
        if "fio_iops" in r:
            r["iops_vs_none"] = r["fio_iops"] / base
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seconds": a.seconds, "rounds": a.rounds, "rows": rows}, f, indent=1)
    print("fio 4k randread qd32, loop device over a page-cached file, %d s per case, median of %d "
          "interleaved rounds" % (a.seconds, a.rounds))
    print("%-16s %12s %8s %14s %10s %12s" % ("case", "fio IOPS", "vs none", "records/s", "lost", "consumer CPU"))
    for r in rows:
        if "failed" in r:
            print("%-16s could not run here: %s" % (r["case"], r["failed"]))
            continue
        print("%-16s %12.0f %7.0f%% %14s %10s %12s" % (
            r["case"], r["fio_iops"], 100 * r["iops_vs_none"],
            "%.0f" % r["records_per_second"] if "records_per_second" in r else "-",
            r.get("lost") if r.get("lost") is not None else "-",
            "%.0f%%" % (100 * r["consumer_cpu"]) if "consumer_cpu" in r else "-"))


if __name__ == "__main__":
    main()
