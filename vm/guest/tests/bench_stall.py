"""Suspend-to-resume stall of one table reload, for tables of 1k, 10k and 100k
extents, through the ioctl interface and through the dmsetup command (inside the VM).
Writes /out/stall.json."""
import json
import statistics
import sys
import time

sys.path.insert(0, "/hbl")
from dmsetup import Linear, Table, backend, device  # noqa: E402

FAST, SLOW = "/dev/nvme0n1", "/dev/vda"
EXT = 8   # 4 KiB extents, so 100k of them fit on the emulated devices


def table(n, shift=0):
    return Table([Linear(EXT, FAST if (i + shift) % 2 else SLOW, ((i + shift) % n) * EXT) for i in range(n)])


def measure(kind, n, repeat):
    dm = backend(kind)
    out = {"load_ms": [], "stall_ms": []}
    with device("hbl-stall-%s" % kind, table(n), dm) as d:
        for r in range(repeat):
            t = table(n, shift=r + 1)
            t0 = time.perf_counter()
            d.load(t)
            t1 = time.perf_counter()
            d.suspend()
            d.resume()
            t2 = time.perf_counter()
            out["load_ms"].append(1000 * (t1 - t0))
            out["stall_ms"].append(1000 * (t2 - t1))
    return {k: statistics.median(v) for k, v in out.items()}


def main():
    res = []
    for n in (1000, 10000, 100000):
        for kind in ("ioctl", "command"):
            r = measure(kind, n, 5 if n < 100000 else 3)
            r.update(extents=n, interface=kind)
            res.append(r)
            print("%7d extents %-8s load %9.1f ms  suspend-to-resume %8.1f ms" % (
                n, kind, r["load_ms"], r["stall_ms"]), flush=True)
    with open("/out/stall.json", "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
