"""The capture's tracepoints attached and detached over and over while direct writes flow
(what the crash test does as it kills and restarts controllers): prints how many attach
cycles ran, or the guest dies of the soft-lockup panic.

    hbl vm run -- python3 /hbl/vm/guest/stress_tracepoints.py [--seconds S] [--unpin]

The guest's init holds each block tracepoint with two idle ftrace probes, so an attach or
detach patches no kernel code; --unpin removes them first, to show why they are there:
under TCG a vCPU running through submit_bio's tracepoint call site while it is patched
livelocks (measured: unpinned, 3 runs of 3 locked up within 40 s; pinned by the init,
789 cycles in 300 s)."""
import argparse
import mmap
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, "/hbl")
TRACING = "/sys/kernel/tracing"
EVENTS = ("block_rq_issue", "block_rq_complete", "block_bio_queue", "block_bio_complete", "block_bio_remap")


def writer(path, seconds, seed):
    rng = random.Random(seed)
    fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    size = os.lseek(fd, 0, os.SEEK_END)
    buf = mmap.mmap(-1, 4096)
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        os.pwritev(fd, [buf], rng.randrange(size // 4096) * 4096)
        n += 1
    print("writer %s: %d writes" % (path, n), flush=True)


def unpin():
    for base in (TRACING, TRACING + "/instances/hbl-pin"):
        for ev in EVENTS:
            path = "%s/events/block/%s/enable" % (base, ev)
            if os.path.exists(path):
                with open(path, "w") as f:
                    f.write("0")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--unpin", action="store_true", help="remove the init's idle probes first")
    ap.add_argument("--writer", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.writer:
        return writer(a.writer[0], float(a.writer[1]), int(a.writer[2]))
    from dmsetup import Device, Linear, Table, backend
    from hbl.capture import Capture
    if a.unpin:
        unpin()
    dm = backend()
    size = int(open("/sys/block/nvme0n1/size").read())
    d = Device("stress", dm).create(Table([Linear(size, "/dev/nvme0n1", 0)]))
    ws = [subprocess.Popen([sys.executable, __file__, "--writer", p, str(a.seconds), str(i)])
          for i, p in enumerate([d.path, "/dev/vda"])]
    rng = random.Random(1)
    end = time.time() + a.seconds
    cycles = 0
    while time.time() < end:
        cap = Capture([d.path, "/dev/vda"], fast=True, batch=2048)      # bio_queue and rq_complete
        time.sleep(rng.uniform(0, 0.05))
        cap.poll(0)
        cap.close()
        cycles += 1
        time.sleep(rng.uniform(0, 0.02))
    for w in ws:
        w.wait()
    d.remove()
    print("attach cycles: %d in %.0f s%s" % (cycles, a.seconds, " (unpinned)" if a.unpin else ""), flush=True)


if __name__ == "__main__":
    main()
