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

--bio: the same on a bio-based device instead (a zram device of its own: the host has no
device-mapper), whose bios are recorded at queue (MODE_BIO, how a dm device is traced) or, as
the live controller traces a member that is a dm device, at completion (MODE_BIO_DONE: the
bio kept from block_bio_queue to block_bio_complete); --before DIR adds the queue case with
the capture of another checkout (DIR, built, with this file copied to its scripts/: the copy
loads DIR's capture; for a checkout older than d34ecbb, this file as of 9807308, which names
the loader as it was named then), to compare with the code before a change.
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


def consume(mode, dev):
    """A capture of `dev` in `mode` (MODE_BIO or MODE_BIO_DONE) through the libbpf loader of the
    checkout this file is in, until SIGINT; then a summary line as `hbl trace --json` prints."""
    sys.path.insert(0, ROOT)
    from hbl.capture import LibbpfLoader, resolve_device
    devt, _, name = resolve_device(dev)
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    loader = LibbpfLoader([(devt, int(mode), name)], remaps=False, extent_shift=0, ringbuf_bytes=0)
    t0, n = time.time(), 0
    while not stop:
        n += len(loader.poll(100, 65536))
    print(json.dumps({"requests": n, "lost": loader.stats()["lost"], "seconds": time.time() - t0}))
    loader.close()


def zram_device(size):
    """A zram device of our own (hot-added; zram_remove removes it): the host's one bio-based block
    device (it has no device-mapper), whose bios the kernel traces to completion.  (number, path);
    tests/test_capture.py's zram fixture too."""
    n = int(open("/sys/class/zram-control/hot_add").read())
    try:
        with open("/sys/block/zram%d/disksize" % n, "w") as f:
            f.write(str(size))
    except BaseException:
        zram_remove(n)
        raise
    dev = "/dev/zram%d" % n
    for _ in range(100):
        if os.path.exists(dev):
            break
        time.sleep(0.05)
    return n, dev


def zram_remove(n):
    with open("/sys/block/zram%d/reset" % n, "w") as f:
        f.write("1")
    with open("/sys/class/zram-control/hot_remove", "w") as f:
        f.write(str(n))


def bio_cases(a, dev):
    from hbl.capture import MODE_BIO, MODE_BIO_DONE
    me = os.path.abspath(__file__)
    cases = [("none", None),
             ("hbl bio at queue", [sys.executable, me, "--consume", str(MODE_BIO), dev]),
             ("hbl bio at completion", [sys.executable, me, "--consume", str(MODE_BIO_DONE), dev])]
    if a.before:
        cases.insert(2, ("hbl bio at queue, before", [sys.executable, os.path.join(a.before, "scripts",
                                                                                   os.path.basename(me)),
                                                      "--consume", str(MODE_BIO), dev]))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    ap.add_argument("--bio", action="store_true", help="a bio-based device (zram), at queue and at completion")
    ap.add_argument("--before", metavar="DIR", help="with --bio: also the queue case with DIR's capture")
    ap.add_argument("--consume", nargs=2, metavar=("MODE", "DEV"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.consume:
        return consume(*a.consume)
    if os.geteuid() != 0:
        sys.exit("bench_capture: needs root")
    work = tempfile.mkdtemp(prefix="hbl-bench-")
    rows = []
    if a.bio:
        zram, dev = zram_device(256 << 20)
        release = lambda: zram_remove(zram)
    else:
        img = os.path.join(work, "disk.img")
        with open(img, "wb") as f:
            f.write(b"\0" * (256 << 20))   # written, so its pages are in the page cache
        dev = subprocess.run(["losetup", "-f", "--show", img], capture_output=True, text=True,
                             check=True).stdout.strip()
        release = lambda: subprocess.run(["losetup", "-d", dev])
    try:
        if a.bio:
            subprocess.run(["dd", "if=/dev/urandom", "of=" + dev, "bs=1M", "count=256", "oflag=direct"],
                           capture_output=True, check=True)        # read from, not holes
            cases = bio_cases(a, dev)
        else:
            fio(dev, 2)   # warm the page cache
            trace = lambda backend: HBL + ["trace", "--dev", dev, "--duration", "%ds" % (a.seconds + 30), "--out",
                                            os.path.join(work, backend + ".bin"), "--backend", backend, "--json",
                                            "--quiet"]
            cases = [("none", None), ("hbl libbpf", trace("libbpf")),
                     ("hbl libbpf fast", trace("libbpf") + ["--fast"]), ("hbl bcc", trace("bcc"))]
            biosnoop = shutil.which("biosnoop-bpfcc")
            if biosnoop:
                cases.append(("bcc biosnoop", [biosnoop]))
        runs = {name: [] for name, _ in cases}
        for k in range(a.rounds):
            for name, cmd in cases:
                print("round %d/%d: %s" % (k + 1, a.rounds, name), file=sys.stderr)
                runs[name].append(run_case(name, dev, a.seconds, cmd))
    finally:
        release()
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
            json.dump({"seconds": a.seconds, "rounds": a.rounds, "device": "zram" if a.bio else "loop",
                       "rows": rows}, f, indent=1)
    print("fio 4k randread qd32, %s, %d s per case, median of %d interleaved rounds" % (
        "a zram device (bio-based)" if a.bio else "loop device over a page-cached file", a.seconds, a.rounds))
    print("%-26s %12s %8s %14s %10s %12s" % ("case", "fio IOPS", "vs none", "records/s", "lost", "consumer CPU"))
    for r in rows:
        if "failed" in r:
            print("%-26s could not run here: %s" % (r["case"], r["failed"]))
            continue
        print("%-26s %12.0f %7.0f%% %14s %10s %12s" % (
            r["case"], r["fio_iops"], 100 * r["iops_vs_none"],
            "%.0f" % r["records_per_second"] if "records_per_second" in r else "-",
            r.get("lost") if r.get("lost") is not None else "-",
            "%.0f%%" % (100 * r["consumer_cpu"]) if "consumer_cpu" in r else "-"))


if __name__ == "__main__":
    main()
