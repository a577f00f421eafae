"""What loading a live device's table costs the guest kernel (inside the VM):

    hbl vm run -- python3 /hbl/vm/guest/bench_table_load.py [TARGETS [REPEATS]]

A linear table of TARGETS targets (default 1518, what the live bench's mapping
holds: a target per run of extents) over the NVMe and the HDD, packed for
TABLE_LOAD, loaded into a scratch dm device and resumed, REPEATS times (default 15),
with the members named by path and by MAJOR:MINOR; then a 17-target table (the
hold's view of a batch of 8 moves).  Prints the medians.  Writes no block device:
the scratch device is created, loaded and removed, never opened for I/O.
"""
import os
import sys
import time

sys.path.insert(0, "/hbl")
import numpy as np  # noqa: E402
from dmsetup import LinearRuns  # noqa: E402
from dmsetup.ioctl import Control  # noqa: E402

MEMBERS = ["/dev/nvme0n1", "/dev/vda"]
NAME = "hbl-table-load-bench"


def fragmented(argv):
    """TARGETS and REPEATS from argv, /dev/mapper/control, the members as MAJOR:MINOR, and a mapping
    of TARGETS 1 MiB extents each on its own run: (n, repeats, control, numbers, dev, offset, rng)."""
    n = int(argv[0]) if argv else 1518
    repeats = int(argv[1]) if len(argv) > 1 else 15
    numbers = ["%d:%d" % (os.major(os.stat(p).st_rdev), os.minor(os.stat(p).st_rdev)) for p in MEMBERS]
    rng = np.random.default_rng(1)
    return n, repeats, Control(), numbers, rng.integers(0, 2, n), rng.integers(1, 400, n) * 2048, rng


def main(argv):
    n, repeats, ctl, numbers, dev, off, _ = fragmented(argv)
    if NAME in ctl.list():
        ctl.remove(NAME)
    ctl.create(NAME)
    try:
        for label, names in (("by path", MEMBERS), ("by MAJOR:MINOR", numbers)):
            t = LinearRuns(np.full(n, 2048), dev, off, names).validate()
            ts = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                p = ctl.prepare(t)
                t1 = time.perf_counter()
                ctl.load(NAME, p)
                t2 = time.perf_counter()
                ctl.resume(NAME)
                ts.append((t1 - t0, t2 - t1, time.perf_counter() - t2))
            print("%d targets, members %-15s pack %5.2f ms  load %5.2f ms  resume %5.2f ms  (median of %d)"
                  % ((n, label) + tuple(np.median(np.array(ts) * 1e3, 0)) + (repeats,)))
        small = LinearRuns([2048] * 17, [0, 1] * 8 + [0], [2048] * 17, numbers).validate()
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            ctl.load(NAME, ctl.prepare(small))
            ctl.resume(NAME)
            ts.append(time.perf_counter() - t0)
        print("17 targets, members by MAJOR:MINOR: pack, load and resume %.2f ms (median of %d)"
              % (1e3 * np.median(ts), repeats))
    finally:
        ctl.remove(NAME)


if __name__ == "__main__":
    main(sys.argv[1:])
